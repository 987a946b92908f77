// Election: leader election on a lock (docs/recipes.md, "Leader election").
//
// Candidates campaign for the lock the election is named after; the one
// granted it leads, and stores its value at the election's key, fenced by its
// grant. Once a later leader's campaign has fenced a write quorum, every
// write of a deposed leader, its value included, is refused: a leader paused
// past its lease cannot put its name back. Observers ask the lock group who
// holds the lock and read the value its holder stored.
//
// Thread safety: as the LockClient and QuorumStore it uses; an Election keeps
// no state of its own beyond its options.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "palisade/lease.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "palisade/status.h"
#include "palisade/timestamp.h"

namespace palisade {

struct ElectionOptions {
  std::string name;  // the lock candidates campaign for
  std::string key{};  // where the leader keeps its value; empty: the name
  // Applied should a leader's session expire while it leads: nobody else is
  // elected for this long (docs/sessions.md, "Lock-delay"). 0..60 s.
  std::chrono::milliseconds lock_delay{0};
};

// Who leads: the lock's current grant, and the value its holder stored.
struct Leader {
  uint64_t token = 0;  // the leader's fencing token
  // What it proclaimed; nullopt while it has not stored one yet (elected a
  // moment ago) or has deleted it (resigning).
  std::optional<std::string> value;
  FencedTimestamp ts;  // of the value (its token is the leader's)
  friend bool operator==(const Leader&, const Leader&) = default;
};

class Election {
 public:
  // `client` and `store` must outlive the election, and name one cluster.
  Election(LockClient& client, QuorumStore& store, ElectionOptions options);

  const std::string& name() const { return options_.name; }
  const std::string& key() const { return options_.key; }

  // Blocks until this candidate leads, or `wait` runs out (timeout), or
  // `cancel` is requested (cancelled). Then fences a write quorum with the
  // grant (unless the client's acquire did, LockClient::store) and stores
  // `value` at the key under it. The lease is the
  // leadership: hand its sequencer to the servers you talk to, write under it,
  // and resign with it. When fencing or storing fails the lock is released
  // and that error returned (fenced: another leader superseded this one
  // meanwhile). Errors of LockClient::acquire otherwise.
  Result<Lease> campaign(std::string_view value, std::chrono::milliseconds wait, std::stop_token cancel = {});
  // The leader stores a new value. As QuorumStore::put under the lease:
  // no_session when the lease is no longer valid, fenced when deposed.
  WriteResult proclaim(const Lease& lease, std::string_view value);
  // Steps down: deletes the value (fenced, so a deposed leader deletes
  // nothing of its successor's) and releases the lock. The release's error,
  // else the delete's (which still releases).
  Status resign(Lease& lease);

  // Who leads now, nullopt when nobody does (the lock is free). The value is
  // read by the read rules (docs/consistency.md) after the lock group is
  // asked, so it is never an older leader's.
  Result<std::optional<Leader>> leader();
  // Calls `on_change` with the leader now, then on every change (a new token,
  // a value stored or deleted), asking every `every`, until `stop` is
  // requested (then ok). Unavailable and timeout answers are retried; other
  // errors (permission_denied, no_session, wrong_cluster) end it.
  Status observe(const std::function<void(const std::optional<Leader>&)>& on_change, std::stop_token stop,
                 std::chrono::milliseconds every = std::chrono::milliseconds(200));

 private:
  // BadRequest for a lease of another lock.
  Status check_lease(const Lease& lease) const;

  LockClient& client_;
  QuorumStore& store_;
  ElectionOptions options_;
};

}  // namespace palisade
