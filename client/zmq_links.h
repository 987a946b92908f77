// A lane's links in the client (client/lane.h): a DEALER socket to every
// replica. The store's I/O thread polls them and hands what arrives to the lane.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "client/lane.h"
#include "palisade/credentials.h"

namespace palisade::client {

class ZmqLinks final : public ReplicaLinks {
 public:
  // `ctx` must outlive the links.
  // Over CURVE when `credentials` are set.
  ZmqLinks(zmq::context_t& ctx, const std::vector<std::string>& endpoints,
           const std::optional<Credentials>& credentials);

  bool send(size_t replica, const std::vector<std::string>& frames) override;
  // Appends a poll item per socket, in replica order.
  void add_poll_items(std::vector<zmq::pollitem_t>& items);
  // Hands every frame waiting on the replica's socket to `lane`.
  void receive(size_t replica, Lane& lane, uint64_t now_ms);

 private:
  std::vector<zmq::socket_t> sockets_;
};

}  // namespace palisade::client
