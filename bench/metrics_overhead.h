// What serving metrics costs the daemons (docs/metrics.md: under 2% of the
// throughput): a bench runs one load level against fresh daemons without
// --metrics-listen and with it, scraped all the while, alternating, and
// compares the medians; and, since throughput on a shared machine moves by
// far more than 2% between runs, it measures what a scrape costs a daemon
// in CPU and the share of the daemons' CPU that scraping at that rate takes
// under the load. bench/README.md explains the numbers.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"

namespace palisade::bench {

// GETs http://ADDRESS/metrics of every address, one after the other, every
// `period`, on a thread of its own while it lives: a Prometheus server.
class MetricsScraper {
 public:
  MetricsScraper(std::vector<std::string> addresses, std::chrono::milliseconds period);
  ~MetricsScraper();
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  uint64_t scrapes() const { return scrapes_; }  // answered 200 with a body
  uint64_t failures() const { return failures_; }  // anything else

 private:
  void loop();

  const std::vector<std::string> addresses_;
  const std::chrono::milliseconds period_;
  std::atomic<uint64_t> scrapes_{0};
  std::atomic<uint64_t> failures_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// --overhead-rounds and --scrape-ms.
struct OverheadFlags {
  int rounds = 3;  // 0: skip the measurement
  int scrape_ms = 1000;
};
void add_overhead_options(CLI::App& app, OverheadFlags& flags);

// A free 127.0.0.1 port as HOST:PORT, for --metrics-listen.
std::string free_metrics_address();

// One run of the level against fresh daemons.
struct OverheadRun {
  bool metrics = false;  // served (--metrics-listen) and scraped
  double ops_per_s = 0;
  double daemon_cpu_us_per_op = 0;  // CPU time of every daemon over the timed part, per operation
  uint64_t scrapes = 0;
  uint64_t failed_scrapes = 0;
  double scrape_cpu_us = 0;  // served: a daemon's CPU time per scrape, after the load (their mean)
};

struct Overhead {
  int clients = 0;
  std::chrono::milliseconds scrape_period{0};
  std::vector<OverheadRun> runs;  // without metrics first, then alternating

  double median_ops_per_s(bool metrics) const;
  double median_cpu_us_per_op(bool metrics) const;
  double median_scrape_cpu_us() const;
  uint64_t failed_scrapes() const;
  // The daemons' CPU that scraping every daemon every scrape_period takes,
  // over their CPU under the level's load without metrics.
  double serving_cpu_share(size_t daemons) const;
  // That share at most 2%: the bound on the throughput serving can cost a
  // CPU-bound daemon (the target).
  Target target(size_t daemons) const;
};

// Runs `run(metrics)` 2 x `rounds` times, without and with metrics in turn.
Overhead measure_overhead(int clients, const OverheadFlags& flags, const std::function<OverheadRun(bool metrics)>& run);

// Times `load` (a level run with these marks) and reads the CPU time of
// `daemons` around its timed part, and the scraper's counts; when served,
// then scrapes each daemon (`addresses`, in the order of `daemons`) many
// times for the CPU one scrape costs it: one run.
OverheadRun overhead_run(bool metrics, const std::vector<pid_t>& daemons, const std::vector<std::string>& addresses,
                         const MetricsScraper* scraper, const std::function<LoadResult(const LoadMarks&)>& load);

void print_overhead(const Overhead& o, size_t daemons);
std::string overhead_json(const Overhead& o, size_t daemons);

}  // namespace palisade::bench
