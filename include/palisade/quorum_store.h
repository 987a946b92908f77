// QuorumStore: put, delete and get through quorums of palisade-replica daemons.
//
// Writes carry a fenced hybrid timestamp {fence token, HLC}; replicas refuse the
// writes of a superseded lock holder (see docs/consistency.md for what each answer
// promises). Reads take the newest version a read quorum holds, never return a
// write that was answered Fenced, and repair the replicas that answered older
// before they return, so a key's reads never go back in time.
//
// Thread safety: every method may be called from any thread at once. A
// blocking call runs on the caller's thread when no other blocking call of the
// store's engine is running (no thread hand-off); otherwise, like every
// asynchronous call, it goes through the engine's background thread, which
// batches what waits, and waits on a future. One store per thread and one
// store for all threads behave the same: equal stores share one engine
// (QuorumStoreOptions::share_connections).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "palisade/client_counters.h"
#include "palisade/credentials.h"
#include "palisade/lease.h"
#include "palisade/status.h"
#include "palisade/timestamp.h"

namespace palisade {

// The lock a write is made under: its name and the fencing token of the grant.
// An empty fence (token 0) writes without a lock: plain last-writer-wins, which
// always loses to fenced writes.
struct Fence {
  std::string lock;
  uint64_t token = 0;
  // The sequencer text of the grant; replicas that hold the cluster key require
  // it for fenced writes and fences (a missing or wrong one is bad_sequencer).
  std::string sequencer{};

  // The fence of a sequencer text (e.g. from PALISADE_SEQUENCER): its lock and
  // token, read without checking its MAC (only replicas hold the key), and the
  // text itself. BadSequencer when it is not a sequencer.
  static Result<Fence> from_sequencer(std::string_view text);
};

// How a store checks a config certificate: the lock group's Ed25519
// signature over a replica set record (docs/design.md "The replica set").
// libpalisade links no libsodium, so the check comes from the caller:
// ClusterFile::store_options makes one from the cluster file's
// sequencer_public_key with SequencerVerifier::signature_verifies
// (libpalisade-sequencer).
struct ConfigCheck {
  // The key it checks with: stores share an engine only when theirs are equal.
  std::string public_key;
  std::function<bool(std::string_view message, std::string_view signature)> signature_verifies;
};

struct QuorumStoreOptions {
  // ZeroMQ endpoints, e.g. tcp://127.0.0.1:7400; N = their count. Empty:
  // the set, and R and W, are the lock group's record's (lock_group below).
  std::vector<std::string> replicas;
  // The cluster's id: the cluster file's cluster_id, 32 hex digits. Every
  // request names it, and a replica of another cluster answers wrong_cluster
  // without applying anything; an operation that cannot reach its quorum for
  // that ends with WrongCluster at once (final, not retried). Empty: requests
  // name no cluster, and any replica answers them.
  std::string cluster_id;
  int read_quorum = 2;                // R
  int write_quorum = 2;               // W
  std::chrono::milliseconds timeout{2000};     // per operation
  std::chrono::milliseconds hedge_after{50};   // a read asks more replicas when R have not answered by then
  uint64_t max_clock_offset_ms = 500;          // replica clocks further ahead are refused
  size_t max_key_bytes = 511;  // what replicas accept at most
  size_t max_value_bytes = size_t{1} << 20;
  // Stores of one process opened with equal options share one engine: the
  // connections to the replicas (and their send queues, 10000 requests each),
  // the background thread and the hybrid clock. Many stores (one per thread,
  // say) then batch their requests like one store. false gives this store an
  // engine of its own, for example to keep a bulk load's thousands of requests
  // in flight from queueing ahead of another store's calls.
  bool share_connections = true;
  // Unset: plaintext links, for a cluster file without identities. Set: CURVE
  // to every replica, which must be in credentials->server_keys (or have its
  // key in the replica set the lock group records).
  std::optional<Credentials> credentials;
  // The store follows the replica set the lock group records: when replicas
  // answer that they keep a newer set (stale_config, with its certificate),
  // it checks the certificate and sends to that set's replicas, with its
  // quorums, from then on; the calls in flight start again there. Unset:
  // certificates are taken unchecked on plaintext links (an insecure
  // cluster, whose replicas take them unchecked too) and never over CURVE
  // (the store keeps the replicas above, which then refuse it).
  std::optional<ConfigCheck> config_check;
  // The lock group's endpoints (the cluster file's [[lockd]] entries). When
  // set, a store that opens a new engine asks them for the replica set they
  // record (get_replicas, at most a second) and starts from it, once it checks out
  // as above, when it is newer than `replicas`: a client whose `replicas`
  // were all replaced still finds the set. With no `replicas`, open fails
  // (Unavailable) when no node gives a set. Empty: it starts from `replicas`.
  std::vector<std::string> lock_group{};
};

struct WriteResult {
  // ok: W replicas stored it. fenced: the lock was lost (a replica holds a
  // higher token), the write did not and never will take effect. stale: a newer
  // write of the key won. bad_sequencer: replicas refused the fence's sequencer
  // (missing, forged, another lock group, not this lock and token, or a shared
  // lock); the write did not and never will take effect. unavailable / timeout:
  // too few replicas answered in time; the write may or may not take effect.
  // bad_request, too_large (also a sequencer over 1024 bytes).
  Status status;
  FencedTimestamp ts;  // the timestamp the write carried
  uint64_t floor = 0;  // the highest fence floor or newer token a replica reported
};

struct ReadResult {
  // ok (found or not), unavailable / timeout (could not decide in time).
  Status status;
  bool found = false;
  std::string value;
  FencedTimestamp ts;  // of the version returned
  std::string lock;    // the lock it was written under, empty when none
};

// One key of a prefix read, with the version a get would return.
struct KeyValue {
  std::string key;
  std::string value;
  FencedTimestamp ts;  // of the version returned
  std::string lock;  // the lock it was written under, empty when none
};

struct ScanResult {
  // ok; unavailable / timeout: some key of the range could not be decided in
  // time (the message names it), or too few replicas listed the range;
  // bad_request (limit 0, a prefix or `after` too long), permission_denied
  // (no read pattern covers the prefix).
  Status status;
  std::vector<KeyValue> entries;  // by key, in byte order; deleted keys left out
  // Not empty: keys of the prefix may follow; scan again with after = next.
  // Empty: the prefix has no key after the last entry.
  std::string next;
  // The keys of the range read as deleted, while replicas still keep their
  // tombstone (anti-entropy forgets it after gc_grace): ts is the delete's,
  // value empty. For a caller that keeps a copy of the prefix.
  std::vector<KeyValue> deleted{};
};

// The replica set a store sends to now (QuorumStore::replica_set).
struct ReplicaSetInUse {
  uint64_t version = 0;  // the lock group's record it follows; 0: QuorumStoreOptions::replicas
  std::vector<std::string> replicas;
  int read_quorum = 0;
  int write_quorum = 0;
};

namespace client {
struct FeedResult;
}
class Watcher;

class QuorumStore {
 public:
  struct Calls;  // internal: this store's asynchronous calls in flight
  // BadRequest when R + W <= N, W <= N / 2, or a quorum exceeds N.
  static Result<std::unique_ptr<QuorumStore>> open(QuorumStoreOptions options);
  // Waits for this store's asynchronous calls to finish, and sends the
  // commits held back for a next call now. The engine stops with the last
  // store that shares it.
  ~QuorumStore();
  QuorumStore(const QuorumStore&) = delete;
  QuorumStore& operator=(const QuorumStore&) = delete;

  WriteResult put(std::string_view key, std::string_view value, const Fence& fence = {});
  WriteResult del(std::string_view key, const Fence& fence = {});
  ReadResult get(std::string_view key);
  // A fenced read: every replica that answers first raises the lock's fence
  // floor to the token (as fence() does), then reads, in one step. Besides
  // what get() promises, no write under an older token of the lock that it
  // did not return can be acknowledged afterwards: a read-modify-write under
  // the lock sees every older holder's write that will ever count
  // (ConditionalStore; docs/consistency.md "Conditional writes").
  // bad_sequencer when replicas refuse the fence's sequencer.
  ReadResult get(std::string_view key, const Fence& fence);
  // A prefix read: the keys that start with `prefix` and sort after `after`
  // (byte order; empty: from the first), at most `limit` of them, each with
  // the version get() would return at that moment, by the same rules
  // (never a write answered fenced, repairs before it returns; see
  // docs/consistency.md "Prefix reads"). Deleted keys are left out. The
  // replicas list the keys a page of up to 1000 at a time; each page has
  // QuorumStoreOptions::timeout.
  ScanResult scan(std::string_view prefix, std::string_view after = {}, size_t limit = 1000);
  std::future<ScanResult> scan_async(std::string_view prefix, std::string_view after = {}, size_t limit = 1000);
  // Raises the lock's fence floor to the token on W replicas, so that every
  // holder with a lower token is refused from then on.
  WriteResult fence(const Fence& fence);

  std::future<WriteResult> put_async(std::string_view key, std::string_view value, const Fence& fence = {});
  std::future<WriteResult> del_async(std::string_view key, const Fence& fence = {});
  std::future<ReadResult> get_async(std::string_view key);
  std::future<ReadResult> get_async(std::string_view key, const Fence& fence);
  std::future<WriteResult> fence_async(const Fence& fence);

  // Writes under a LockClient lease: the lease's lock, token and sequencer.
  // no_session, without sending anything, when the lease is not valid (released,
  // or its session in jeopardy or expired); bad_request for a shared lease
  // (replicas take fenced writes only under exclusive locks).
  WriteResult put(std::string_view key, std::string_view value, const Lease& lease);
  WriteResult del(std::string_view key, const Lease& lease);
  // A fenced read under the lease (get(key, fence) above).
  ReadResult get(std::string_view key, const Lease& lease);
  std::future<WriteResult> put_async(std::string_view key, std::string_view value, const Lease& lease);
  std::future<WriteResult> del_async(std::string_view key, const Lease& lease);

  // How this store's calls ended so far (palisade/client_counters.h).
  StoreCounters counters() const;
  // The replicas it sends to now, with their quorums: the ones it was opened
  // with, or the newer set it follows (QuorumStoreOptions::config_check).
  ReplicaSetInUse replica_set() const;

 private:
  // A Watcher reads the replicas' change feeds (client/coordinator.h).
  friend class Watcher;
  client::FeedResult read_feeds(std::string_view prefix, std::vector<uint64_t> after, bool wait_for_all);

  struct Impl;
  static Result<std::shared_ptr<Impl>> engine_for(QuorumStoreOptions options);
  explicit QuorumStore(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
  std::shared_ptr<Calls> calls_;
};

}  // namespace palisade
