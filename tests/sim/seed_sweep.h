// What the simulation tests share: running many seeds (in slices, so that ctest
// runs the slices in parallel) with every run free of violations, the same seed
// giving the same trace, and negative controls counting how often the checkers
// object to a deliberately broken system. Works for any simulation whose
// options have a `seed` and whose result has `violations`, `trace_hash` and
// `events`.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace palisade::sim {

// How many seeds CI runs: the environment variable `var` when it is set, else `ci_default`.
inline uint64_t seed_count_from_env(const char* var, uint64_t ci_default) {
  const char* env = std::getenv(var);
  return env != nullptr ? std::strtoull(env, nullptr, 10) : ci_default;
}

// Seeds 1..count, or one of `slices` interleaved slices of them: slice i holds
// the seeds s with (s - 1) % slices == i.
struct SeedSlice {
  uint64_t count = 0;
  uint64_t index = 0;
  uint64_t slices = 1;
};

// Runs `base` with each seed of `seeds`; each run must have no violations (a
// failure lists them and names the command that replays the seed: `replay`
// with " --seed N --trace"). Hands each result to `tally`; returns how many
// seeds ran.
template <typename Options, typename Run, typename Tally>
uint64_t run_seeds(const Options& base, SeedSlice seeds, std::string_view replay, Run run, Tally tally) {
  uint64_t runs = 0;
  for (uint64_t seed = 1 + seeds.index; seed <= seeds.count; seed += seeds.slices) {
    Options o = base;
    o.seed = seed;
    auto r = run(o);
    INFO("replay: " << replay << " --seed " << seed << " --trace");
    for (const auto& v : r.violations) UNSCOPED_INFO(v);
    REQUIRE(r.violations.empty());
    tally(r);
    ++runs;
  }
  return runs;
}

template <typename Options, typename Run>
uint64_t run_seeds(const Options& base, SeedSlice seeds, std::string_view replay, Run run) {
  return run_seeds(base, seeds, replay, run, [](const auto&) {});
}

// The same seed gives the same trace hash and number of events, and another
// seed another trace hash.
template <typename Options, typename Run>
void check_same_seed_same_trace(const Options& base, Run run) {
  for (uint64_t seed : {1, 7, 99}) {
    INFO("seed " << seed);
    Options o = base;
    o.seed = seed;
    auto a = run(o);
    auto b = run(o);
    CHECK(a.trace_hash == b.trace_hash);
    CHECK(a.events == b.events);
    o.seed = seed + 1000;
    CHECK(run(o).trace_hash != a.trace_hash);
  }
}

// A negative control: runs `broken` with seeds 1..seeds and adds up what
// `caught` counts in each result (by default: 1 for a run with any violation).
template <typename Options, typename Run, typename Caught>
uint64_t count_caught(const Options& broken, uint64_t seeds, Run run, Caught caught) {
  uint64_t total = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    Options o = broken;
    o.seed = seed;
    total += caught(run(o));
  }
  return total;
}

template <typename Options, typename Run>
uint64_t count_caught(const Options& broken, uint64_t seeds, Run run) {
  return count_caught(broken, seeds, run, [](const auto& r) { return r.violations.empty() ? 0 : 1; });
}

}  // namespace palisade::sim
