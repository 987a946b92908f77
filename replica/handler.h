// The replica's request handler (DESIGN "Replicas"): sans-I/O. It applies decoded
// requests to a ReplicaStore by the fenced last-writer-wins rules and returns the
// replies; it never touches sockets, files or threads, and reads time only through
// the HybridClock it is given.
//
// Thread safety: none; one thread (the server loop or the simulator) owns it.
#pragma once

#include <span>
#include <vector>

#include "common/hybrid_clock.h"
#include "common/replica_protocol.h"
#include "replica/store.h"

namespace palisade::replica {

class ReplicaHandler {
 public:
  // `store` and `clock` must outlive the handler.
  ReplicaHandler(ReplicaStore& store, HybridClock& clock) : store_(store), clock_(clock) {}

  // Applies `batch` in order and commits it with one durable commit. Returns one
  // reply per request, in order. Replies may be sent only after this returns.
  // Codes: write: ok, fenced (floor), stale (stored_ts), clock_skew, bad_request,
  // unavailable (too many pending versions); fence: ok (floor); commit, purge:
  // ok (applied) or corrupt; read: ok (versions, floors) or corrupt; every
  // request: storage_error when the disk failed.
  std::vector<wire::ReplicaReply> handle_batch(std::span<const wire::ReplicaRequest> batch);

  // After a failed commit the replica cannot know what reached the disk: it
  // refuses every change until restarted, and keeps serving reads.
  bool writes_refused() const { return !failure_.is_ok(); }

 private:
  // Applies one request to the open batch. `changed` is set when the store changed.
  wire::ReplicaReply apply(const wire::ReplicaRequest& request, bool& changed);
  wire::ReplicaReply write(const wire::WriteRequest& w, bool& changed);
  wire::ReplicaReply fence(const wire::FenceRequest& f, bool& changed);
  wire::ReplicaReply commit(const wire::CommitRequest& c, bool& changed);
  wire::ReplicaReply purge(const wire::PurgeRequest& p, bool& changed);
  wire::ReplicaReply read(const wire::ReadRequest& r);
  wire::ReplicaReply apply_change(const Change& change, bool& changed, wire::ReplicaReply ok_reply);
  // Marks the version with `ts` committed and drops the older ones.
  wire::ReplicaReply commit_version(std::string_view key, Versions versions, const FencedTimestamp& ts,
                                    std::optional<uint64_t> hash, bool& changed);

  ReplicaStore& store_;
  HybridClock& clock_;
  Status failure_;
};

}  // namespace palisade::replica
