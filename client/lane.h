// A Coordinator with its own DEALER socket to every replica, driven by one
// thread at a time: the store's I/O thread drives one lane for asynchronous
// calls, and a blocking call that finds the other lane free drives it itself,
// which saves two thread hand-offs per call.
//
// What goes to one replica in one flush leaves as one message, a request per
// frame (up to wire::kMaxRequestsPerMessage): the replica answers with one
// message too, which saves ZeroMQ work per request on both ends. A replica
// older than that refuses such a message whole (`malformed`, id 0), so before
// a lane sends a replica several requests in a message it sends a probe (two
// pings in one message) and sends one request per message until the probe is
// answered: ping replies, batching; a refusal, one per message for the next
// kAskAgainAfterMs (then it is probed again: an upgraded replica batches). A
// batching replica that refuses a message (a downgrade) is probed again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "client/coordinator.h"
#include "wire/envelope.h"

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

  // How long a replica that refused the probe gets one request per message
  // before it is asked again.
  static constexpr uint64_t kAskAgainAfterMs = 60'000;

  // Whether the replica is known to take several requests per message.
  bool batches_to(size_t replica) const { return replicas_[replica].batching == Batching::kYes; }

 private:
  enum class Batching : uint8_t {
    kUnknown,  // not asked yet: the next flush with several requests for it sends the probe
    kProbing,  // the probe is out: one request per message until it is answered
    kYes,
    kNo,       // the replica refused the probe, at refused_ms
  };
  struct Replica {
    zmq::socket_t socket;
    std::string endpoint;
    Batching batching = Batching::kUnknown;
    uint64_t probe_id = 0;  // the first ping's id; the second's is one more
    uint64_t probe_sent_ms = 0;
    uint64_t refused_ms = 0;
  };

  // Sends `frames` as one message; false when the replica is not connected.
  static bool send(Replica& replica, const std::vector<std::string>& frames);
  // A wrong_cluster reply, made to name the replica's endpoint (and without
  // the foreign replica's clock).
  static void name_foreign(const Replica& r, wire::ReplicaReply& reply);
  // Sends `replica` the probe, unless it is not connected.
  void probe(Replica& replica, uint64_t now_ms);
  // Learns from a reply whether the replica takes several requests per message;
  // false when the reply answers the lane, not the coordinator (its clock is
  // observed here then).
  bool note_batching(Replica& replica, const wire::ReplicaReply& reply, uint64_t now_ms);

  wire::Limits limits_;
  HybridClock& clock_;
  Coordinator coordinator_;
  std::vector<Replica> replicas_;
  std::vector<std::vector<const Send*>> by_replica_;  // flush's scratch
  std::vector<std::string> frames_;                   // flush's scratch
  // Probe ids count down from the top, far from the coordinator's, which count up from 1.
  uint64_t next_probe_id_ = ~uint64_t{0} - 1;
};

}  // namespace palisade::client
