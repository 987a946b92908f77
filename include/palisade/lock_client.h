// LockClient: a session with the palisade lock group, and the leases it holds.
//
// A LockClient finds the master, opens a session and keeps it alive from a
// background thread. Each acquire returns a Lease with a fencing token and a
// sequencer; the lease is valid while the session is safe (see
// docs/sessions.md: jeopardy, grace, expiry, lock-delay). Given a QuorumStore,
// acquire also raises the lock's fence floor on a write quorum of replicas
// before it returns, so every write of an earlier holder is refused from then on.
//
// Thread safety: every method may be called from any thread. One call at a
// time runs on its caller's thread (no thread hand-off); calls made meanwhile
// from other threads go through the background thread.
#pragma once

#include <chrono>
#include <stop_token>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "palisade/client_counters.h"
#include "palisade/credentials.h"
#include "palisade/lease.h"
#include "palisade/lock_mode.h"
#include "palisade/status.h"

namespace palisade {

class QuorumStore;

enum class SessionEvent : uint8_t {
  kJeopardy,  // the local lease ran out without a KeepAlive answer: do not write
  kSafe,      // a master answered again within the grace period: leases are back
  kExpired,   // the session is gone: every lease from it is void, for good
};

struct LockClientOptions {
  std::vector<std::string> nodes;                   // palisade-lockd endpoints
  // The cluster's id: the cluster file's cluster_id, 32 hex digits. Every
  // request names it, and a node of another cluster answers wrong_cluster:
  // connect, and every call, then end with WrongCluster (final, not retried).
  // Empty: requests name no cluster, and any node answers them.
  std::string cluster_id;
  std::chrono::milliseconds request_timeout{1000};  // ask another node after this
  std::chrono::milliseconds grace{45000};           // how long jeopardy may last
  // The session's lease (its TTL): how long the lock group keeps the session,
  // and its locks, after the last KeepAlive it answered. 0: the cluster's
  // session_lease_ms. Otherwise 1 s to 10 min, and at least twice the cluster's
  // heartbeat_ms (connect answers bad_request when the lock group refuses it).
  // KeepAlives go every third of it. See docs/sessions.md, "Choosing a TTL".
  std::chrono::milliseconds session_ttl{0};
  uint64_t max_clock_drift_ppm = 1000;
  // A call no master answered for this long (after its wait) ends with timeout.
  std::chrono::milliseconds call_timeout{10000};
  // When set (and outliving the client), acquire writes the lock's fence to W
  // replicas before it returns.
  QuorumStore* store = nullptr;
  // Called from the background thread, in order, for every change. It must
  // not call the blocking methods of this client (they answer BadRequest there).
  std::function<void(SessionEvent)> on_event;
  // Unset: plaintext links, for a cluster file without identities. Set: CURVE
  // to every node, which must be in credentials->server_keys.
  std::optional<Credentials> credentials;
};

struct AcquireOptions {
  LockMode mode = LockMode::kExclusive;
  std::chrono::milliseconds wait{0};        // 0: fail with busy at once when held
  std::chrono::milliseconds lock_delay{0};  // 0..60 s, applied if this session expires holding it
  // Ends a waiting acquire at once with Cancelled when stop is requested (from
  // any thread, a signal handler's thread say); a grant that comes anyway is
  // given back.
  std::stop_token cancel{};
};

// A lock's grant as the lock group's master knows it (LockClient::current_grant).
struct Grant {
  uint64_t token = 0;
  LockMode mode = LockMode::kExclusive;
};

class LockClient {
 public:
  // Opens a session. Unavailable when no master answers within `timeout`;
  // BadRequest for bad options (no nodes, a malformed endpoint, a session_ttl
  // out of range, also when the master finds it so).
  static Result<std::unique_ptr<LockClient>> connect(LockClientOptions options,
                                                     std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Closes the session: its locks are released at once, without lock-delay.
  // Best effort: waits at most two request timeouts for the master's answer.
  ~LockClient();
  LockClient(const LockClient&) = delete;
  LockClient& operator=(const LockClient&) = delete;

  // Waits up to options.wait for the lock. busy (held, or in lock-delay),
  // timeout (no grant within the wait), unavailable (no master answered within
  // call_timeout; should the lock have been granted all the same, it is given
  // back), no_session (the session expired or closed: a client does not open a
  // second one), bad_request (the session holds it in the other mode, bad
  // options). With a store, an exclusive grant is fenced first; when the fence
  // fails the lock is released and the fence's error returned, and when it
  // finds a floor above the grant's token (a later holder superseded it) the
  // lock is released and fenced returned. Acquiring a lock
  // the session holds returns the same grant; cancelled when another thread
  // releases the lock while this acquire is on its way (its grant, if any, is
  // given back). The lease returned is valid unless the session is in
  // jeopardy and stays so for a request_timeout.
  Result<Lease> acquire(std::string_view lock, AcquireOptions options = {});
  // acquire with wait 0.
  Result<Lease> try_acquire(std::string_view lock, AcquireOptions options = {});
  // Releases without lock-delay. The lease (and every copy, and every lease of
  // the same grant) is invalid from the moment release is called. Idempotent;
  // BadRequest for a lease of another client.
  Status release(Lease& lease);
  // Whether the sequencer names the lock's current grant (asks the master).
  // bad_sequencer when its signature or group is wrong.
  Result<bool> check_sequencer(std::string_view sequencer);
  // Who holds `lock` now, as the master knows it: its grant's token and mode,
  // nullopt while the lock is free (never granted, released, in lock-delay).
  // It may change a moment later. permission_denied for an identity whose
  // roles neither cover the lock nor inspect the group.
  Result<std::optional<Grant>> current_grant(std::string_view lock);

  // The store its exclusive grants fence before acquire returns
  // (LockClientOptions::store), nullptr when none.
  QuorumStore* store() const;
  uint64_t session() const;
  uint64_t epoch() const;
  // Whether leases from this session are valid now (the session is safe and its local deadline ahead).
  bool safe() const;
  // How its calls ended so far, and its session's events (palisade/client_counters.h).
  LockCounters counters() const;

 private:
  struct Impl;
  explicit LockClient(std::unique_ptr<Impl> impl);
  Result<Lease> acquire_uncounted(std::string_view lock, AcquireOptions options);
  Status release_uncounted(Lease& lease);
  std::unique_ptr<Impl> impl_;
};

}  // namespace palisade
