// palisade-sim: runs the deterministic simulations.
//   palisade-sim --sim lock --seeds 2000        the lock group, replicas and clients; seeds 1..2000
//   palisade-sim --sim lock --seed 42 --trace   replays seed 42 and prints every event
//   palisade-sim --seeds 1000                   the quorum store alone (tokens handed out by the test)
// Stops at the first unsafe seed. The same seed always gives the same trace hash.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "tests/sim/lock_sim.h"
#include "tests/sim/quorum_sim.h"

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
  return {r.violations, r.trace_hash,
          u(r.events) + " events, writes ok " + u(r.writes_ok) + " fenced " + u(r.writes_fenced) + " unknown " +
              u(r.writes_unknown) + ", reads ok " + u(r.reads_ok) + " failed " + u(r.reads_failed),
          r.trace};
}

Run run_lock(LockSimOptions o) {
  auto r = run_lock_sim(o);
  return {r.violations, r.trace_hash,
          u(r.events) + " events, " + u(r.end_ms / 1000) + " s simulated, " + u(r.grants) + " grants, " +
              u(r.epochs) + " epochs, " + u(r.expired_sessions) + " sessions expired, writes ok " + u(r.writes_ok) +
              " fenced " + u(r.writes_fenced) + ", reads ok " + u(r.reads_ok),
          r.trace};
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t first = 1, seeds = 1;
  bool trace = false, broken_floor = false, broken_lease = false;
  std::string sim = "quorum";
  QuorumSimOptions q;
  LockSimOptions l;
  CLI::App app{"palisade-sim: palisade in one seeded, replayable simulation"};
  app.add_option("--sim", sim, "What to simulate: lock (lock group + store) or quorum (store alone)")
      ->capture_default_str()
      ->check(CLI::IsMember({"lock", "quorum"}));
  app.add_option("--seed", first, "First (or only) seed")->capture_default_str();
  app.add_option("--seeds", seeds, "How many seeds to run from --seed on")->capture_default_str();
  app.add_flag("--trace", trace, "Print every event of each run");
  app.add_option("--replicas", q.replicas, "Replicas (N; W = R = N / 2 + 1)")->capture_default_str()->check(CLI::Range(1, 9));
  app.add_option("--lockd", l.lockd, "Lock group nodes (--sim lock)")->capture_default_str()->check(CLI::Range(1, 9));
  app.add_option("--clients", q.clients, "Client processes")->capture_default_str();
  app.add_option("--ops", q.ops_per_client, "Operations per client (--sim quorum)")->capture_default_str();
  app.add_option("--cycles", l.cycles_per_client, "Lock cycles per client (--sim lock)")->capture_default_str();
  app.add_flag("--broken-fence-floor", broken_floor, "Negative control: replicas ignore fence floors");
  app.add_flag("--broken-master-lease", broken_lease, "Negative control: nobody honours the master lease (--sim lock)");
  CLI11_PARSE(app, argc, argv);

  q.keep_trace = l.keep_trace = trace;
  q.broken_replicas_skip_fence_floor = l.broken_replicas_skip_fence_floor = broken_floor;
  l.broken_master_ignores_lease = broken_lease;
  l.replicas = q.replicas;
  l.clients = q.clients;
  bool broken = broken_floor || broken_lease;
  uint64_t unsafe = 0;
  for (uint64_t seed = first; seed < first + seeds; ++seed) {
    q.seed = l.seed = seed;
    Run r = sim == "lock" ? run_lock(l) : run_quorum(q);
    if (trace) std::fputs(r.trace.c_str(), stdout);
    std::printf("seed %llu: trace %016llx, %s, %zu violations\n", static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(r.trace_hash), r.summary.c_str(), r.violations.size());
    for (const auto& v : r.violations) std::printf("  %s\n", v.c_str());
    if (!r.violations.empty()) {
      ++unsafe;
      std::printf("replay: palisade-sim --sim %s --seed %llu --trace (with the same options)\n", sim.c_str(),
                  static_cast<unsigned long long>(seed));
      if (!broken) return 1;
    }
  }
  std::printf("%llu of %llu seeds unsafe\n", static_cast<unsigned long long>(unsafe),
              static_cast<unsigned long long>(seeds));
  return unsafe == 0 ? 0 : 1;
}
