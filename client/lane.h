// A Coordinator with its own DEALER socket to every replica, driven by one
// thread at a time: the store's I/O thread drives one lane for asynchronous
// calls, and a blocking call that finds the other lane free drives it itself,
// which saves two thread hand-offs per call.
//
// What goes to one replica in one flush leaves as one message, a request per
// frame (up to wire::kMaxRequestsPerMessage): the replica answers with one
// message too, which saves ZeroMQ work per request on both ends. A replica
// older than that refuses such a message whole (`malformed`, id 0), so a lane
// sends a replica one such message as a probe and waits for its answer before
// it sends more; after a refusal it sends the probe's requests again, and
// everything after them, one per message.
#pragma once

#include <cstdint>
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
  size_t replicas() const { return replicas_.size(); }
  // Appends a poll item per socket, in replica order.
  void add_poll_items(std::vector<zmq::pollitem_t>& items);
  // Hands every reply waiting on the replica's socket to the coordinator.
  void receive(size_t replica, uint64_t now_ms);
  // Sends what the coordinator wants sent, and returns what completed.
  std::vector<Completion> flush(uint64_t now_ms);

  // Whether the replica is known to take several requests per message.
  bool batches_to(size_t replica) const { return replicas_[replica].batching == Batching::kYes; }

 private:
  enum class Batching : uint8_t {
    kUnknown,  // not asked yet: the next message of several requests is the probe
    kProbing,  // the probe is out: one request per message until it is answered
    kYes,
    kNo,       // the replica refused the probe
  };
  struct Replica {
    zmq::socket_t socket;
    Batching batching = Batching::kUnknown;
    std::vector<uint64_t> probe;          // the request ids of the probe
    std::vector<std::string> probe_frames;  // and the requests, to send again one by one
    uint64_t probe_sent_ms = 0;
  };

  // Sends `frames` as one message; false when the replica is not connected.
  static bool send(Replica& replica, const std::vector<std::string>& frames);
  // Learns from a reply whether the replica took the probe; false when the
  // reply is its refusal (the probe's requests were not applied).
  bool note_probe_answer(size_t replica, const wire::ReplicaReply& reply, uint64_t now_ms);

  wire::Limits limits_;
  Coordinator coordinator_;
  std::vector<Replica> replicas_;
  std::vector<std::vector<const Send*>> by_replica_;  // flush's scratch
  std::vector<std::string> frames_;                   // flush's scratch
};

}  // namespace palisade::client
