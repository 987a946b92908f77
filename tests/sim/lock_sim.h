// The whole system in one process: palisade-lockd nodes (the daemon's own
// LockdDriver: Paxos + lock table) on simulated disks, client processes running the LockSession core and the quorum
// coordinator, and replica cores, over a network that drops, duplicates, delays
// by minutes and partitions; nodes crash and restart keeping only what they
// synced (or stop as planned, a master handing over first); clocks are offset and drift within the configured bound; clients
// pause for longer than their leases, and many sessions choose their own lease
// length (TTL) instead of the cluster's. Deterministic per seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/cluster_config.h"
#include "tests/sim/adversary.h"
#include "tests/sim/history.h"
#include "tests/sim/world.h"

namespace palisade::sim {

struct LockSimOptions {
  uint64_t seed = 1;
  int lockd = 3;  // the lock group's first members
  // More lockd processes, outside the group at first: membership changes
  // (member_change_per_second) draw their members from all of them.
  int lockd_spares = 0;
  double member_change_per_second = 0;
  int replicas = 3;  // N; W = R = N / 2 + 1
  // Spare replicas, outside the replica set at first: an operator changes the
  // set through the lock group's record, one replica at a time, while the
  // workload runs (tests/sim/replacer.h). Each spare joins at most once.
  int replica_spares = 0;
  // Each change replaces, adds (up to 5 replicas) or removes a replica; else
  // each replaces one.
  bool replica_adds_and_removes = false;
  // Chance the operator walks away from a paused set, which the lock group's
  // master then ends (LockServiceOptions::replica_pause_timeout_ms).
  double replica_walk_away = 0.1;
  // Negative controls of replica set changes (the replacer's, as in
  // quorum_sim.h): no paused fill; no pause; no fence floors for the new
  // replica. And the lock group's master never ends a pause, so a set the
  // operator walked away from stays paused: "not settled".
  bool broken_replacement_skips_paused_fill = false;
  bool broken_replacement_skips_pause = false;
  bool broken_targets_skip_floors = false;
  bool broken_pause_never_ends = false;
  int clients = 3;
  int cycles_per_client = 5;  // acquire, fence, write, release
  int locks = 2;
  // Keys that clients also compare-and-set, in half their cycles, with
  // ConditionalStore's steps (lock palisade.cas/KEY, fenced read, compare,
  // write under the grant, release), and read: each key's history must be
  // linearizable (tests/support/register_history.h). 0: none.
  int cas_keys = 0;
  // Their LockClient fences on acquire (it was given the store) before the
  // fenced read; false: only the read fences.
  bool cas_acquire_fences = true;
  // Negative controls of compare-and-set: read, compare and write without
  // the key's lock; take the lock but fence neither on acquire nor with the
  // read; fence on acquire but read unfenced (a write in flight at the fence
  // may land after the read: the hole the fenced read closed).
  bool broken_cas_without_lock = false;
  bool broken_cas_skips_fence = false;
  bool broken_cas_read_unfenced = false;
  NetworkFaults faults;
  double isolate_per_second = 0.03;        // chance per second that a node is cut off for a while
  double lockd_crash_per_second = 0.02;
  // Chance that a lockd node's sync is cut short by a crash (power lost while
  // the journal writes): what it sent before the sync must not depend on it.
  double lockd_crash_in_sync = 0;
  double master_stop_per_second = 0.01;    // chance per second that the master stops as planned (hands over)
  double replica_crash_per_second = 0.02;
  double client_crash = 0.1;               // chance a client dies holding its lock (its session expires)
  double pause = 0.15;                     // chance a client pauses between checking its lease and writing
  double pause_before_fence = 0.05;  // chance it pauses inside acquire, between its grant and its fence
  uint64_t pause_ms_max = 40000;           // longer than a session lease
  uint64_t max_clock_offset_ms = 200;
  ClusterTiming timing{.session_lease_ms = 12000,
                       .client_grace_ms = 45000,
                       .master_lease_ms = 4000,
                       .heartbeat_ms = 500,
                       .election_timeout_ms = 1000,
                       .max_clock_drift_ppm = 1000};
  size_t snapshot_every = 25;  // small, so that snapshots and catch-up from them happen
  // Adversaries on the network (tests/sim/adversary.h): forged and replayed
  // peer frames and replica requests, writes under wrong and superseded
  // sequencers. No read may return what they write.
  int adversaries = 1;
  bool adversary_commits = true;  // they also send commits and committed writes (repairs)
  // Negative controls: the checkers must object.
  bool broken_master_ignores_lease = false;
  // The master's lease takes no margin for clock drift
  // (PaxosOptions::broken_lease_without_drift_margin).
  bool broken_lease_without_drift_margin = false;
  // Clients use a grant whose fence failed or found a larger token's floor,
  // as LockClient::acquire would if it ignored client::grant_fence_status.
  bool broken_clients_ignore_failed_fence = false;
  // Clients count their lease from a reply's arrival, not from its request's
  // send (LockSessionOptions::broken_lease_from_reply).
  bool broken_clients_lease_from_reply = false;
  bool broken_replicas_skip_fence_floor = false;
  bool broken_lockd_ignore_lock_delay = false;
  // New masters write no MasterEpoch (LockServiceOptions::broken_no_master_epoch).
  bool broken_lockd_no_master_epoch = false;  // the lockd nodes never see the lock-delay a client asks for
  // Membership changes go around the log: the operator edits the cluster
  // file and restarts the lockd nodes one by one with it, and each takes the
  // file's members (PaxosOptions::broken_first_members_from_options).
  bool broken_members_outside_log = false;
  // The lockd driver sends peer messages and replies before the disk syncs
  // (LockdDriverOptions::broken_reply_before_sync): a crash loses what it answered.
  bool broken_lockd_reply_before_sync = false;
  // Replicas trust every client as a repairer (the old behaviour): every
  // request they decode is marked from_repairer, so the adversary's committed
  // writes and commits of its pending ones are taken.
  bool broken_replicas_trust_everyone = false;
  // Replicas take one receipt as proof that W replicas acknowledged a version,
  // so the adversary's commits carrying the receipt its own write earned pass.
  bool broken_replicas_one_receipt = false;
  // Replicas check a sequencer's token but not its lock
  // (ReplicaAuth::broken_ignore_sequencer_lock), so the adversary's writes
  // under another lock's grant are taken.
  bool broken_replicas_ignore_sequencer_lock = false;
  // The lockd nodes keep their acceptor state in the daemon's
  // LmdbPaxosStorage, and the replicas theirs in its LmdbStore (both with
  // their journals), on the simulated disk (tests/support/sim_disk.h): a crash
  // is a power loss that keeps, cuts or loses each unsynced write. With
  // lockd_crash_in_sync, power goes after 1 to 4 writes and syncs of the
  // sync, before anything is sent; half the replica crashes come inside a
  // commit. A store that does not reopen: "store does not open".
  bool lmdb_stores = false;
  bool keep_trace = false;
};

struct LockSimResult {
  std::vector<std::string> violations;
  uint64_t trace_hash = 0;
  std::string trace;  // when keep_trace
  uint64_t events = 0;
  uint64_t end_ms = 0;
  uint64_t grants = 0, epochs = 0, expired_sessions = 0;
  // Membership changes a master took to propose, and the times a node's
  // members changed (a node that applied a change, or restarted with one).
  uint64_t member_changes_proposed = 0, member_views_changed = 0;
  // lockd nodes clients' sessions learnt from the group (members, hints).
  uint64_t client_nodes_learnt = 0;
  // replica_spares: replica set changes committed (of them additions and
  // removals), those that ended otherwise, and the moves of clients to a
  // newer set.
  uint64_t replica_changes = 0, replicas_added = 0, replicas_removed = 0, replica_changes_abandoned = 0,
           views_followed = 0;
  // Of those abandoned, the paused sets the operator walked away from, which
  // the lock group's master ended.
  uint64_t replica_walk_aways = 0;
  uint64_t writes_ok = 0, writes_fenced = 0, reads_ok = 0;
  uint64_t cas_ok = 0, cas_stale = 0, cas_unknown = 0;  // cas_keys: compare-and-sets by outcome
  uint64_t lock_delays = 0;            // started by expiries, by the log
  uint64_t lock_delays_contested = 0;  // of them, ones another session's acquire ran into
  AdversaryCounters adversary;
  // lmdb_stores: power losses inside a lockd sync and inside a replica's commit.
  uint64_t lockd_power_losses_in_sync = 0, replica_power_losses_in_commit = 0;
  History history;
};

LockSimResult run_lock_sim(const LockSimOptions& options);

}  // namespace palisade::sim
