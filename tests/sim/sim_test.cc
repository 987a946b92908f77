// The quorum-store simulation under CI: many seeds, determinism, and a negative
// control that proves the checkers can see a broken fence.
#include <catch2/catch.hpp>

#include "tests/sim/quorum_sim.h"
#include "tests/sim/seed_sweep.h"

namespace palisade::sim {
namespace {

uint64_t seed_count() { return seed_count_from_env("PALISADE_SIM_SEEDS", 1000); }

TEST_CASE("sim: fence safety holds over many seeds", "[sim]") {
  uint64_t fenced = 0, acknowledged = 0, reads = 0;
  const uint64_t seeds =
      run_seeds(QuorumSimOptions{}, {seed_count()}, "palisade-sim", run_quorum_sim, [&](const QuorumSimResult& r) {
        fenced += r.writes_fenced;
        acknowledged += r.writes_ok;
        reads += r.reads_ok;
      });
  // The workload must exercise what it claims to check.
  CHECK(fenced > seeds);
  CHECK(acknowledged > 10 * seeds);
  CHECK(reads > 5 * seeds);
}

TEST_CASE("sim: fence safety holds with five replicas and more clients", "[sim]") {
  QuorumSimOptions o;
  o.replicas = 5;
  o.clients = 5;
  run_seeds(o, {seed_count() / 5}, "palisade-sim --replicas 5 --clients 5", run_quorum_sim);
}

TEST_CASE("sim: the same seed gives the same trace hash", "[sim]") {
  check_same_seed_same_trace(QuorumSimOptions{}, run_quorum_sim);
}

TEST_CASE("sim: negative control, replicas that skip the fence floor are caught", "[sim]") {
  QuorumSimOptions broken;
  broken.broken_replicas_skip_fence_floor = true;
  CHECK(count_caught(broken, 50, run_quorum_sim) >= 25);
}

}  // namespace
}  // namespace palisade::sim
