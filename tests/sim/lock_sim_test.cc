// The lock-group simulation under CI: many seeds, determinism, and negative
// controls that prove the checkers can see a broken master lease and a broken
// fence floor. Seeds are split into slices so that ctest runs them in parallel.
#include "tests/sim/lock_sim.h"

#include <catch2/catch.hpp>

#include "tests/sim/seed_sweep.h"

namespace palisade::sim {
namespace {

uint64_t seed_count() { return seed_count_from_env("PALISADE_LOCK_SIM_SEEDS", 2000); }

void run_slice(uint64_t slice, uint64_t slices) {
  uint64_t grants = 0, fenced = 0, acknowledged = 0, epochs = 0, expired = 0;
  const uint64_t runs = run_seeds(LockSimOptions{}, {seed_count(), slice, slices}, "palisade-sim --sim lock",
                                  run_lock_sim, [&](const LockSimResult& r) {
                                    grants += r.grants;
                                    fenced += r.writes_fenced;
                                    acknowledged += r.writes_ok;
                                    epochs += r.epochs;
                                    expired += r.expired_sessions;
                                  });
  // The workload must exercise what it claims to check.
  CHECK(grants > 5 * runs);
  CHECK(acknowledged > 5 * runs);
  CHECK(fenced > runs / 10);
  CHECK(epochs > runs);
  CHECK(expired > runs / 10);
}

TEST_CASE("lock sim: safety holds, seeds 1 mod 4", "[sim]") { run_slice(0, 4); }
TEST_CASE("lock sim: safety holds, seeds 2 mod 4", "[sim]") { run_slice(1, 4); }
TEST_CASE("lock sim: safety holds, seeds 3 mod 4", "[sim]") { run_slice(2, 4); }
TEST_CASE("lock sim: safety holds, seeds 0 mod 4", "[sim]") { run_slice(3, 4); }

TEST_CASE("lock sim: five lockd nodes and five replicas", "[sim]") {
  LockSimOptions o;
  o.lockd = 5;
  o.replicas = 5;
  o.clients = 4;
  run_seeds(o, {seed_count() / 10}, "palisade-sim --sim lock --lockd 5 --replicas 5 --clients 4", run_lock_sim);
}

TEST_CASE("lock sim: the same seed gives the same trace hash", "[sim]") {
  check_same_seed_same_trace(LockSimOptions{}, run_lock_sim);
}

TEST_CASE("lock sim: negative control, a master lease nobody honours is caught", "[sim]") {
  LockSimOptions broken;
  broken.broken_master_ignores_lease = true;
  const uint64_t caught = count_caught(broken, 100, run_lock_sim, [](const LockSimResult& r) {
    uint64_t two_masters = 0;
    for (const auto& v : r.violations) two_masters += v.rfind("two masters", 0) == 0 ? 1 : 0;
    return two_masters;
  });
  CHECK(caught >= 10);
}

TEST_CASE("lock sim: negative control, replicas that skip the fence floor are caught", "[sim]") {
  LockSimOptions broken;
  broken.broken_replicas_skip_fence_floor = true;
  CHECK(count_caught(broken, 100, run_lock_sim) >= 10);
}

}  // namespace
}  // namespace palisade::sim
