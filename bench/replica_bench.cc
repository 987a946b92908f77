// palisade-replica-bench: end-to-end load on one real palisade-replica, next to
// the floor that bounds it (a bare ZeroMQ round trip and a bare synced LMDB
// commit on the same disk), judged against the targets. bench/README.md
// explains what each number means.
//
// Everything runs over loopback, in a temporary directory, for a bounded time;
// the daemon (a cli::ReplicaProcess) is killed on the way out, also on error,
// and dies with this process if this process is killed.
#include <cstdio>
#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_support.h"
#include "bench/metrics_overhead.h"
#include "client/replica_connection.h"
#include "base/hybrid_clock.h"
#include "base/physical_clock.h"
#include "wire/replica_protocol.h"
#include "base/temp_dir.h"
#include "base/version.h"

namespace palisade::bench {
namespace {

constexpr size_t kValueBytes = 100;
constexpr const char* kLock = "bench";

struct Flags : CommonFlags {
  OverheadFlags overhead;
};

struct LevelResult : LoadResult {
  int clients = 0;
  uint64_t daemon_peak_rss_kib = 0;
};

// `clients` threads, each doing synchronous fenced writes of distinct keys until `seconds` pass.
LevelResult run_level(const std::string& endpoint, int clients, double seconds, HybridClock& hlc, uint64_t token,
                      const LoadMarks& marks = {}) {
  zmq::context_t ctx(2);  // shared by the level's connections, as a client process would
  const std::string value(kValueBytes, 'v');
  LevelResult r;
  static_cast<LoadResult&>(r) = run_load(
      clients, seconds,
      [&](int c) -> Operation {
        auto conn = std::make_shared<client::ReplicaConnection>(ctx, endpoint);
        const std::string prefix = "bench/" + std::to_string(clients) + "/" + std::to_string(c) + "/";
        return [&, conn, prefix, id = uint64_t{0}]() mutable -> Status {
          wire::WriteRequest write{prefix + std::to_string(++id), value, false, {token, hlc.now()}, kLock};
          return reply_status(conn->call({0, std::move(write)}, kReplyTimeoutMs));
        };
      },
      marks);
  r.clients = clients;
  return r;
}

struct Report {
  std::vector<LevelResult> levels;
  Floor floor;
  std::optional<Overhead> overhead;
  uint64_t daemon_peak_rss_kib = 0;
  const LevelResult* level(int clients) const {
    for (const auto& l : levels) {
      if (l.clients == clients) return &l;
    }
    return nullptr;
  }
};

std::vector<Target> targets(const Report& r) {
  std::vector<Target> out;
  const LevelResult* one = r.level(1);
  const LevelResult* many = r.level(64);
  if (one != nullptr) {
    out.push_back({"1-client p50 <= 1.5 x (round trip p50 + synced commit p50) [ms]", one->p50_ms,
                   1.5 * (r.floor.round_trip_p50_ms + r.floor.commit_p50_ms), true});
  }
  if (one != nullptr && many != nullptr) {
    out.push_back({"64-client ops/s >= 5 x 1-client ops/s", many->ops_per_s, 5 * one->ops_per_s, false});
  }
  if (r.overhead) out.push_back(r.overhead->target(1));
  return out;
}

void print(const Report& r) {
  print_floor(r.floor);
  std::printf("%8s %10s %12s %10s %10s %8s %14s\n", "clients", "ops", "ops/s", "p50 ms", "p99 ms", "errors",
              "daemon RSS MiB");
  for (const auto& l : r.levels) {
    std::printf("%8d %10llu %12.0f %10.3f %10.3f %8llu %14.1f\n", l.clients, static_cast<unsigned long long>(l.ops),
                l.ops_per_s, l.p50_ms, l.p99_ms, static_cast<unsigned long long>(l.errors),
                static_cast<double>(l.daemon_peak_rss_kib) / 1024);
  }
  std::printf("\ndaemon peak RSS (VmHWM): %.1f MiB\n", static_cast<double>(r.daemon_peak_rss_kib) / 1024);
  if (r.overhead) print_overhead(*r.overhead, 1);
  std::printf("\ntargets:\n");
  print_targets(targets(r));
}

void write_json(const Report& r, const std::string& path) {
  std::ostringstream o;
  o << "{\n  \"floor\": " << floor_json(r.floor) << ",\n  \"levels\": [";
  for (size_t i = 0; i < r.levels.size(); ++i) {
    const auto& l = r.levels[i];
    o << (i ? ",\n" : "\n") << "    {\"clients\": " << l.clients << ", \"ops\": " << l.ops
      << ", \"seconds\": " << l.seconds << ", \"ops_per_s\": " << l.ops_per_s << ", \"p50_ms\": " << l.p50_ms
      << ", \"p99_ms\": " << l.p99_ms << ", \"errors\": " << l.errors
      << ", \"daemon_peak_rss_kib\": " << l.daemon_peak_rss_kib << "}";
  }
  o << "\n  ],\n  \"daemon_peak_rss_kib\": " << r.daemon_peak_rss_kib;
  if (r.overhead) o << ",\n  \"metrics_overhead\": " << overhead_json(*r.overhead, 1);
  o << ",\n  \"targets\": " << targets_json(targets(r), "  ") << "\n}\n";
  write_file(path, o.str());
}

// One run of `clients` writers against a fresh replica, serving metrics (and
// scraped) or not.
OverheadRun overhead_round(const Flags& flags, const std::string& dir, int clients, bool metrics) {
  const std::string address = metrics ? free_metrics_address() : "";
  Replicas replicas =
      start_replicas(flags.replica_bin, dir, 1,
                     metrics ? std::vector<std::string>{"--metrics-listen", address} : std::vector<std::string>{});
  try {
    cli::ReplicaProcess& replica = *replicas[0];
    SystemClock wall;
    HybridClock hlc(wall);
    client::ReplicaConnection conn(replica.endpoint());
    if (Status s = reply_status(conn.call({0, wire::FenceRequest{kLock, 1}}, kReplyTimeoutMs)); !s.is_ok()) {
      throw std::runtime_error("fence refused: " + s.to_string());
    }
    std::optional<MetricsScraper> scraper;
    if (metrics)
      scraper.emplace(std::vector<std::string>{address}, std::chrono::milliseconds(flags.overhead.scrape_ms));
    return overhead_run(metrics, {replica.process().pid()},
                        metrics ? std::vector<std::string>{address} : std::vector<std::string>{},
                        scraper ? &*scraper : nullptr, [&](const LoadMarks& marks) -> LoadResult {
                          return run_level(replica.endpoint(), clients, flags.seconds, hlc, 1, marks);
                        });
  } catch (const std::exception& e) {
    throw std::runtime_error(with_logs(e.what(), replicas));
  }
}

int run(const Flags& flags) {
  TempDir tmp(flags.tmp_dir);

  Report report;
  {
    Replicas replicas = start_replicas(flags.replica_bin, tmp.path(), 1);
    cli::ReplicaProcess& replica = *replicas[0];
    std::printf("palisade-replica-bench: %s on %s, data in %s, %.1f s per level\n", flags.replica_bin.c_str(),
                replica.endpoint().c_str(), tmp.path().c_str(), flags.seconds);
    const pid_t pid = replica.process().pid();
    try {
      SystemClock wall;
      HybridClock hlc(wall);
      const uint64_t token = 1;
      client::ReplicaConnection conn(replica.endpoint());
      if (Status s = reply_status(conn.call({0, wire::FenceRequest{kLock, token}}, kReplyTimeoutMs)); !s.is_ok()) {
        throw std::runtime_error("fence refused: " + s.to_string());
      }
      for (int clients : flags.clients) {
        LevelResult level = run_level(replica.endpoint(), clients, flags.seconds, hlc, token);
        level.daemon_peak_rss_kib = status_kib(pid, "VmHWM");
        std::printf("  %d clients: %.0f ops/s, p50 %.3f ms, p99 %.3f ms\n", clients, level.ops_per_s, level.p50_ms,
                    level.p99_ms);
        std::fflush(stdout);
        report.levels.push_back(level);
      }
      report.daemon_peak_rss_kib = status_kib(pid, "VmHWM");
      if (!replica.process().running()) throw std::runtime_error("palisade-replica exited during the run");
    } catch (const std::exception& e) {
      throw std::runtime_error(with_logs(e.what(), replicas));
    }
  }  // the replica is killed here, before the floor is measured
  if (flags.overhead.rounds > 0) {
    const int clients = *std::max_element(flags.clients.begin(), flags.clients.end());
    int run_index = 0;
    report.overhead = measure_overhead(clients, flags.overhead, [&](bool metrics) {
      return overhead_round(flags, tmp.sub("overhead-" + std::to_string(++run_index)), clients, metrics);
    });
  }

  // A write request of the benchmark's size, so the echo moves as many bytes.
  const size_t write_bytes =
      wire::encode_request({1, wire::WriteRequest{"bench/64/63/100000", std::string(kValueBytes, 'v'), false, {1, 1}, kLock}})
          .size();
  report.floor = measure_floor(flags.floor_seconds, write_bytes, tmp.sub("lmdb"), kValueBytes);

  print(report);
  if (!flags.json_path.empty()) write_json(report, flags.json_path);
  int rc = 0;
  for (const auto& l : report.levels) {
    if (l.errors != 0) {
      std::fprintf(stderr, "%llu writes of the %d-client level failed, the first: %s\n",
                   static_cast<unsigned long long>(l.errors), l.clients, l.first_error.c_str());
      rc = 1;
    }
  }
  return rc;
}

}  // namespace
}  // namespace palisade::bench

int main(int argc, char** argv) {
  palisade::bench::Flags flags;
  flags.seconds = 3;
  CLI::App app{"palisade-replica-bench: durable fenced writes against a real palisade-replica over loopback,\n"
               "next to the floor (bare ZeroMQ round trip, bare synced LMDB commit on the same disk)."};
  app.set_version_flag("--version", palisade::version_line("palisade-replica-bench"));
  palisade::bench::add_common_options(app, flags, "Client levels (threads, one DEALER each)");
  palisade::bench::add_overhead_options(app, flags.overhead);
  CLI11_PARSE(app, argc, argv);
  return palisade::bench::run_main("palisade-replica-bench", [&] { return palisade::bench::run(flags); });
}
