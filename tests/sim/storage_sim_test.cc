// The storage simulation (tests/sim/storage_sim.h) under CI: the real LmdbStore
// on the simulated disk over many seeds, determinism, and the negative control
// (a disk that lies about the journal's fsync) that the checker must catch.
#include <catch2/catch.hpp>

#include <string>

#include "tests/sim/seed_sweep.h"
#include "tests/sim/storage_sim.h"

namespace palisade::sim {
namespace {

// PALISADE_STORAGE_SIM_SEEDS: seeds of the sweep, in four slices (10,000 by default).
uint64_t seed_count() { return seed_count_from_env("PALISADE_STORAGE_SIM_SEEDS", 10000); }

// Runs `o` over `seeds` (each must be clean) and adds up the results' counts.
struct Sweep {
  StorageSimResult total;
  uint64_t seeds = 0;
};
Sweep sweep_total(const StorageSimOptions& o, SeedSlice seeds, std::string_view replay) {
  Sweep out;
  StorageSimResult& total = out.total;
  out.seeds = run_seeds(o, seeds, replay, run_storage_sim, [&](const StorageSimResult& r) {
    total.commits_ok += r.commits_ok;
    total.commits_failed += r.commits_failed;
    total.crashes += r.crashes;
    total.syncs_failed += r.syncs_failed;
    total.writes_refused += r.writes_refused;
    total.writes_torn += r.writes_torn;
    total.writes_lost += r.writes_lost;
    total.in_doubt_present += r.in_doubt_present;
  });
  return out;
}

void sweep(uint64_t slice) {
  const auto [total, seeds] = sweep_total({}, {seed_count(), slice, 4}, "palisade-sim --sim storage");
  // The workload must exercise what it claims to check.
  CHECK(total.commits_ok > 20 * seeds);
  CHECK(total.crashes > seeds);
  CHECK(total.commits_failed > seeds / 4);
  CHECK(total.syncs_failed > seeds / 10);
  CHECK(total.writes_refused > seeds / 10);
  CHECK(total.writes_torn > seeds / 10);
  CHECK(total.writes_lost > seeds / 4);
  CHECK(total.in_doubt_present > 0);  // failed or cut-short batches that came back whole
}

// Runs `broken` (a disk lying about the journal's fsync) over seeds 1..50: how
// many seeds were caught, and on how many an acknowledged batch was lost (the
// others: a journal hole the store refuses to open on).
std::pair<uint64_t, uint64_t> lying_disk_caught(StorageSimOptions broken) {
  broken.broken_lying_journal_sync = true;
  uint64_t lost = 0;
  const uint64_t caught = count_caught(broken, 50, run_storage_sim, [&](const StorageSimResult& r) {
    bool lost_here = false;
    for (const std::string& v : r.violations) lost_here |= v.find("acknowledged batch lost") != std::string::npos;
    lost += lost_here;
    return r.violations.empty() ? 0 : 1;
  });
  return {caught, lost};
}

TEST_CASE("storage sim: acknowledged batches survive crashes and faults (slice 1)", "[sim][storage]") { sweep(0); }
TEST_CASE("storage sim: acknowledged batches survive crashes and faults (slice 2)", "[sim][storage]") { sweep(1); }
TEST_CASE("storage sim: acknowledged batches survive crashes and faults (slice 3)", "[sim][storage]") { sweep(2); }
TEST_CASE("storage sim: acknowledged batches survive crashes and faults (slice 4)", "[sim][storage]") { sweep(3); }

TEST_CASE("storage sim: the same seed gives the same trace", "[sim][storage]") {
  check_same_seed_same_trace(StorageSimOptions{}, run_storage_sim);
  StorageSimOptions paxos;
  paxos.paxos = true;
  check_same_seed_same_trace(paxos, run_storage_sim);
}

TEST_CASE("storage sim: a disk that lies about the journal's fsync loses acknowledged batches", "[sim][storage]") {
  // Caught either way: an acknowledged batch is missing after a crash, or the
  // journal finds a record missing with a later one intact and the store
  // refuses to open.
  const auto [caught, lost] = lying_disk_caught({});
  CHECK(caught >= 25);  // 49 of 50
  CHECK(lost >= 5);  // 10 of 50
}

// The lock group's acceptor state under the same faults: PALISADE_STORAGE_SIM_SEEDS / 2 seeds, two slices.
void paxos_sweep(uint64_t slice) {
  StorageSimOptions o;
  o.paxos = true;
  const auto [total, seeds] =
      sweep_total(o, {seed_count() / 2, slice, 2}, "palisade-sim --sim storage --paxos-storage");
  CHECK(total.commits_ok > 20 * seeds);
  CHECK(total.commits_failed > seeds);
  CHECK(total.crashes > seeds);
  CHECK(total.writes_lost > seeds / 4);
  CHECK(total.in_doubt_present > 0);
}

TEST_CASE("storage sim: the acceptor state survives crashes and faults (slice 1)", "[sim][storage]") { paxos_sweep(0); }
TEST_CASE("storage sim: the acceptor state survives crashes and faults (slice 2)", "[sim][storage]") { paxos_sweep(1); }

TEST_CASE("storage sim: the acceptor state on a disk that lies about the journal's fsync", "[sim][storage]") {
  StorageSimOptions broken;
  broken.paxos = true;
  const auto [caught, lost] = lying_disk_caught(broken);
  CHECK(caught >= 25);  // 47 of 50
  CHECK(lost >= 3);  // 8 of 50
}

}  // namespace
}  // namespace palisade::sim
