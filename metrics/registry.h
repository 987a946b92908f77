// Prometheus metrics for the daemons: counters, gauges and histograms with
// fixed buckets, in families with labels, kept by a Registry that renders them
// in the text exposition format 0.0.4 (render.cc).
//
//   Registry r;
//   auto& requests = r.counter("palisade_replica_requests_total", "Requests answered", {"type", "outcome"});
//   Counter& ok_writes = requests.with({"write", "ok"});  // look up once, keep the reference
//   ok_writes.inc();                                        // hot path: one relaxed atomic add
//
// Updates are relaxed atomics, so the daemons' loops update without locks
// while the HTTP thread renders. Looking up a series (Family::with) takes the
// family's mutex: do it once, or on a path that is not hot. Series live as
// long as the registry; references to them stay valid.
//
// Label cardinality is capped per family (max_series): past the cap, new
// label values all go to one series whose values are "_other", so a client
// that names a million locks cannot grow a daemon's memory or its scrape.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace palisade::metrics {

// Only grows (Prometheus: "counter").
class Counter {
 public:
  void inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  // For a count kept elsewhere (a driver's own counter), copied in by its
  // thread: the counter takes `total` when it is higher.
  void advance_to(uint64_t total);
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Goes up and down (Prometheus: "gauge").
class Gauge {
 public:
  void set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void add(int64_t d) { value_.fetch_add(d, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Observations counted into fixed buckets (Prometheus: "histogram").
class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, ascending; +Inf is implied.
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf: observations <= it
    double sum = 0;
  };
  // Each bucket is read once, so the cumulative counts never decrease and
  // +Inf is their total, even while observations come in.
  Snapshot snapshot() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1 (the last: above every bound)
  std::atomic<double> sum_{0};
};

// Bucket bounds for latencies in seconds: 100 µs to 10 s.
std::vector<double> latency_buckets();
// Bucket bounds for long tasks in seconds (a background run over a whole
// store): 10 ms to an hour.
std::vector<double> long_task_buckets();
// Bounds 1, 2, 4, ... up to `max`, for sizes and counts.
std::vector<double> power_of_two_buckets(double max);

enum class Type { kCounter, kGauge, kHistogram };

// One metric name with its label names, and a series per label values.
template <typename T>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> labels, size_t max_series,
         std::vector<double> bounds = {});
  // The series of these label values (as many as label names), created at
  // first use; "_other" values once the family holds max_series.
  T& with(const std::vector<std::string>& values);
  // The series of a family without labels.
  T& get() { return with({}); }

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& labels() const { return labels_; }
  // Calls f(values, series) for every series, by label values.
  template <typename F>
  void each(F f) const {
    std::lock_guard lock(mutex_);
    for (const auto& [values, series] : index_) f(values, *series);
  }

 private:
  const std::string name_, help_;
  const std::vector<std::string> labels_;
  const size_t max_series_;
  const std::vector<double> bounds_;  // histograms'
  mutable std::mutex mutex_;
  std::deque<T> series_;  // a deque: references stay valid as it grows
  std::map<std::vector<std::string>, T*> index_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class Registry {
 public:
  // Registers a family. A name registered twice, or bounds that do not
  // ascend, are bugs: std::logic_error. `max_series` caps its label
  // values (see above).
  CounterFamily& counter(std::string name, std::string help, std::vector<std::string> labels = {},
                         size_t max_series = kDefaultMaxSeries);
  GaugeFamily& gauge(std::string name, std::string help, std::vector<std::string> labels = {},
                     size_t max_series = kDefaultMaxSeries);
  HistogramFamily& histogram(std::string name, std::string help, std::vector<double> bounds,
                             std::vector<std::string> labels = {}, size_t max_series = kDefaultMaxSeries);

  // Runs `collect` on the rendering thread before each render: for values
  // that any thread may read at any time (file sizes, atomics kept
  // elsewhere), which then cost the daemon's loop nothing.
  void before_render(std::function<void()> collect);

  // A counter kept elsewhere that any thread may read (an atomic): `read` at
  // each render.
  void counter_from(std::string name, std::string help, std::function<uint64_t()> read);

  // Every family in the text exposition format 0.0.4, in registration order.
  std::string render() const;

  static constexpr size_t kDefaultMaxSeries = 200;

 private:
  void claim(const std::string& name);

  mutable std::mutex mutex_;
  std::deque<CounterFamily> counters_;
  std::deque<GaugeFamily> gauges_;
  std::deque<HistogramFamily> histograms_;
  struct Entry {
    Type type;
    size_t index;
  };
  std::vector<Entry> order_;
  std::set<std::string> names_;
  std::vector<std::function<void()>> collectors_;
};

}  // namespace palisade::metrics
