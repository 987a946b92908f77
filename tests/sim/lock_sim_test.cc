// The lock-group simulation under CI: many seeds, determinism, and negative
// controls that prove the checkers can see a broken master lease and a broken
// fence floor. Seeds are split into slices so that ctest runs them in parallel.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "tests/sim/lock_sim.h"

namespace palisade::sim {
namespace {

uint64_t seed_count() {
  const char* env = std::getenv("PALISADE_LOCK_SIM_SEEDS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 2000;
}

void run_slice(uint64_t slice, uint64_t slices) {
  uint64_t seeds = seed_count();
  uint64_t grants = 0, fenced = 0, acknowledged = 0, epochs = 0, expired = 0, runs = 0;
  for (uint64_t seed = 1 + slice; seed <= seeds; seed += slices) {
    LockSimOptions o;
    o.seed = seed;
    auto r = run_lock_sim(o);
    INFO("replay: palisade-sim --sim lock --seed " << seed << " --trace");
    for (const auto& v : r.violations) UNSCOPED_INFO(v);
    REQUIRE(r.violations.empty());
    grants += r.grants;
    fenced += r.writes_fenced;
    acknowledged += r.writes_ok;
    epochs += r.epochs;
    expired += r.expired_sessions;
    ++runs;
  }
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
  for (uint64_t seed = 1; seed <= seed_count() / 10; ++seed) {
    LockSimOptions o;
    o.seed = seed;
    o.lockd = 5;
    o.replicas = 5;
    o.clients = 4;
    auto r = run_lock_sim(o);
    INFO("replay: palisade-sim --sim lock --lockd 5 --replicas 5 --clients 4 --seed " << seed << " --trace");
    for (const auto& v : r.violations) UNSCOPED_INFO(v);
    REQUIRE(r.violations.empty());
  }
}

TEST_CASE("lock sim: the same seed gives the same trace hash", "[sim]") {
  for (uint64_t seed : {1, 7, 99}) {
    LockSimOptions o;
    o.seed = seed;
    auto a = run_lock_sim(o);
    auto b = run_lock_sim(o);
    CHECK(a.trace_hash == b.trace_hash);
    CHECK(a.events == b.events);
    o.seed = seed + 1000;
    CHECK(run_lock_sim(o).trace_hash != a.trace_hash);
  }
}

TEST_CASE("lock sim: negative control, a master lease nobody honours is caught", "[sim]") {
  int caught = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    LockSimOptions o;
    o.seed = seed;
    o.broken_master_ignores_lease = true;
    auto r = run_lock_sim(o);
    for (const auto& v : r.violations) caught += v.rfind("two masters", 0) == 0 ? 1 : 0;
  }
  CHECK(caught >= 10);
}

TEST_CASE("lock sim: negative control, replicas that skip the fence floor are caught", "[sim]") {
  int caught = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    LockSimOptions o;
    o.seed = seed;
    o.broken_replicas_skip_fence_floor = true;
    caught += !run_lock_sim(o).violations.empty();
  }
  CHECK(caught >= 10);
}

}  // namespace
}  // namespace palisade::sim
