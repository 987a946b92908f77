#include "bench/metrics_overhead.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <httplib.h>

#include "cli/process.h"

namespace palisade::bench {

MetricsScraper::MetricsScraper(std::vector<std::string> addresses, std::chrono::milliseconds period)
    : addresses_(std::move(addresses)), period_(period), thread_([this] { loop(); }) {}

MetricsScraper::~MetricsScraper() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

namespace {

// One GET /metrics, on a connection of its own as Prometheus makes.
bool scrape(const std::string& address) {
  const size_t colon = address.rfind(':');
  httplib::Client client(address.substr(0, colon), std::stoi(address.substr(colon + 1)));
  client.set_connection_timeout(1);
  client.set_read_timeout(5);
  auto r = client.Get("/metrics");
  return r && r->status == 200 && !r->body.empty();
}

// CPU time of every thread of `pid` so far, in ns (/proc/PID/task/*/schedstat:
// finer than the clock ticks of /proc/PID/stat, which a few hundred scrapes
// barely move).
double cpu_ns(pid_t pid) {
  double total = 0;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    std::ifstream in(task.path() / "schedstat");
    double ns = 0;
    if (in >> ns) total += ns;
  }
  if (ec) throw std::runtime_error("cannot read " + tasks + ": " + ec.message());
  return total;
}

constexpr int kCostScrapes = 300;  // per daemon, for the CPU one scrape costs

}  // namespace

void MetricsScraper::loop() {
  std::unique_lock lock(mu_);
  do {
    lock.unlock();
    for (const std::string& address : addresses_) ++(scrape(address) ? scrapes_ : failures_);
    lock.lock();
  } while (!wake_.wait_for(lock, period_, [this] { return stopping_; }));
}

std::string free_metrics_address() {
  const std::string endpoint = cli::free_endpoints(1).at(0);  // tcp://127.0.0.1:PORT
  return endpoint.substr(endpoint.find("//") + 2);
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

template <typename Field>
double median_of(const std::vector<OverheadRun>& runs, bool metrics, Field field) {
  std::vector<double> values;
  for (const OverheadRun& r : runs) {
    if (r.metrics == metrics) values.push_back(r.*field);
  }
  return median(values);
}

}  // namespace

double Overhead::median_ops_per_s(bool metrics) const { return median_of(runs, metrics, &OverheadRun::ops_per_s); }

double Overhead::median_cpu_us_per_op(bool metrics) const {
  return median_of(runs, metrics, &OverheadRun::daemon_cpu_us_per_op);
}

double Overhead::median_scrape_cpu_us() const { return median_of(runs, true, &OverheadRun::scrape_cpu_us); }

double Overhead::serving_cpu_share(size_t daemons) const {
  const double scrapes_per_s = static_cast<double>(daemons) * 1000.0 / static_cast<double>(scrape_period.count());
  const double load_cpu_us_per_s = median_cpu_us_per_op(false) * median_ops_per_s(false);
  return load_cpu_us_per_s > 0 ? scrapes_per_s * median_scrape_cpu_us() / load_cpu_us_per_s : 0;
}

uint64_t Overhead::failed_scrapes() const {
  uint64_t n = 0;
  for (const OverheadRun& r : runs) n += r.failed_scrapes;
  return n;
}

Target Overhead::target(size_t daemons) const {
  return {"serving metrics, scraped every " + std::to_string(scrape_period.count()) +
              " ms: <= 2% of the daemons' CPU at " + std::to_string(clients) + " clients [%]",
          100 * serving_cpu_share(daemons), 2, true};
}

void add_overhead_options(CLI::App& app, OverheadFlags& flags) {
  app.add_option("--overhead-rounds", flags.rounds,
                 "Runs of the largest client level without and with metrics served (--metrics-listen) and "
                 "scraped, alternating, for the cost of serving metrics (0: skip)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  app.add_option("--scrape-ms", flags.scrape_ms, "How often the overhead runs scrape /metrics of every daemon")
      ->capture_default_str()
      ->check(CLI::Range(10, 60000));
}

Overhead measure_overhead(int clients, const OverheadFlags& flags,
                          const std::function<OverheadRun(bool metrics)>& run) {
  Overhead o;
  o.clients = clients;
  o.scrape_period = std::chrono::milliseconds(flags.scrape_ms);
  for (int i = 0; i < flags.rounds; ++i) {
    for (bool metrics : {false, true}) {
      OverheadRun r = run(metrics);
      std::printf("  metrics overhead, round %d, %s: %.0f ops/s, daemons' CPU %.1f us/op", i + 1,
                  metrics ? "served" : "off", r.ops_per_s, r.daemon_cpu_us_per_op);
      if (metrics)
        std::printf(", %llu scrapes, %.0f us of CPU each", static_cast<unsigned long long>(r.scrapes), r.scrape_cpu_us);
      std::printf("\n");
      std::fflush(stdout);
      o.runs.push_back(r);
    }
  }
  return o;
}

OverheadRun overhead_run(bool metrics, const std::vector<pid_t>& daemons, const std::vector<std::string>& addresses,
                         const MetricsScraper* scraper, const std::function<LoadResult(const LoadMarks&)>& load) {
  // In ns, not clock ticks: a short run at a slow moment costs the daemons less than one tick.
  const auto daemons_cpu_ns = [&] {
    double ns = 0;
    for (pid_t pid : daemons) ns += cpu_ns(pid);
    return ns;
  };
  double cpu_start = 0, cpu_stop = 0;
  const LoadResult l =
      load({.start = [&] { cpu_start = daemons_cpu_ns(); }, .stop = [&] { cpu_stop = daemons_cpu_ns(); }});
  if (l.errors != 0) throw std::runtime_error("metrics overhead: an operation failed: " + l.first_error);
  OverheadRun r;
  r.metrics = metrics;
  r.ops_per_s = l.ops_per_s;
  r.daemon_cpu_us_per_op = l.ops == 0 ? 0 : (cpu_stop - cpu_start) / 1000 / static_cast<double>(l.ops);
  if (scraper != nullptr) {
    r.scrapes = scraper->scrapes();
    r.failed_scrapes = scraper->failures();
  }
  if (metrics && !addresses.empty()) {
    double ns = 0;
    for (size_t i = 0; i < daemons.size() && i < addresses.size(); ++i) {
      const double before = cpu_ns(daemons[i]);
      for (int n = 0; n < kCostScrapes; ++n) {
        if (!scrape(addresses[i])) ++r.failed_scrapes;
      }
      ns += cpu_ns(daemons[i]) - before;
    }
    r.scrape_cpu_us = ns / 1000 / kCostScrapes / static_cast<double>(std::min(daemons.size(), addresses.size()));
  }
  return r;
}

void print_overhead(const Overhead& o, size_t daemons) {
  const double off = o.median_ops_per_s(false), on = o.median_ops_per_s(true);
  const double cpu_off = o.median_cpu_us_per_op(false), cpu_on = o.median_cpu_us_per_op(true);
  std::printf("\nmetrics overhead at %d clients (%zu runs, medians; scraped every %lld ms):\n", o.clients,
              o.runs.size(), static_cast<long long>(o.scrape_period.count()));
  std::printf("  ops/s without %.0f, served %.0f (%.3fx); daemons' CPU us/op without %.1f, served %.1f (%.3fx)%s\n",
              off, on, off > 0 ? on / off : 0, cpu_off, cpu_on, cpu_off > 0 ? cpu_on / cpu_off : 0,
              o.failed_scrapes() > 0 ? (", " + std::to_string(o.failed_scrapes()) + " failed scrapes").c_str() : "");
  std::printf("  a scrape costs a daemon %.0f us of CPU: scraping %zu daemons every %lld ms takes %.3f%% of their CPU\n"
              "  at this level (throughput moves by far more between runs here; the CPU share is the measure)\n",
              o.median_scrape_cpu_us(), daemons, static_cast<long long>(o.scrape_period.count()),
              100 * o.serving_cpu_share(daemons));
}

std::string overhead_json(const Overhead& o, size_t daemons) {
  std::ostringstream j;
  j << "{\"clients\": " << o.clients << ", \"scrape_ms\": " << o.scrape_period.count()
    << ", \"median_ops_per_s_without\": " << o.median_ops_per_s(false)
    << ", \"median_ops_per_s_served\": " << o.median_ops_per_s(true)
    << ", \"median_daemon_cpu_us_per_op_without\": " << o.median_cpu_us_per_op(false)
    << ", \"median_daemon_cpu_us_per_op_served\": " << o.median_cpu_us_per_op(true)
    << ", \"median_scrape_cpu_us\": " << o.median_scrape_cpu_us() << ", \"daemons\": " << daemons
    << ", \"serving_cpu_share\": " << o.serving_cpu_share(daemons) << ", \"runs\": [";
  for (size_t i = 0; i < o.runs.size(); ++i) {
    const OverheadRun& r = o.runs[i];
    j << (i ? ", " : "") << "{\"metrics\": " << (r.metrics ? "true" : "false") << ", \"ops_per_s\": " << r.ops_per_s
      << ", \"daemon_cpu_us_per_op\": " << r.daemon_cpu_us_per_op << ", \"scrapes\": " << r.scrapes
      << ", \"failed_scrapes\": " << r.failed_scrapes << ", \"scrape_cpu_us\": " << r.scrape_cpu_us << "}";
  }
  j << "]}";
  return j.str();
}

}  // namespace palisade::bench
