// A whole quorum store in one process: replica cores on simulated disks, client
// coordinators with their own clocks, a faulty network, crashes, and a workload
// of lock holders that get superseded and keep writing. Deterministic per seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/sim/history.h"
#include "tests/sim/world.h"

namespace palisade::sim {

struct QuorumSimOptions {
  uint64_t seed = 1;
  int replicas = 3;  // N
  int read_quorum = 0;   // R; 0: N / 2 + 1
  int write_quorum = 0;  // W; 0: N / 2 + 1 (client::validate: R + W > N, W > N / 2)
  int clients = 3;
  int keys = 3;
  int ops_per_client = 40;
  NetworkFaults faults;
  double crash_per_second = 0.05;   // chance per simulated second that some replica crashes
  double corrupt_per_second = 0.02;  // chance per simulated second that a stored record gets a bit flip
  // At most this many replicas hold a corrupt copy of a key at once: a flip that
  // would make more is skipped (and counted). 0: no limit, the default, for W
  // corrupt copies are no excuse to lose a write: a reader then hears from fewer
  // than R intact replicas (R + W > N) and must answer Unavailable, and a corrupt
  // record may only be replaced by a repair decided against it. Runs at 0.3 with
  // no limit caught a repair over a corrupt record that did lose writes (seeds
  // 1113, 1894, 5801, 8429 before the fix), each with W corrupt copies; W - 1
  // hides that and keeps a readable copy of every acknowledged write.
  int max_corrupt_copies = 0;
  // Chance that a new holder writes without fencing first, so that its first
  // acknowledged write is what raises the floor on W replicas. 0 draws nothing
  // (the default's traces do not change).
  double unfenced_holders = 0;
  // Chance that a read is a prefix read instead (QuorumStore::scan): of
  // every key, of the keys "key", or of one key's name, a few keys a page.
  // 0 draws nothing (the default's traces do not change).
  double scans = 0;
  // Watchers (palisade::Watcher's rounds through client::WatchState, over
  // clients of their own): each reads every key by prefix, a few keys a
  // page, every 50 ms to 2 s, and once more after the heal; what they tell
  // is judged by check_watches (tests/sim/watch_checker.h) and their pages
  // as gets. 0 draws nothing (the default's traces do not change).
  int watchers = 0;
  double pause = 0.05;              // chance a client pauses (like a GC pause) before an operation
  uint64_t pause_ms_max = 60000;
  uint64_t max_clock_offset_ms = 200;  // each node's clock is off by up to this
  // Negative controls: a deliberately broken system that the checkers must
  // object to (sim_test.cc holds each to the checker it must trip).
  // Replicas ignore fence floors: "superseded holder acknowledged", "superseded write visible".
  bool broken_replicas_skip_fence_floor = false;
  // Writes do not raise the fence floor, fences still do: a write under a
  // newer token, acknowledged while that token's fence failed, does not stop
  // the older holder: "superseded holder acknowledged".
  bool broken_writes_keep_floor = false;
  // Readers ask R = N - W replicas, a quorum that misses some write quorums
  // (client::validate refuses it): "read went back in time", "acknowledged write lost".
  bool broken_quorums_do_not_intersect = false;
  // Replicas report pending versions as committed, so readers return the newest
  // pending version without counting copies: "visible though refused" (and
  // "superseded write visible"). Trips more often with pause = 0.
  bool broken_replicas_pending_as_committed = false;
  // Replicas leave pending versions out of read replies, so readers take an
  // acknowledged write whose commits have not landed for absent:
  // "acknowledged write lost".
  bool broken_replicas_hide_pending = false;
  // Replica 0 acknowledges clients' writes without storing them (nor checking
  // floors): "acknowledged write lost" (and "superseded holder acknowledged").
  bool broken_replica_acks_without_storing = false;
  // Replicas do not check checksums, so a bit flip changes a value they serve:
  // "never written with that content" (run it with a higher corrupt_per_second).
  bool broken_replicas_skip_checksum = false;
  // Writes are answered by the starting design's literal rule, "fewer than W acks with any
  // FENCED/STALE refusal: Fenced" (docs/design-changes.md 2), applied as replies
  // arrive: a refusal before the W-th ack decides Fenced, though the write may
  // reach W copies (a fence in flight reaches one replica first): "visible
  // though refused". Rare unless clients are busy and the network worse (sim_test).
  bool broken_literal_fenced_rule = false;
  // Replicas do not say what they dropped (docs/design-changes.md 16): a
  // duplicate of a write that W replicas stored, that was read and then
  // superseded, is refused `fenced` by a replica that dropped it, and its
  // writer answers Fenced: "visible though refused". Needs rough_network().
  bool broken_replicas_forget_dropped = false;
  // Replicas keep their data in the daemon's LmdbStore, with its journal, on
  // the simulated disk (tests/support/sim_disk.h), one directory each under
  // $TMPDIR: a crash is a power loss that keeps, cuts or loses each unsynced
  // write, half of them inside a commit (after 1 to 8 of its writes and syncs,
  // before any reply), and a restart reopens the store from what the disk
  // kept ("store does not open" if it cannot). No bit flips. Not with the
  // negative controls that break memory stores (skip_fence_floor,
  // writes_keep_floor, skip_checksum).
  bool lmdb_stores = false;
  // With lmdb_stores: the disk lies about the journal's syncs, so a crash
  // loses batches the replica acknowledged: "acknowledged write lost".
  bool broken_lying_journal_sync = false;
  // Readers send no read repair (CoordinatorOptions::broken_skip_read_repair):
  // safe, but reads fail that a repair would have let succeed.
  bool broken_skip_read_repair = false;
  // Scans return the newest version a listing replica holds, without the
  // read rules (CoordinatorOptions::broken_scan_trusts_listing).
  bool broken_scan_trusts_listing = false;
  // Membership (docs/design.md "The replica set"): this many replacements of
  // a replica by a spare, one at a time, while the workload runs, by an
  // operator node that plays `palisade member replace --replica` and the lock
  // group's record (tests/sim/replacer.h). The spares are replicas after the
  // set's, crashed and corrupted like them; clients follow each new set from
  // the certificates replicas hand back and send their calls in flight again
  // there, as QuorumStore does. Not with broken_quorums_do_not_intersect.
  int replacements = 0;
  // Each of those changes is a replacement, an addition of a spare (up to
  // five replicas) or a removal, whichever the set allows, drawn from the
  // seed (`palisade member add|remove --replica`).
  bool adds_and_removes = false;
  // Negative controls of the replacement: the new set is committed after the
  // fill while serving, without the pause's fill, so writes acknowledged
  // since by the replica that leaves are on too few of the new set:
  // "acknowledged write lost"...
  bool broken_replacement_skips_paused_fill = false;
  // ...there is no pause: a second fill while serving, then the new set:
  // "acknowledged write lost"...
  bool broken_replacement_skips_pause = false;
  // ...the spare is not given the fence floors, so the new set may take a
  // superseded holder's writes: "superseded holder acknowledged".
  bool broken_targets_skip_floors = false;
  // Negative control of the watch checker: watchers tell a key only the first
  // time (client::WatchState::broken_tells_new_keys_only): "watcher missed a change".
  bool broken_watcher_tells_new_keys_only = false;
  // Watchers read the replicas' change feeds, and tell every version
  // (palisade::Watcher's default); a round of prefix reads only when one is
  // due (the first, after a gap). Their rounds are then also judged by
  // "watcher missed a version".
  bool watcher_feeds = false;
  // Negative control: watchers tell a version one feed shows, before W
  // replicas are known to hold it (WatchState::broken_trusts_one_feed).
  bool broken_watcher_trusts_one_feed = false;
  bool keep_trace = false;
};

struct QuorumSimResult {
  std::vector<std::string> violations;
  uint64_t trace_hash = 0;
  std::string trace;  // when keep_trace
  uint64_t events = 0;
  uint64_t writes_ok = 0, writes_fenced = 0, writes_unknown = 0, reads_ok = 0, reads_failed = 0;
  // The availability checker's count: reads that failed although R replicas
  // were up from the read's start to its end. Some fail in a correct system
  // (messages lost or delayed past the read's timeout, a pending version whose
  // copies are on replicas that are down); a system that reads less well fails
  // more of them.
  uint64_t reads_failed_quorum_up = 0;
  // Prefix reads that answered ok (each is judged as gets of its range's keys,
  // among the reads above) and that failed.
  uint64_t scans_ok = 0, scans_failed = 0;
  // watchers: rounds completed, changes they told, rounds a page of which failed.
  uint64_t watch_rounds = 0, watch_events = 0, watch_rounds_failed = 0;
  // Bit flips made; of them, those that left W or more replicas with a corrupt
  // copy of the key; flips skipped for max_corrupt_copies.
  uint64_t bit_flips = 0, bit_flips_to_w = 0, bit_flips_skipped = 0;
  // lmdb_stores: power losses, those inside a commit, and the unsynced writes
  // they lost or cut.
  uint64_t power_losses = 0, power_losses_in_commit = 0, unsynced_writes_lost = 0;
  // replacements: the changes committed (of them, additions and removals),
  // and those that ended with the old set; how often a client moved to a
  // newer set.
  uint64_t replaced = 0, added = 0, removed = 0, replacements_abandoned = 0, views_followed = 0;
  History history;
};

QuorumSimResult run_quorum_sim(const QuorumSimOptions& options);

// `o` with busy clients on a slow, lossy network (palisade-sim
// --rough-network): one key, five clients that never pause, delays of up to
// 300 ms, a tenth of the messages delayed up to 1.8 s (inside the clients' 2 s
// timeout), a tenth lost and three in ten duplicated, and no bit flips (see
// docs/design-changes.md 14, "What this does not close"). Races that the
// default network makes rare happen here every few hundred seeds, such as a
// duplicate that arrives after its version was dropped (design change 16).
QuorumSimOptions rough_network(QuorumSimOptions o);

}  // namespace palisade::sim
