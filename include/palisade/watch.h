// Watches: the changes of a key, of the keys under a prefix, or of a lock's
// holder, told in order (docs/recipes.md "Watches"; what a watcher is
// promised: docs/consistency.md "Watches").
//
// A Watcher reads the replicas' change feeds every poll (docs/protocol.md
// "changes") and tells every version they show acknowledged (written on W
// replicas, or committed on one): each key's versions in timestamp order,
// never one a read would not return (a fenced or never acknowledged write),
// never going back, versions written and overwritten between two polls too.
// At its first poll, and after a gap (a replica restarted: its feed is
// lost), it also reads its key or prefix by the read rules (a get, or a
// prefix read page by page), so that no key stays behind its newest
// version. With `every_version` off, or when the feeds cannot be read, each
// poll is such a round alone, which tells each key's newest version only.
//
// Thread safety: one thread uses a watcher at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "palisade/status.h"
#include "palisade/timestamp.h"

namespace palisade {

struct WatchEvent {
  enum class Kind { kPut, kDelete };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;  // kPut
  // The version's: the put's, or the delete's. A delete whose version is not
  // known (the key is gone and replicas no longer keep its tombstone: the
  // watcher was away longer than anti-entropy keeps them) has none: {0, 0}.
  FencedTimestamp ts;
  std::string lock;  // kPut: the lock it was written under, empty when none
};

struct WatchOptions {
  // What to watch: the key `key`, or, with `prefix` set, every key that
  // starts with `key` (an empty `key` then watches every key).
  std::string key;
  bool prefix = false;
  // The first round tells every key that has a value now (as puts); false:
  // it only learns them, and the rounds after tell what changed.
  bool initial = true;
  // Keys a prefix read asks for at a time (QuorumStore::scan's limit).
  size_t page = 1000;
  // Tell every version, from the replicas' change feeds; false: each round
  // tells each key's newest version only, from reads alone.
  bool every_version = true;
};

namespace client {
class WatchState;
}

class Watcher {
 public:
  // `store` must outlive it.
  Watcher(QuorumStore& store, WatchOptions options);
  ~Watcher();
  Watcher(Watcher&&) noexcept;

  // One poll: what changed since the last, per key in timestamp order, keys
  // in byte order. Unavailable or timeout when a round is due and the key or
  // a page of the prefix could not be read, and the feeds told nothing
  // either (the next poll reads it all again); permission_denied,
  // bad_request.
  Result<std::vector<WatchEvent>> poll();

  // Rounds every `every`, handing each event to `on_event`, until `stop` is
  // requested (ok). Unavailable and timeout rounds are tried again; other
  // errors end it. `on_status`, when given, hears when rounds start to fail
  // (the error), fail otherwise, and succeed again (ok).
  Status run(const std::function<void(const WatchEvent&)>& on_event, std::stop_token stop,
             std::chrono::milliseconds every = std::chrono::milliseconds(500),
             const std::function<void(const Status&)>& on_status = {});

  // The version last told of each key (a deleted key's, its delete's; {0, 0}
  // for a delete not known). A Watcher given it (`resume`) goes on from
  // there, in this process or another: a key it tells again is only a newer
  // version, and a key gone since is told deleted.
  std::map<std::string, FencedTimestamp> seen() const;
  void resume(const std::map<std::string, FencedTimestamp>& seen);

 private:
  // A round: the key or every page of the prefix, by the read rules.
  Result<std::vector<WatchEvent>> round();
  // Pages of every replica's change feed, up to its newest change (at most
  // kFeedPagesPerPoll a poll), into the state; `caught_up[i]`: replica i's
  // was read to its newest. An error when no feed can be read (then a round
  // tells each key's newest version).
  static constexpr int kFeedPagesPerPoll = 16;
  Status read_feeds(std::vector<bool>& caught_up);

  QuorumStore& store_;
  WatchOptions options_;
  std::unique_ptr<client::WatchState> state_;
};

// Who holds a lock, as LockClient::current_grant tells it: a grant (token,
// mode) or nobody.
struct LockWatchEvent {
  std::string lock;
  std::optional<Grant> grant;  // nullopt: free (or in its lock-delay)
};

class LockWatcher {
 public:
  // `client` must outlive it.
  LockWatcher(LockClient& client, std::string lock);

  // One round: the holder now, when it differs from the last round's (the
  // first round always tells it). Errors as LockClient::current_grant.
  Result<std::optional<LockWatchEvent>> poll();

  // As Watcher::run. Grants that come and go between two rounds are not told.
  Status run(const std::function<void(const LockWatchEvent&)>& on_event, std::stop_token stop,
             std::chrono::milliseconds every = std::chrono::milliseconds(500),
             const std::function<void(const Status&)>& on_status = {});

 private:
  LockClient& client_;
  std::string lock_;
  std::optional<std::optional<Grant>> told_;
};

}  // namespace palisade
