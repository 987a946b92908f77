// A Coordinator with its own link to every replica (ReplicaLinks: a DEALER
// socket each in the client, client/zmq_links.h; the simulated network in
// tests/sim), driven by one thread at a time: the store's I/O thread drives
// one lane for asynchronous calls, and a blocking call that finds the other
// lane free drives it itself, which saves two thread hand-offs per call.
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
#include <string_view>
#include <vector>

#include "client/coordinator.h"
#include "wire/envelope.h"

namespace palisade::client {

// How a lane reaches its replicas, by their index in the endpoints.
class ReplicaLinks {
 public:
  virtual ~ReplicaLinks() = default;
  // Sends `frames` to the replica as one message; false when it cannot leave
  // now (the replica is not connected), and then none of it left.
  virtual bool send(size_t replica, const std::vector<std::string>& frames) = 0;
};

class Lane {
 public:
  // `links` and `clock` must outlive the lane; `endpoints` name the replicas
  // (in wrong_cluster errors).
  Lane(ReplicaLinks& links, const std::vector<std::string>& endpoints, CoordinatorOptions options, HybridClock& clock,
       wire::Limits limits);

  Coordinator& coordinator() { return coordinator_; }
  size_t replicas() const { return replicas_.size(); }
  // A frame the replica sent back: a reply for the coordinator, or to the
  // lane's probe.
  void on_frame(size_t replica, std::string_view frame, uint64_t now_ms);
  // Sends what the coordinator wants sent, and returns what completed.
  std::vector<Completion> flush(uint64_t now_ms);

  // How long a replica that refused the probe gets one request per message
  // before it is asked again.
  static constexpr uint64_t kAskAgainAfterMs = 60'000;

  // Whether the replica is known to take several requests per message.
  bool batches_to(size_t replica) const { return replicas_[replica].batching == Batching::kYes; }
  // Whether the replica refused the probe and is not asked again yet.
  bool refused_batching(size_t replica) const { return replicas_[replica].batching == Batching::kNo; }

 private:
  enum class Batching : uint8_t {
    kUnknown,  // not asked yet: the next flush with several requests for it sends the probe
    kProbing,  // the probe is out: one request per message until it is answered
    kYes,
    kNo,       // the replica refused the probe, at refused_ms
  };
  struct Replica {
    std::string endpoint;
    Batching batching = Batching::kUnknown;
    uint64_t probe_id = 0;  // the first ping's id; the second's is one more
    uint64_t probe_sent_ms = 0;
    uint64_t refused_ms = 0;
  };

  // A wrong_cluster reply, made to name the replica's endpoint (and without
  // the foreign replica's clock).
  static void name_foreign(const Replica& r, wire::ReplicaReply& reply);
  // Sends `replica` the probe, unless it is not connected.
  void probe(size_t replica, uint64_t now_ms);
  // Learns from a reply whether the replica takes several requests per message;
  // false when the reply answers the lane, not the coordinator (its clock is
  // observed here then).
  bool note_batching(Replica& replica, const wire::ReplicaReply& reply, uint64_t now_ms);

  ReplicaLinks& links_;
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
