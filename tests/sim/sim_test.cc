// The quorum-store simulation under CI: many seeds, determinism, and a negative
// control that proves the checkers can see a broken fence.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "tests/sim/quorum_sim.h"

namespace palisade::sim {
namespace {

uint64_t seed_count() {
  const char* env = std::getenv("PALISADE_SIM_SEEDS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 1000;
}

TEST_CASE("sim: fence safety holds over many seeds", "[sim]") {
  uint64_t seeds = seed_count();
  uint64_t fenced = 0, acknowledged = 0, reads = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    QuorumSimOptions o;
    o.seed = seed;
    auto r = run_quorum_sim(o);
    INFO("replay: palisade-sim --seed " << seed << " --trace");
    for (const auto& v : r.violations) UNSCOPED_INFO(v);
    REQUIRE(r.violations.empty());
    fenced += r.writes_fenced;
    acknowledged += r.writes_ok;
    reads += r.reads_ok;
  }
  // The workload must exercise what it claims to check.
  CHECK(fenced > seeds);
  CHECK(acknowledged > 10 * seeds);
  CHECK(reads > 5 * seeds);
}

TEST_CASE("sim: fence safety holds with five replicas and more clients", "[sim]") {
  for (uint64_t seed = 1; seed <= seed_count() / 5; ++seed) {
    QuorumSimOptions o;
    o.seed = seed;
    o.replicas = 5;
    o.clients = 5;
    auto r = run_quorum_sim(o);
    INFO("replay: palisade-sim --replicas 5 --clients 5 --seed " << seed << " --trace");
    for (const auto& v : r.violations) UNSCOPED_INFO(v);
    REQUIRE(r.violations.empty());
  }
}

TEST_CASE("sim: the same seed gives the same trace hash", "[sim]") {
  for (uint64_t seed : {1, 7, 99}) {
    QuorumSimOptions o;
    o.seed = seed;
    auto a = run_quorum_sim(o);
    auto b = run_quorum_sim(o);
    CHECK(a.trace_hash == b.trace_hash);
    CHECK(a.events == b.events);
    o.seed = seed + 1000;
    CHECK(run_quorum_sim(o).trace_hash != a.trace_hash);
  }
}

TEST_CASE("sim: negative control, replicas that skip the fence floor are caught", "[sim]") {
  int caught = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    QuorumSimOptions o;
    o.seed = seed;
    o.broken_replicas_skip_fence_floor = true;
    caught += !run_quorum_sim(o).violations.empty();
  }
  CHECK(caught >= 25);
}

}  // namespace
}  // namespace palisade::sim
