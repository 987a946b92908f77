// A Coordinator with its own DEALER socket to every replica, driven by one
// thread at a time: the store's I/O thread drives one lane for asynchronous
// calls, and a blocking call that finds the other lane free drives it itself,
// which saves two thread hand-offs per call.
#pragma once

#include <string>
#include <vector>

#include <zmq.hpp>

#include "client/coordinator.h"
#include "common/envelope.h"

namespace palisade::client {

class Lane {
 public:
  // `ctx` and `clock` must outlive the lane.
  Lane(zmq::context_t& ctx, const std::vector<std::string>& endpoints, CoordinatorOptions options,
       HybridClock& clock, wire::Limits limits);

  Coordinator& coordinator() { return coordinator_; }
  size_t replicas() const { return sockets_.size(); }
  // Appends a poll item per socket, in replica order.
  void add_poll_items(std::vector<zmq::pollitem_t>& items);
  // Hands every reply waiting on the replica's socket to the coordinator.
  void receive(size_t replica, uint64_t now_ms);
  // Sends what the coordinator wants sent, and returns what completed.
  std::vector<Completion> flush(uint64_t now_ms);

 private:
  wire::Limits limits_;
  Coordinator coordinator_;
  std::vector<zmq::socket_t> sockets_;
};

}  // namespace palisade::client
