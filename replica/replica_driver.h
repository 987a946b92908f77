// The palisade-replica turn, without sockets: the one driver of a
// ReplicaHandler, run by the daemon (ReplicaServer, on ZeroMQ and LMDB) and by
// the simulator (tests/sim/replica_set.cc, on its network, with a MemoryStore or
// with the LmdbStore on the simulated disk).
//
// A turn gathers messages into a batch: each message is a sender's handle and
// its frames, one request a frame, at most wire::kMaxRequestsPerMessage of
// them. take() decodes every frame and checks its cluster id; a frame that
// fails is refused at once (an error reply, stamped with the clock) but keeps
// its place. When the batch is full (max_batch frames or max_batch_bytes), or
// when the host has nothing more to give, flush() applies the batch's requests
// with one synced commit (ReplicaHandler::handle_batch) and then answers every
// frame, in arrival order, the replies to one message together through
// ReplicaHost::reply. drop() forgets the batch unanswered and unapplied: what
// a crash before the commit does.
//
// Concurrency: one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/hybrid_clock.h"
#include "base/permissions.h"
#include "wire/envelope.h"
#include "wire/replica_protocol.h"
#include "replica/handler.h"

namespace palisade::replica {

// What the driver needs from the process that runs it.
class ReplicaHost {
 public:
  virtual ~ReplicaHost() = default;
  // The replies to the message that take() was given with `route`: one per
  // frame, in the frames' order, to go back as one message.
  virtual void reply(uint64_t route, std::vector<std::string> replies) = 0;
  // A frame refused by take() (undecodable, of another cluster, not
  // permitted, a message of too many frames): the daemon logs and counts it.
  // `bytes`: the frame's size; `type`: the request's (wire::request_type),
  // empty when it did not decode.
  virtual void refused(uint64_t /*request_id*/, size_t /*bytes*/, const Status& /*why*/, std::string_view /*type*/) {}
  // A reply that reports the replica's own failure (corrupt, storage_error,
  // internal): the daemon logs it.
  virtual void failed(uint64_t /*request_id*/, const Status& /*why*/) {}
  // A write refused `fenced`: its token is below `floor`, the fence floor of
  // its lock (a superseded holder's write). The daemon logs it.
  virtual void fenced(const wire::WriteRequest& /*write*/, uint64_t /*floor*/) {}
  // The batch just committed raised the fence floor of `lock` to `floor`: by
  // a fence, a write under a higher token or a repair's copy
  // (ReplicaHandler::floors_raised). The daemon counts it.
  virtual void floor_raised(std::string_view /*lock*/, uint64_t /*floor*/) {}
  // Last look at the reply to `request` before it is encoded. The simulator's
  // disk faults that the handler cannot see (a bit flip in a replica that does
  // not check checksums) show here; the daemon has none.
  virtual void amend(const wire::ReplicaRequest& /*request*/, wire::ReplicaReply& /*reply*/) {}
  // The reply to `request`, as it goes out (after amend): the daemon counts it.
  virtual void answered(const wire::ReplicaRequest& /*request*/, const wire::ReplicaReply& /*reply*/) {}
};

struct ReplicaDriverOptions {
  // The cluster's id (base/cluster_id.h): requests that name another are
  // answered wrong_cluster, unapplied. Empty: requests that name any id are.
  std::string cluster_id{};
  wire::Limits limits{};
  size_t max_batch = 1024;  // frames per batch (one commit)
  size_t max_batch_bytes = size_t{64} << 20;  // frame bytes held per batch
  // Over CURVE: what each identity may do (base/permissions.h). A request
  // its sender may not make is refused permission_denied, unapplied: a sealed
  // request or a tombstone drop from any but a repairer, whatever its seal,
  // and once roles are configured a read, write or delete of a key its roles
  // do not cover. nullopt (plaintext links): the seal alone decides.
  std::optional<Permissions> permissions{};
  // Negative controls for the simulator: a replica with one of these bugs.
  // Every request decoded is marked from_repairer, as if its frame carried a
  // repairer's seal: any client's committed write or commit counts as a repair.
  bool broken_trust_everyone = false;
  // Writes that are not committed (clients' writes, not repairs) are answered
  // ok without being applied: neither stored nor checked against floors.
  bool broken_ack_writes_without_storing = false;
  // Replies leave out what the replica dropped (docs/design-changes.md 16).
  bool broken_forget_dropped = false;
  // Read replies leave out pending versions.
  bool broken_hide_pending = false;
  // Read replies call every version committed.
  bool broken_pending_as_committed = false;
};

// What take() did with one message.
struct TakeResult {
  size_t requests = 0;  // frames decoded into the batch
  size_t refused = 0;  // frames refused (their replies wait in the batch too)
};

class ReplicaDriver {
 public:
  ReplicaDriver(ReplicaHandler& handler, HybridClock& clock, ReplicaHost& host, ReplicaDriverOptions options);

  // Takes one message from `route` into the batch. A message of more than
  // wire::kMaxRequestsPerMessage frames (or that the transport cut short for
  // having more: `too_many_frames`) gets one malformed reply, nothing else. A
  // message of no frames is answered by nothing. Take while !full().
  // `sender`: the identity the CURVE handshake proved (empty on plaintext links).
  TakeResult take(uint64_t route, std::span<const std::string_view> frames, bool too_many_frames = false,
                  std::string_view sender = {});
  // The batch holds max_batch frames or max_batch_bytes: flush it.
  bool full() const;
  // Replaces ReplicaDriverOptions::permissions (a reload): messages taken from now on see them.
  void set_permissions(std::optional<Permissions> permissions) { options_.permissions = std::move(permissions); }
  // Nothing waits to be answered.
  bool empty() const { return frames_.empty(); }
  // The decoded requests of the batch, in arrival order.
  const std::vector<wire::ReplicaRequest>& pending() const { return requests_; }
  // Applies the batch's requests as one commit, then answers every message of
  // the batch in arrival order. Returns the frames answered. When the handler
  // throws, the batch is gone unanswered and the exception propagates.
  size_t flush();
  // Forgets the batch: nothing of it is applied or answered. Returns the
  // requests it held (refusals not counted).
  size_t drop();

  // Frames answered since the start.
  uint64_t requests_served() const { return served_; }

 private:
  struct Message {
    uint64_t route;
    size_t frames;
  };
  void refuse(uint64_t id, size_t bytes, Status why, std::string_view type = {});
  bool acked_unstored(const wire::ReplicaRequest& request) const;
  void falsify(const wire::ReplicaRequest& request, wire::ReplicaReply& reply) const;

  ReplicaHandler& handler_;
  HybridClock& clock_;
  ReplicaHost& host_;
  ReplicaDriverOptions options_;
  std::vector<Message> messages_;
  std::vector<wire::ReplicaRequest> requests_;
  // Per frame of the batch, in arrival order: its refusal, if refused.
  std::vector<std::optional<wire::ReplicaReply>> frames_;
  size_t batch_bytes_ = 0;
  uint64_t served_ = 0;
};

}  // namespace palisade::replica
