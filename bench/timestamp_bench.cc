// What the fenced timestamp (token + HLC, 128 bits) costs over a plain 64-bit HLC.
// Every benchmark comes in a pair, Fenced* and Plain*, doing the same work; at the
// end a table shows fenced/plain per pair against the targets:
//   now() and sort: ratio <= 1.5;  compare, encode, decode: < 5 ns each.
// A miss is printed, never fatal: shared machines are noisy.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "base/big_endian.h"
#include "base/hybrid_clock.h"
#include "base/physical_clock.h"
#include "palisade/timestamp.h"

namespace palisade {
namespace {

// ---- The baseline: a plain 64-bit HLC with the same CAS max() rule, no token.

class PlainHlc {
 public:
  explicit PlainHlc(PhysicalClock& physical) : physical_(physical) {}

  uint64_t now() {
    const uint64_t floor = physical_.now_ms() << hlc::kLogicalBits;
    uint64_t old = last_.load(std::memory_order_relaxed);
    uint64_t next;
    do {
      next = std::max(old + 1, floor);
    } while (!last_.compare_exchange_weak(old, next, std::memory_order_acq_rel, std::memory_order_relaxed));
    return next;
  }

 private:
  PhysicalClock& physical_;
  std::atomic<uint64_t> last_{0};
};


constexpr uint64_t kSeed = 0xbe4c'0001;
constexpr size_t kPairs = 4096;  // power of two: index with a mask
constexpr size_t kSortSize = 1'000'000;

// Tokens from a small range so that equal tokens are common and the hlc decides.
FencedTimestamp random_ts(std::mt19937_64& rng) { return {rng() % 8, rng()}; }

struct Data {
  std::vector<FencedTimestamp> ts_a, ts_b;
  std::vector<uint64_t> u_a, u_b;
  std::vector<FencedTimestamp::Encoded> ts_enc;
  std::vector<std::array<uint8_t, 8>> u_enc;
  std::vector<FencedTimestamp> ts_sort;
  std::vector<uint64_t> u_sort;

  Data() {
    std::mt19937_64 rng(kSeed);
    for (size_t i = 0; i < kPairs; ++i) {
      ts_a.push_back(random_ts(rng));
      ts_b.push_back(random_ts(rng));
      u_a.push_back(rng());
      u_b.push_back(rng());
      ts_enc.push_back(ts_a.back().encode());
      u_enc.emplace_back();
      store_be64(u_enc.back().data(), u_a.back());
    }
    for (size_t i = 0; i < kSortSize; ++i) {
      ts_sort.push_back(random_ts(rng));
      u_sort.push_back(rng());
    }
  }
};

const Data& data() {
  static const Data d;
  return d;
}

SystemClock g_system_clock;
HybridClock g_fenced_clock(g_system_clock);
PlainHlc g_plain_clock(g_system_clock);

// ---- now()

void BM_FencedNow(benchmark::State& state) {
  const uint64_t token = 7;
  for (auto _ : state) {
    FencedTimestamp ts{token, g_fenced_clock.now()};
    benchmark::DoNotOptimize(ts);
  }
}
void BM_PlainNow(benchmark::State& state) {
  for (auto _ : state) {
    uint64_t v = g_plain_clock.now();
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_FencedNow);
BENCHMARK(BM_PlainNow);
BENCHMARK(BM_FencedNow)->Threads(2)->UseRealTime();
BENCHMARK(BM_PlainNow)->Threads(2)->UseRealTime();

// ---- compare

void BM_FencedCompare(benchmark::State& state) {
  const Data& d = data();
  size_t i = 0;
  for (auto _ : state) {
    bool less = d.ts_a[i] < d.ts_b[i];
    benchmark::DoNotOptimize(less);
    i = (i + 1) & (kPairs - 1);
  }
}
void BM_PlainCompare(benchmark::State& state) {
  const Data& d = data();
  size_t i = 0;
  for (auto _ : state) {
    bool less = d.u_a[i] < d.u_b[i];
    benchmark::DoNotOptimize(less);
    i = (i + 1) & (kPairs - 1);
  }
}
BENCHMARK(BM_FencedCompare);
BENCHMARK(BM_PlainCompare);

// ---- encode

void BM_FencedEncode(benchmark::State& state) {
  const Data& d = data();
  FencedTimestamp::Encoded out;
  size_t i = 0;
  for (auto _ : state) {
    d.ts_a[i].encode_to(out.data());
    benchmark::DoNotOptimize(out);
    i = (i + 1) & (kPairs - 1);
  }
}
void BM_PlainEncode(benchmark::State& state) {
  const Data& d = data();
  std::array<uint8_t, 8> out;
  size_t i = 0;
  for (auto _ : state) {
    store_be64(out.data(), d.u_a[i]);
    benchmark::DoNotOptimize(out);
    i = (i + 1) & (kPairs - 1);
  }
}
BENCHMARK(BM_FencedEncode);
BENCHMARK(BM_PlainEncode);

// ---- decode

void BM_FencedDecode(benchmark::State& state) {
  const Data& d = data();
  size_t i = 0;
  for (auto _ : state) {
    FencedTimestamp ts = FencedTimestamp::decode(d.ts_enc[i].data());
    benchmark::DoNotOptimize(ts);
    i = (i + 1) & (kPairs - 1);
  }
}
void BM_PlainDecode(benchmark::State& state) {
  const Data& d = data();
  size_t i = 0;
  for (auto _ : state) {
    uint64_t v = load_be64(d.u_enc[i].data());
    benchmark::DoNotOptimize(v);
    i = (i + 1) & (kPairs - 1);
  }
}
BENCHMARK(BM_FencedDecode);
BENCHMARK(BM_PlainDecode);

// ---- sort of 1M

void BM_FencedSort(benchmark::State& state) {
  const Data& d = data();
  std::vector<FencedTimestamp> v;
  for (auto _ : state) {
    state.PauseTiming();
    v = d.ts_sort;
    state.ResumeTiming();
    std::sort(v.begin(), v.end());
    benchmark::DoNotOptimize(v.data());
    benchmark::ClobberMemory();
  }
  if (!std::is_sorted(v.begin(), v.end())) state.SkipWithError("not sorted");
}
void BM_PlainSort(benchmark::State& state) {
  const Data& d = data();
  std::vector<uint64_t> v;
  for (auto _ : state) {
    state.PauseTiming();
    v = d.u_sort;
    state.ResumeTiming();
    std::sort(v.begin(), v.end());
    benchmark::DoNotOptimize(v.data());
    benchmark::ClobberMemory();
  }
  if (!std::is_sorted(v.begin(), v.end())) state.SkipWithError("not sorted");
}
BENCHMARK(BM_FencedSort)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlainSort)->Unit(benchmark::kMillisecond);

// ---- The summary: forwards every run to the console and keeps its time per op.

double to_ns(double t, benchmark::TimeUnit unit) {
  switch (unit) {
    case benchmark::kSecond:
      return t * 1e9;
    case benchmark::kMillisecond:
      return t * 1e6;
    case benchmark::kMicrosecond:
      return t * 1e3;
    default:
      return t;
  }
}

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal, so that logs stay readable.
  SummaryReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      // With --benchmark_repetitions, the mean stands for the repetitions.
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "mean") continue;
      // Threaded runs use real time (wall time per op); the others CPU time.
      const double t = run.threads > 1 ? run.GetAdjustedRealTime() : run.GetAdjustedCPUTime();
      ns_[run.benchmark_name()] = to_ns(t, run.time_unit);
      if (run.run_type == Run::RT_Aggregate) ns_[run.run_name.str()] = ns_[run.benchmark_name()];
    }
  }

  // Time per op of the named run, or a negative number when it did not run.
  double ns(const std::string& name) const {
    auto it = ns_.find(name);
    return it == ns_.end() ? -1 : it->second;
  }

 private:
  std::map<std::string, double> ns_;
};

enum class Target { kRatio, kAbsolute };

std::string human(double ns) {
  char buf[32];
  if (ns >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f ns", ns);
  }
  return buf;
}

void print_summary(const SummaryReporter& r) {
  struct Pair {
    const char* what;
    std::string fenced, plain;
    Target target;
    double limit;
  };
  const std::vector<Pair> pairs = {
      {"now()", "BM_FencedNow", "BM_PlainNow", Target::kRatio, 1.5},
      {"now() x2 threads", "BM_FencedNow/real_time/threads:2", "BM_PlainNow/real_time/threads:2", Target::kRatio, 1.5},
      {"compare", "BM_FencedCompare", "BM_PlainCompare", Target::kAbsolute, 5.0},
      {"encode", "BM_FencedEncode", "BM_PlainEncode", Target::kAbsolute, 5.0},
      {"decode", "BM_FencedDecode", "BM_PlainDecode", Target::kAbsolute, 5.0},
      {"sort 1M", "BM_FencedSort", "BM_PlainSort", Target::kRatio, 1.5},
  };
  std::printf("\nFenced timestamp vs plain 64-bit HLC (time per op; threaded: wall time)\n");
  std::printf("%-18s %14s %14s %8s  %-18s %s\n", "operation", "fenced", "plain", "ratio", "target", "result");
  for (const Pair& p : pairs) {
    const double f = r.ns(p.fenced), pl = r.ns(p.plain);
    char target[32];
    if (p.target == Target::kRatio) {
      std::snprintf(target, sizeof target, "ratio <= %.1f", p.limit);
    } else {
      std::snprintf(target, sizeof target, "fenced < %.0f ns", p.limit);
    }
    if (f < 0 || pl <= 0) {
      std::printf("%-18s %14s %14s %8s  %-18s %s\n", p.what, "-", "-", "-", target, "NOT RUN");
      continue;
    }
    const double ratio = f / pl;
    const bool pass = p.target == Target::kRatio ? ratio <= p.limit : f < p.limit;
    std::printf("%-18s %14s %14s %8.2f  %-18s %s\n", p.what, human(f).c_str(), human(pl).c_str(), ratio, target,
                pass ? "PASS" : "MISS");
  }
  std::fflush(stdout);
}

}  // namespace
}  // namespace palisade

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  palisade::SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  palisade::print_summary(reporter);
  benchmark::Shutdown();
  return 0;
}
