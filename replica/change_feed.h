// A replica's change feed (docs/protocol.md "changes"): the versions it stored
// by a client's write and the versions it committed, numbered in the order it
// did, for watchers that must learn every version (palisade/watch.h). Kept in
// memory and bounded: a restart begins a new feed (a new log id), and the
// oldest changes are forgotten past the bounds. Sans-I/O, like the handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string_view>

#include "wire/replica_protocol.h"

namespace palisade::replica {

struct FeedOptions {
  // The feed's id, never 0: a new random one each time the replica starts, so
  // that a watcher tells a new feed from the one it read before.
  uint64_t log = 1;
  // The feed forgets its oldest changes past either bound.
  size_t max_changes = 100'000;
  size_t max_bytes = size_t{64} << 20;
};

class ChangeFeed {
 public:
  explicit ChangeFeed(FeedOptions options);

  // The key's version `v` was stored (pending, by a write) or committed. The
  // sequencer is not kept: watchers do not need it.
  void append(std::string_view key, const wire::Version& v);

  // The changes of keys under `r.prefix` numbered after `r.after`, at most
  // `r.limit` and kChangesReplyBudgetBytes of them (one at least), with the
  // feed's position: `next` is the last change looked at. `more` when changes
  // after `next` were not looked at (at most kChangesLookedAt are, so that a
  // narrow prefix in a busy feed does not hold the replica up).
  wire::ReplicaReply read(const wire::ChangesRequest& r) const;

  static constexpr size_t kChangesLookedAt = 16 * wire::kMaxChangesPerReply;

  uint64_t log() const { return options_.log; }
  size_t size() const { return changes_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  static size_t size_of(const wire::FeedChange& c);

  FeedOptions options_;
  std::deque<wire::FeedChange> changes_;  // numbered consecutively up to next_seq_ - 1
  uint64_t next_seq_ = 1;
  size_t bytes_ = 0;
};

}  // namespace palisade::replica
