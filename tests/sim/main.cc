// palisade-sim: runs the deterministic quorum-store simulation.
//   palisade-sim --seeds 1000            runs seeds 1..1000, stops at the first unsafe one
//   palisade-sim --seed 42 --trace       replays seed 42 and prints every event
// The same seed always gives the same trace hash.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "tests/sim/quorum_sim.h"

using palisade::sim::QuorumSimOptions;
using palisade::sim::run_quorum_sim;

int main(int argc, char** argv) {
  uint64_t first = 1, seeds = 1;
  bool trace = false, broken = false;
  QuorumSimOptions o;
  CLI::App app{"palisade-sim: the quorum store in one seeded, replayable simulation"};
  app.add_option("--seed", first, "First (or only) seed")->capture_default_str();
  app.add_option("--seeds", seeds, "How many seeds to run from --seed on")->capture_default_str();
  app.add_flag("--trace", trace, "Print every event of each run");
  app.add_option("--replicas", o.replicas, "Replicas (N; W = R = N / 2 + 1)")->capture_default_str()->check(CLI::Range(1, 9));
  app.add_option("--clients", o.clients, "Client processes")->capture_default_str();
  app.add_option("--ops", o.ops_per_client, "Operations per client")->capture_default_str();
  app.add_flag("--broken-fence-floor", broken, "Negative control: replicas ignore fence floors");
  CLI11_PARSE(app, argc, argv);

  o.keep_trace = trace;
  o.broken_replicas_skip_fence_floor = broken;
  uint64_t unsafe = 0;
  for (uint64_t seed = first; seed < first + seeds; ++seed) {
    o.seed = seed;
    auto r = run_quorum_sim(o);
    if (trace) std::fputs(r.trace.c_str(), stdout);
    std::printf("seed %llu: trace %016llx, %llu events, writes ok %llu fenced %llu unknown %llu, reads ok %llu "
                "failed %llu, %zu violations\n",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(r.trace_hash),
                static_cast<unsigned long long>(r.events), static_cast<unsigned long long>(r.writes_ok),
                static_cast<unsigned long long>(r.writes_fenced), static_cast<unsigned long long>(r.writes_unknown),
                static_cast<unsigned long long>(r.reads_ok), static_cast<unsigned long long>(r.reads_failed),
                r.violations.size());
    for (const auto& v : r.violations) std::printf("  %s\n", v.c_str());
    if (!r.violations.empty()) {
      ++unsafe;
      std::printf("replay: palisade-sim --replicas %d --clients %d --ops %d --seed %llu --trace%s\n", o.replicas,
                  o.clients, o.ops_per_client, static_cast<unsigned long long>(seed), broken ? " --broken-fence-floor" : "");
      if (!broken) return 1;
    }
  }
  std::printf("%llu of %llu seeds unsafe\n", static_cast<unsigned long long>(unsafe),
              static_cast<unsigned long long>(seeds));
  return unsafe == 0 ? 0 : 1;
}
