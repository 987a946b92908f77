// A client lane's links (client/lane.h) over the simulated network: replica i
// is world node i. Each frame of a message travels as a network message of its
// own, so the network may lose or reorder frames that ZeroMQ delivers together
// (harsher than the real transport, never kinder); a message to a replica
// that is down is not sent, as ZeroMQ's immediate option refuses it.
#pragma once

#include <functional>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

#include "client/lane.h"
#include "client/replica_view.h"
#include "tests/sim/replica_set.h"
#include "tests/sim/world.h"

namespace palisade::sim {

class SimLinks final : public client::ReplicaLinks {
 public:
  // `node`: the client's world node. `replica_nodes`: the world node of each
  // replica the lane names, by its index; empty: replica i is node i.
  SimLinks(World& world, const ReplicaSet& replicas, int node, std::vector<int> replica_nodes = {})
      : world_(world), replicas_(replicas), node_(node), replica_nodes_(std::move(replica_nodes)) {}

  bool send(size_t replica, const std::vector<std::string>& frames) override {
    const int to = replica_nodes_.empty() ? static_cast<int>(replica) : replica_nodes_[replica];
    if (!replicas_.up(to)) return false;
    for (const std::string& frame : frames) {
      if (observe) observe(replica, frame);
      world_.send(node_, to, frame);
    }
    return true;
  }

  // Sees every frame sent, before the network does.
  std::function<void(size_t replica, const std::string& frame)> observe;

 private:
  World& world_;
  const ReplicaSet& replicas_;
  int node_;
  std::vector<int> replica_nodes_;
};

// The replicas' endpoints as a lane names them (in wrong_cluster errors), and
// as replica set records do (tests/sim/replacer.h).
inline std::string sim_endpoint(int replica) { return "sim://replica" + std::to_string(replica); }
inline std::vector<std::string> sim_endpoints(int replicas) {
  std::vector<std::string> out;
  for (int i = 0; i < replicas; ++i) out.push_back(sim_endpoint(i));
  return out;
}
// The world node of the replica an endpoint names.
inline int sim_replica_node(const std::string& endpoint) {
  return std::stoi(endpoint.substr(std::string_view("sim://replica").size()));
}

// Takes into `view` the newest replica set that the certificates the lane's
// replicas handed back give (client::next_view), as QuorumStore does; false
// when none is newer.
inline bool take_newer_view(client::Lane& lane, client::ReplicaView& view) {
  bool moved = false;
  for (const std::string& certificate : lane.coordinator().take_newer_configs()) {
    auto next = client::next_view(view, certificate, nullptr);
    if (!next.is_ok()) continue;
    view = std::move(next).value();
    moved = true;
  }
  return moved;
}

}  // namespace palisade::sim
