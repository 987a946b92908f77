// palisade-sim: runs the deterministic simulations.
//   palisade-sim --sim lock --seeds 2000        the lock group, replicas and clients; seeds 1..2000
//   palisade-sim --sim lock --seed 42 --trace   replays seed 42 and prints every event
//   palisade-sim --seeds 1000                   the quorum store alone (tokens handed out by the test)
//   palisade-sim --replicas 5 --read-quorum 2 --write-quorum 4 --seeds 1000    uneven quorums
//   palisade-sim --seeds 10000 --corrupt-rate 0.3                               many bit flips
//   palisade-sim --seeds 1000 --rough-network                                   busy clients, a bad network
//   palisade-sim --seeds 10000 --keep-going --quiet                             what scripts/soak runs
//   palisade-sim --sim storage --seeds 1000     the real LmdbStore on the simulated disk (tests/sim/storage_sim.h)
// Stops at the first unsafe seed unless --keep-going. The same seed always gives the same trace hash.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "tests/sim/lock_sim.h"
#include "tests/sim/quorum_sim.h"
#include "tests/sim/storage_sim.h"
#include "base/version.h"

namespace {

using namespace palisade::sim;

struct Run {
  std::vector<std::string> violations;
  uint64_t trace_hash = 0;
  std::string summary;
  std::string trace;
};

std::string u(uint64_t v) { return std::to_string(v); }

Run run_quorum(QuorumSimOptions o) {
  auto r = run_quorum_sim(o);
  std::string summary = u(r.events) + " events, writes ok " + u(r.writes_ok) + " fenced " + u(r.writes_fenced) +
                        " unknown " + u(r.writes_unknown) + ", reads ok " + u(r.reads_ok) + " failed " +
                        u(r.reads_failed) + " (" + u(r.reads_failed_quorum_up) + " with R replicas up), scans ok " +
                        u(r.scans_ok) + " failed " + u(r.scans_failed) + ", ";
  if (o.watchers > 0) {
    summary += "watch rounds " + u(r.watch_rounds) + " (" + u(r.watch_rounds_failed) + " failed), changes told " +
               u(r.watch_events) + ", ";
  }
  if (o.lmdb_stores) {
    summary += "power losses " + u(r.power_losses) + " (" + u(r.power_losses_in_commit) + " inside a commit, " +
               u(r.unsynced_writes_lost) + " unsynced writes lost or cut)";
  } else {
    summary += "bit flips " + u(r.bit_flips) + " (" + u(r.bit_flips_to_w) + " to W corrupt copies, " +
               u(r.bit_flips_skipped) + " skipped)";
  }
  if (o.replacements > 0) {
    summary += ", replica set changes " + u(r.replaced) + " (" + u(r.added) + " additions, " + u(r.removed) +
               " removals; " + u(r.replacements_abandoned) + " given up), " + u(r.views_followed) +
               " moves of clients to a newer set";
  }
  return {r.violations, r.trace_hash, summary, r.trace};
}

Run run_lock(LockSimOptions o) {
  auto r = run_lock_sim(o);
  return {r.violations, r.trace_hash,
          u(r.events) + " events, " + u(r.end_ms / 1000) + " s simulated, " + u(r.grants) + " grants, " + u(r.epochs) +
              " epochs, " + u(r.expired_sessions) + " sessions expired, writes ok " + u(r.writes_ok) + " fenced " +
              u(r.writes_fenced) + ", reads ok " + u(r.reads_ok) + ", lock-delays " + u(r.lock_delays) + " (" +
              u(r.lock_delays_contested) + " contested), adversary: " + u(r.adversary.peer_forged) +
              " forged peer frames (" + u(r.adversary.peer_forged_dropped) + " dropped), " +
              u(r.adversary.peer_replayed) + " replayed (" + u(r.adversary.peer_replays_misaddressed) +
              " misaddressed, " + u(r.adversary.peer_replays_stale) + " stale, " + u(r.adversary.peer_replays_refused) +
              " refused, " + u(r.adversary.peer_replays_taken) + " taken), " + u(r.adversary.values) + " values in " +
              u(r.adversary.writes) + " writes (" + u(r.adversary.refused) + " refused, " +
              u(r.adversary.bad_sequencer) + " of them bad_sequencer, " + u(r.adversary.stored) + " stored), " +
              u(r.adversary.commits) + " commits (" + u(r.adversary.commits_applied) + " applied), " +
              u(r.adversary.replica_replays) + " replica requests replayed, membership changes " +
              u(r.member_changes_proposed) + " proposed (" + u(r.member_views_changed) + " node views changed, " +
              u(r.client_nodes_learnt) + " nodes learnt by clients)" +
              (o.replica_spares > 0
                   ? ", replica set changes " + u(r.replica_changes) + " (" + u(r.replicas_added) + " additions, " +
                         u(r.replicas_removed) + " removals; " + u(r.replica_changes_abandoned) + " given up, " +
                         u(r.replica_walk_aways) + " of them paused and left), " + u(r.views_followed) +
                         " moves of clients to a newer set"
                   : "") +
              (o.cas_keys > 0 ? ", compare-and-sets " + u(r.cas_ok) + " ok, " + u(r.cas_stale) + " stale, " +
                                    u(r.cas_unknown) + " unknown"
                              : ""),
          r.trace};
}

Run run_storage(StorageSimOptions o) {
  auto r = run_storage_sim(o);
  return {r.violations, r.trace_hash,
          u(r.events) + " events, commits ok " + u(r.commits_ok) + " failed " + u(r.commits_failed) + ", " +
              u(r.crashes) + " crashes, " + u(r.reopens) + " opens (" + u(r.broken_restarts) +
              " after the store broke), faults: " + u(r.syncs_failed) + " syncs failed, " + u(r.writes_refused) +
              " writes refused, " + u(r.writes_torn) + " torn, " + u(r.writes_lost) + " unsynced lost or cut, " +
              u(r.in_doubt_present) + " unsettled batches found whole",
          r.trace};
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t first = 1, seeds = 1;
  bool trace = false, broken_floor = false, broken_lease = false, broken_delay = false, broken_trust = false;
  bool no_adversary_commits = false;
  bool keep_going = false, quiet = false, rough = false;
  std::string sim = "quorum";
  QuorumSimOptions q;
  LockSimOptions l;
  StorageSimOptions st;
  // --rough-network sets other defaults; options given with it still apply.
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--rough-network") q = rough_network(q);
  }
  CLI::App app{"palisade-sim: palisade in one seeded, replayable simulation"};
  app.set_version_flag("--version", palisade::version_line("palisade-sim"));
  app.add_option("--sim", sim,
                 "What to simulate: lock (lock group + store), quorum (store alone) or storage (one LmdbStore on "
                 "the simulated disk)")
      ->capture_default_str()
      ->check(CLI::IsMember({"lock", "quorum", "storage"}));
  app.add_option("--seed", first, "First (or only) seed")->capture_default_str();
  app.add_option("--seeds", seeds, "How many seeds to run from --seed on")->capture_default_str();
  app.add_flag("--trace", trace, "Print every event of each run");
  app.add_flag("--keep-going", keep_going, "Run every seed, also after an unsafe one");
  app.add_flag("--quiet", quiet, "Print only unsafe seeds and the tally");
  app.add_option("--replicas", q.replicas, "Replicas (N; W = R = N / 2 + 1 unless set)")->capture_default_str()->check(CLI::Range(1, 9));
  app.add_option("--lockd", l.lockd, "Lock group nodes (--sim lock)")->capture_default_str()->check(CLI::Range(1, 9));
  app.add_option("--lockd-spares", l.lockd_spares,
                 "More lockd nodes, outside the group until a membership change takes them in (--sim lock)")
      ->capture_default_str()
      ->check(CLI::Range(0, 6));
  app.add_option("--member-change-rate", l.member_change_per_second,
                 "Chance per simulated second that the lock group's members change: 3 or 5 of all the lockd nodes "
                 "(--sim lock)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--broken-members-outside-log", l.broken_members_outside_log,
               "Negative control: membership changes edit the cluster file and restart the lockd nodes one by one, "
               "outside the log, each taking the file's members (--sim lock; use with --member-change-rate)");
  app.add_option("--clients", q.clients, "Client processes")->capture_default_str();
  app.add_option("--ops", q.ops_per_client, "Operations per client (--sim quorum)")->capture_default_str();
  app.add_option("--cycles", l.cycles_per_client, "Lock cycles per client (--sim lock)")->capture_default_str();
  app.add_option("--cas-keys", l.cas_keys,
                 "Keys that clients also compare-and-set (ConditionalStore's steps) in half their cycles; each key's "
                 "history must be linearizable (--sim lock)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  bool cas_no_acquire_fence = false;
  app.add_flag("--cas-no-acquire-fence", cas_no_acquire_fence,
               "Compare-and-sets fence only with their read, not on acquire too (a LockClient not given the store; "
               "--sim lock)");
  app.add_flag("--broken-cas-without-lock", l.broken_cas_without_lock,
               "Negative control: compare-and-sets read, compare and write without the key's lock (--sim lock; use "
               "with --cas-keys)");
  app.add_flag("--broken-cas-skips-fence", l.broken_cas_skips_fence,
               "Negative control: compare-and-sets take the key's lock but fence neither on acquire nor with their "
               "read (--sim lock; use with --cas-keys)");
  app.add_flag("--broken-cas-read-unfenced", l.broken_cas_read_unfenced,
               "Negative control: compare-and-sets fence on acquire but read unfenced (--sim lock; use with "
               "--cas-keys)");
  app.add_flag("--broken-fence-floor", broken_floor, "Negative control: replicas ignore fence floors");
  app.add_flag("--broken-master-lease", broken_lease, "Negative control: nobody honours the master lease (--sim lock)");
  app.add_flag("--broken-lock-delay", broken_delay, "Negative control: lockd nodes ignore lock-delays (--sim lock)");
  app.add_flag("--broken-trust-everyone", broken_trust,
               "Negative control: replicas trust every client as a repairer, so the adversary's committed writes "
               "and commits are taken (--sim lock)");
  app.add_flag("--broken-one-receipt", l.broken_replicas_one_receipt,
               "Negative control: replicas take one receipt as proof of W acknowledgements (--sim lock)");
  app.add_flag("--broken-sequencer-lock", l.broken_replicas_ignore_sequencer_lock,
               "Negative control: replicas check a sequencer's token but not its lock, so one lock's grant passes "
               "for another (--sim lock)");
  app.add_flag("--broken-no-epoch", l.broken_lockd_no_master_epoch,
               "Negative control: new masters write no epoch, so an expiry an older master timed applies after a "
               "newer master renewed the session (--sim lock; caught on seed 81025392 of --cas-keys 1 --clients 4 "
               "--cycles 8 --pause 0.8)");
  app.add_flag("--broken-lease-margin", l.broken_lease_without_drift_margin,
               "Negative control: the master's lease takes no margin for clock drift (--sim lock; caught with a "
               "large --max-drift-ppm)");
  app.add_option("--max-drift-ppm", l.timing.max_clock_drift_ppm,
                 "Bound on the rate difference of two clocks, parts per million (--sim lock); the simulated clocks "
                 "drift within it")
      ->capture_default_str()
      ->check(CLI::Range(0, 200000));
  app.add_flag("--broken-ignore-fence", l.broken_clients_ignore_failed_fence,
               "Negative control: clients use a grant whose fence failed or was superseded (--sim lock)");
  app.add_flag("--broken-lease-from-reply", l.broken_clients_lease_from_reply,
               "Negative control: clients count their lease from a reply's arrival, not from its request's send "
               "(--sim lock)");
  app.add_flag("--broken-pause-never-ends", l.broken_pause_never_ends,
               "Negative control: the lock group's master never ends a paused replica set (--sim lock; use with "
               "--replacements)");
  app.add_flag("--broken-reply-before-sync", l.broken_lockd_reply_before_sync,
               "Negative control: the lockd driver answers before its journal sync (--sim lock)");
  app.add_option("--max-delay-ms", l.faults.max_delay_ms, "Ordinary network delay, uniform from 0 (--sim lock)")
      ->capture_default_str();
  app.add_option("--pause", l.pause, "Chance a client pauses between checking its lease and writing (--sim lock)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--lockd-crash-rate", l.lockd_crash_per_second,
                 "Chance per simulated second that a lockd node crashes (--sim lock)")
      ->capture_default_str();
  app.add_option("--lockd-crash-in-sync", l.lockd_crash_in_sync,
                 "Chance that a lockd node crashes in a sync, before it commits (--sim lock)")
      ->capture_default_str();
  app.add_option("--batches", st.batches, "Batches committed (--sim storage)")->capture_default_str();
  app.add_flag("--paxos-storage", st.paxos,
               "The lock group's acceptor state (LmdbPaxosStorage) in place of the replica's store (--sim storage)");
  app.add_flag("--broken-lying-fsync", st.broken_lying_journal_sync,
               "Negative control: the disk lies about the journal's fsync (--sim storage, or quorum with --lmdb)");
  app.add_flag("--lmdb", q.lmdb_stores,
               "Replicas (and lockd nodes) keep their data in the daemons' LMDB stores and journals on the simulated "
               "disk, and crash by losing power, also inside a commit (--sim quorum or lock)");
  app.add_option("--adversaries", l.adversaries, "Adversaries on the network (--sim lock; 0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 9));
  app.add_flag("--no-adversary-commits", no_adversary_commits,
               "The adversaries send no commits and no committed writes (--sim lock)");
  // The quorum simulation's other knobs and negative controls (tests/sim/quorum_sim.h).
  app.add_option("--read-quorum", q.read_quorum, "R (--sim quorum; 0: N / 2 + 1)")->capture_default_str();
  app.add_option("--write-quorum", q.write_quorum, "W (--sim quorum; 0: N / 2 + 1)")->capture_default_str();
  app.add_option("--corrupt-rate", q.corrupt_per_second, "Chance of a bit flip per simulated second (--sim quorum)")
      ->capture_default_str();
  app.add_option("--max-corrupt-copies", q.max_corrupt_copies,
                 "At most this many corrupt copies of a key at once (--sim quorum; 0: no limit)")
      ->capture_default_str();
  app.add_option("--scans", q.scans,
                 "Chance that a read is a prefix read instead, judged as gets of its range (--sim quorum)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--watchers", q.watchers,
                 "Watchers that read every key by prefix in rounds, as palisade::Watcher does; what they tell is "
                 "judged (--sim quorum)")
      ->capture_default_str()
      ->check(CLI::Range(0, 5));
  app.add_flag("--watcher-feeds", q.watcher_feeds,
               "Watchers read the replicas' change feeds and tell every version, as palisade::Watcher does by "
               "default; also judged by \"watcher missed a version\" (--sim quorum, with --watchers)");
  app.add_option("--unfenced-holders", q.unfenced_holders,
                 "Chance that a new holder writes without fencing first (--sim quorum)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--replacements", q.replacements,
                 "Replicas replaced by spares while the workload runs, one at a time, as `palisade member replace "
                 "--replica` does (--sim lock: through the lock group's record)")
      ->capture_default_str()
      ->check(CLI::Range(0, 20));
  app.add_flag("--adds-and-removes", q.adds_and_removes,
               "Each change of --replacements replaces, adds (up to 5 replicas) or removes a replica, as `palisade "
               "member replace|add|remove --replica` do");
  app.add_flag("--rough-network", rough,
               "Busy clients on a slow, lossy network, one key, no bit flips (--sim quorum; tests/sim/quorum_sim.h)");
  struct Control {
    const char* flag;
    bool QuorumSimOptions::*option;
    const char* what;
  };
  for (const Control& c : {
           Control{"--broken-read-repair", &QuorumSimOptions::broken_skip_read_repair,
                   "readers send no read repair (caught by the availability checker)"},
           Control{"--broken-scan-listing", &QuorumSimOptions::broken_scan_trusts_listing,
                   "scans return the newest version a listing replica holds, without the read rules (use with "
                   "--scans 0.3)"},
           Control{"--broken-watcher-new-keys-only", &QuorumSimOptions::broken_watcher_tells_new_keys_only,
                   "watchers tell each key only the first time (use with --watchers 1)"},
           Control{"--broken-watcher-one-feed", &QuorumSimOptions::broken_watcher_trusts_one_feed,
                   "watchers tell a version one replica's feed shows (use with --watchers 2 --watcher-feeds)"},
           Control{"--broken-write-floor", &QuorumSimOptions::broken_writes_keep_floor,
                   "writes do not raise the fence floor (fences still do)"},
           Control{"--broken-pending-committed", &QuorumSimOptions::broken_replicas_pending_as_committed,
                   "replicas report pending versions as committed"},
           Control{"--broken-hide-pending", &QuorumSimOptions::broken_replicas_hide_pending,
                   "replicas leave pending versions out of read replies"},
           Control{"--broken-lying-replica", &QuorumSimOptions::broken_replica_acks_without_storing,
                   "replica 0 acknowledges writes without storing them"},
           Control{"--broken-checksum", &QuorumSimOptions::broken_replicas_skip_checksum,
                   "replicas serve bit-flipped values (use with --corrupt-rate 0.3)"},
           Control{"--broken-fenced-rule", &QuorumSimOptions::broken_literal_fenced_rule,
                   "writes answered Fenced by the starting design's literal rule (docs/design-changes.md 2)"},
           Control{"--broken-quorums", &QuorumSimOptions::broken_quorums_do_not_intersect,
                   "readers ask N - W replicas, so read and write quorums may miss"},
           Control{"--broken-forget-dropped", &QuorumSimOptions::broken_replicas_forget_dropped,
                   "replicas do not say what they dropped, so writers count refused duplicates as final"},
           Control{"--broken-skip-paused-fill", &QuorumSimOptions::broken_replacement_skips_paused_fill,
                   "a replacement commits the new set without the paused fill (use with --replacements)"},
           Control{"--broken-skip-pause", &QuorumSimOptions::broken_replacement_skips_pause,
                   "a replacement fills twice while the set serves, with no pause (use with --replacements)"},
           Control{"--broken-target-floors", &QuorumSimOptions::broken_targets_skip_floors,
                   "a replacement gives the new replica no fence floors (use with --replacements)"},
       }) {
    app.add_flag(c.flag, q.*c.option, std::string("Negative control: ") + c.what);
  }
  CLI11_PARSE(app, argc, argv);
  // The lockd drivers log as the daemon does (forged frames, hand-overs): the
  // trace tells what they did, their log would only interleave with the report.
  spdlog::set_level(spdlog::level::off);

  q.keep_trace = l.keep_trace = st.keep_trace = trace;
  q.broken_replicas_skip_fence_floor = l.broken_replicas_skip_fence_floor = broken_floor;
  l.cas_acquire_fences = !cas_no_acquire_fence;
  l.broken_master_ignores_lease = broken_lease;
  l.broken_lockd_ignore_lock_delay = broken_delay;
  l.broken_replicas_trust_everyone = broken_trust;
  l.adversary_commits = !no_adversary_commits;
  q.broken_lying_journal_sync = st.broken_lying_journal_sync && q.lmdb_stores;
  if (sim == "quorum" && st.broken_lying_journal_sync && !q.lmdb_stores) {
    std::fprintf(stderr, "--broken-lying-fsync needs --lmdb with --sim quorum: memory stores have no disk to lie\n");
    return 2;
  }
  l.lmdb_stores = q.lmdb_stores;
  l.replicas = q.replicas;
  l.replica_spares = q.replacements;
  l.replica_adds_and_removes = q.adds_and_removes;
  l.broken_replacement_skips_paused_fill = q.broken_replacement_skips_paused_fill;
  l.broken_replacement_skips_pause = q.broken_replacement_skips_pause;
  l.broken_targets_skip_floors = q.broken_targets_skip_floors;
  l.clients = q.clients;
  bool broken =
      broken_floor || broken_lease || broken_delay || broken_trust || l.broken_lockd_reply_before_sync ||
      l.broken_members_outside_log || l.broken_replicas_ignore_sequencer_lock || l.broken_lease_without_drift_margin ||
      l.broken_lockd_no_master_epoch || l.broken_clients_ignore_failed_fence || l.broken_clients_lease_from_reply ||
      l.broken_cas_without_lock || l.broken_cas_skips_fence || l.broken_cas_read_unfenced ||
      q.broken_replicas_pending_as_committed || q.broken_replicas_hide_pending ||
      q.broken_replica_acks_without_storing || q.broken_replicas_skip_checksum || q.broken_literal_fenced_rule ||
      q.broken_quorums_do_not_intersect || q.broken_replicas_forget_dropped || q.broken_writes_keep_floor ||
      q.broken_skip_read_repair || q.broken_scan_trusts_listing || q.broken_watcher_tells_new_keys_only ||
      q.broken_watcher_trusts_one_feed || q.broken_replacement_skips_paused_fill || q.broken_replacement_skips_pause ||
      q.broken_targets_skip_floors || l.broken_pause_never_ends || st.broken_lying_journal_sync;
  uint64_t unsafe = 0;
  for (uint64_t seed = first; seed < first + seeds; ++seed) {
    q.seed = l.seed = st.seed = seed;
    Run r;
    try {
      r = sim == "lock" ? run_lock(l) : sim == "storage" ? run_storage(st) : run_quorum(q);
    } catch (const std::invalid_argument& e) {  // quorums the client refuses, options that do not mix
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    }
    if (trace) std::fputs(r.trace.c_str(), stdout);
    if (!quiet || !r.violations.empty()) {
      std::printf("seed %llu: trace %016llx, %s, %zu violations\n", static_cast<unsigned long long>(seed),
                  static_cast<unsigned long long>(r.trace_hash), r.summary.c_str(), r.violations.size());
    }
    for (const auto& v : r.violations) std::printf("  %s\n", v.c_str());
    if (!r.violations.empty()) {
      ++unsafe;
      std::printf("replay: palisade-sim --sim %s --seed %llu --trace (with the same options)\n", sim.c_str(),
                  static_cast<unsigned long long>(seed));
      if (!broken && !keep_going) return 1;
    }
  }
  std::printf("%llu of %llu seeds unsafe\n", static_cast<unsigned long long>(unsafe),
              static_cast<unsigned long long>(seeds));
  return unsafe == 0 ? 0 : 1;
}
