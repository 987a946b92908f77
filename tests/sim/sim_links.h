// A client lane's links (client/lane.h) over the simulated network: replica i
// is world node i. Each frame of a message travels as a network message of its
// own, so the network may lose or reorder frames that ZeroMQ delivers together
// (harsher than the real transport, never kinder); a message to a replica
// that is down is not sent, as ZeroMQ's immediate option refuses it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "client/lane.h"
#include "tests/sim/replica_set.h"
#include "tests/sim/world.h"

namespace palisade::sim {

class SimLinks final : public client::ReplicaLinks {
 public:
  // `node`: the client's world node.
  SimLinks(World& world, const ReplicaSet& replicas, int node) : world_(world), replicas_(replicas), node_(node) {}

  bool send(size_t replica, const std::vector<std::string>& frames) override {
    if (!replicas_.up(static_cast<int>(replica))) return false;
    for (const std::string& frame : frames) {
      if (observe) observe(replica, frame);
      world_.send(node_, static_cast<int>(replica), frame);
    }
    return true;
  }

  // Sees every frame sent, before the network does.
  std::function<void(size_t replica, const std::string& frame)> observe;

 private:
  World& world_;
  const ReplicaSet& replicas_;
  int node_;
};

// The replicas' endpoints as a lane names them (in wrong_cluster errors).
inline std::vector<std::string> sim_endpoints(int replicas) {
  std::vector<std::string> out;
  for (int i = 0; i < replicas; ++i) out.push_back("sim://replica" + std::to_string(i));
  return out;
}

}  // namespace palisade::sim
