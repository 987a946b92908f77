#include "metrics/registry.h"

#include <algorithm>
#include <stdexcept>

namespace palisade::metrics {

void Counter::advance_to(uint64_t total) {
  uint64_t seen = value_.load(std::memory_order_relaxed);
  while (seen < total && !value_.compare_exchange_weak(seen, total, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::observe(double v) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.cumulative.reserve(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(total);
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> latency_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> long_task_buckets() { return {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}; }

std::vector<double> power_of_two_buckets(double max) {
  std::vector<double> bounds;
  for (double b = 1; b <= max; b *= 2) bounds.push_back(b);
  return bounds;
}

template <typename T>
Family<T>::Family(std::string name, std::string help, std::vector<std::string> labels, size_t max_series,
                  std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      labels_(std::move(labels)),
      max_series_(std::max<size_t>(max_series, 1)),
      bounds_(std::move(bounds)) {}

template <typename T>
T& Family<T>::with(const std::vector<std::string>& values) {
  if (values.size() != labels_.size()) {
    throw std::logic_error(name_ + " takes " + std::to_string(labels_.size()) + " label values");
  }
  std::lock_guard lock(mutex_);
  auto found = index_.find(values);
  if (found != index_.end()) return *found->second;
  // The last place is kept for the "_other" series.
  const bool full = index_.size() + 1 >= max_series_;
  const std::vector<std::string> key = full ? std::vector<std::string>(labels_.size(), "_other") : values;
  if (full) {
    found = index_.find(key);
    if (found != index_.end()) return *found->second;
  }
  T* series = nullptr;
  if constexpr (std::is_same_v<T, Histogram>) {
    series = &series_.emplace_back(bounds_);
  } else {
    series = &series_.emplace_back();
  }
  index_.emplace(key, series);
  return *series;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

void Registry::claim(const std::string& name) {
  if (!names_.insert(name).second) throw std::logic_error("metric " + name + " is registered twice");
}

void Registry::before_render(std::function<void()> collect) {
  std::lock_guard lock(mutex_);
  collectors_.push_back(std::move(collect));
}

void Registry::counter_from(std::string name, std::string help, std::function<uint64_t()> read) {
  Counter& c = counter(std::move(name), std::move(help)).get();
  before_render([&c, read = std::move(read)] { c.advance_to(read()); });
}

CounterFamily& Registry::counter(std::string name, std::string help, std::vector<std::string> labels,
                                 size_t max_series) {
  std::lock_guard lock(mutex_);
  claim(name);
  order_.push_back({Type::kCounter, counters_.size()});
  return counters_.emplace_back(std::move(name), std::move(help), std::move(labels), max_series);
}

GaugeFamily& Registry::gauge(std::string name, std::string help, std::vector<std::string> labels, size_t max_series) {
  std::lock_guard lock(mutex_);
  claim(name);
  order_.push_back({Type::kGauge, gauges_.size()});
  return gauges_.emplace_back(std::move(name), std::move(help), std::move(labels), max_series);
}

HistogramFamily& Registry::histogram(std::string name, std::string help, std::vector<double> bounds,
                                     std::vector<std::string> labels, size_t max_series) {
  if (!std::is_sorted(bounds.begin(), bounds.end())) throw std::logic_error(name + ": bucket bounds must ascend");
  std::lock_guard lock(mutex_);
  claim(name);
  order_.push_back({Type::kHistogram, histograms_.size()});
  return histograms_.emplace_back(std::move(name), std::move(help), std::move(labels), max_series, std::move(bounds));
}

}  // namespace palisade::metrics
