// palisade-replica-bench: end-to-end load on one real palisade-replica, next to
// the floor that bounds it (a bare ZeroMQ round trip and a bare synced LMDB
// commit on the same disk), judged against the targets. bench/README.md
// explains what each number means.
//
// Everything runs over loopback, in a temporary directory, for a bounded time;
// the daemon is stopped by pid on the way out, also on error (and it dies with
// this process through PR_SET_PDEATHSIG if this process is killed).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_support.h"
#include "common/hybrid_clock.h"
#include "common/physical_clock.h"
#include "common/replica_protocol.h"

namespace palisade::bench {
namespace {

using namespace std::chrono_literals;

constexpr size_t kValueBytes = 100;
constexpr const char* kLock = "bench";

struct Flags {
  std::string replica_bin;
  std::string tmp_dir;
  double seconds = 3;
  double floor_seconds = 1;
  std::vector<int> clients = {1, 16, 64};
  std::string json_path;
};

struct LevelResult {
  int clients = 0;
  uint64_t ops = 0;
  uint64_t errors = 0;
  double seconds = 0;
  double ops_per_s = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  uint64_t daemon_peak_rss_kib = 0;
};

// `clients` threads, each doing synchronous fenced writes of distinct keys until `seconds` pass.
LevelResult run_level(const std::string& endpoint, int clients, double seconds, HybridClock& hlc, uint64_t token) {
  zmq::context_t ctx(2);
  std::vector<std::vector<double>> latencies(clients);
  std::vector<uint64_t> errors(clients, 0);
  std::vector<std::string> failures(clients);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  const std::string value(kValueBytes, 'v');
  Clock::time_point start, end;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      try {
        ReplicaClient client(ctx, endpoint);
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        const Clock::time_point stop = end;
        uint64_t id = 0;
        for (Clock::time_point t0 = Clock::now(); t0 < stop; t0 = Clock::now()) {
          ++id;
          std::string key = "bench/" + std::to_string(clients) + "/" + std::to_string(c) + "/" + std::to_string(id);
          wire::ReplicaRequest req{id, wire::WriteRequest{std::move(key), value, false, {token, hlc.now()}, kLock}};
          wire::ReplicaReply reply = client.call(req);
          latencies[c].push_back(ms_between(t0, Clock::now()));
          if (!reply.status.is_ok()) ++errors[c];
        }
      } catch (const std::exception& e) {
        failures[c] = e.what();
        ready.fetch_add(1);
      }
    });
  }
  while (ready.load() < clients) std::this_thread::sleep_for(1ms);
  start = Clock::now();
  end = start + seconds_duration(seconds);
  go.store(true);
  for (auto& t : threads) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  for (const auto& f : failures) {
    if (!f.empty()) throw std::runtime_error(f);
  }
  LevelResult r;
  r.clients = clients;
  r.seconds = elapsed;
  std::vector<double> all;
  for (int c = 0; c < clients; ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    r.errors += errors[c];
  }
  r.ops = all.size();
  r.ops_per_s = static_cast<double>(r.ops) / elapsed;
  r.p50_ms = quantile(all, 0.50);
  r.p99_ms = quantile(all, 0.99);
  return r;
}

struct Report {
  std::vector<LevelResult> levels;
  double round_trip_p50_ms = 0;
  double commit_p50_ms = 0;
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
                   1.5 * (r.round_trip_p50_ms + r.commit_p50_ms), true});
  }
  if (one != nullptr && many != nullptr) {
    out.push_back({"64-client ops/s >= 5 x 1-client ops/s", many->ops_per_s, 5 * one->ops_per_s, false});
  }
  return out;
}

void print(const Report& r) {
  std::printf("\nfloor: ZeroMQ DEALER->ROUTER round trip p50 %.3f ms, synced LMDB commit p50 %.3f ms\n\n",
              r.round_trip_p50_ms, r.commit_p50_ms);
  std::printf("%8s %10s %12s %10s %10s %8s %14s\n", "clients", "ops", "ops/s", "p50 ms", "p99 ms", "errors",
              "daemon RSS MiB");
  for (const auto& l : r.levels) {
    std::printf("%8d %10llu %12.0f %10.3f %10.3f %8llu %14.1f\n", l.clients, static_cast<unsigned long long>(l.ops),
                l.ops_per_s, l.p50_ms, l.p99_ms, static_cast<unsigned long long>(l.errors),
                static_cast<double>(l.daemon_peak_rss_kib) / 1024);
  }
  std::printf("\ndaemon peak RSS (VmHWM): %.1f MiB\n\ntargets:\n", static_cast<double>(r.daemon_peak_rss_kib) / 1024);
  print_targets(targets(r));
}

void write_json(const Report& r, const std::string& path) {
  std::ostringstream o;
  o << "{\n  \"floor\": {\"round_trip_p50_ms\": " << r.round_trip_p50_ms
    << ", \"synced_commit_p50_ms\": " << r.commit_p50_ms << "},\n  \"levels\": [";
  for (size_t i = 0; i < r.levels.size(); ++i) {
    const auto& l = r.levels[i];
    o << (i ? ",\n" : "\n") << "    {\"clients\": " << l.clients << ", \"ops\": " << l.ops
      << ", \"seconds\": " << l.seconds << ", \"ops_per_s\": " << l.ops_per_s << ", \"p50_ms\": " << l.p50_ms
      << ", \"p99_ms\": " << l.p99_ms << ", \"errors\": " << l.errors
      << ", \"daemon_peak_rss_kib\": " << l.daemon_peak_rss_kib << "}";
  }
  o << "\n  ],\n  \"daemon_peak_rss_kib\": " << r.daemon_peak_rss_kib << ",\n  \"targets\": "
    << targets_json(targets(r), "  ") << "\n}\n";
  std::ofstream out(path);
  out << o.str();
  if (!out) throw std::runtime_error("cannot write " + path);
}

int run(const Flags& flags) {
  TempDir tmp(flags.tmp_dir);
  const std::string data_dir = tmp.path() + "/replica";
  const std::string lmdb_dir = tmp.path() + "/lmdb";
  std::filesystem::create_directories(data_dir);
  std::filesystem::create_directories(lmdb_dir);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  const std::string log = tmp.path() + "/replica.log";
  std::printf("palisade-replica-bench: %s on %s, data in %s, %.1f s per level\n", flags.replica_bin.c_str(),
              endpoint.c_str(), tmp.path().c_str(), flags.seconds);

  Report report;
  try {
    Daemon daemon(flags.replica_bin, data_dir, endpoint, log);
    daemon.wait_ready();
    SystemClock wall;
    HybridClock hlc(wall);
    const uint64_t token = 1;
    {
      zmq::context_t ctx(1);
      ReplicaClient client(ctx, endpoint);
      auto reply = client.call({1, wire::FenceRequest{kLock, token}});
      if (!reply.status.is_ok()) throw std::runtime_error("fence refused: " + reply.status.to_string());
    }
    for (int clients : flags.clients) {
      LevelResult level = run_level(endpoint, clients, flags.seconds, hlc, token);
      level.daemon_peak_rss_kib = daemon.peak_rss_kib();
      std::printf("  %d clients: %.0f ops/s, p50 %.3f ms, p99 %.3f ms\n", clients, level.ops_per_s, level.p50_ms,
                  level.p99_ms);
      std::fflush(stdout);
      report.levels.push_back(level);
    }
    report.daemon_peak_rss_kib = daemon.peak_rss_kib();
    if (!daemon.running()) throw std::runtime_error("palisade-replica exited during the run");
    daemon.stop();
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + "\npalisade-replica log:\n" + read_file(log));
  }

  // A write request of the benchmark's size, so the echo moves as many bytes.
  const size_t write_bytes =
      wire::encode_request({1, wire::WriteRequest{"bench/64/63/100000", std::string(kValueBytes, 'v'), false, {1, 1}, kLock}})
          .size();
  report.round_trip_p50_ms = echo_round_trip_p50_ms(flags.floor_seconds, write_bytes);
  report.commit_p50_ms = synced_commit_p50_ms(lmdb_dir, flags.floor_seconds, kValueBytes);

  print(report);
  if (!flags.json_path.empty()) write_json(report, flags.json_path);
  for (const auto& l : report.levels) {
    if (l.errors != 0) {
      std::fprintf(stderr, "%llu writes of the %d-client level were refused\n",
                   static_cast<unsigned long long>(l.errors), l.clients);
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace palisade::bench

int main(int argc, char** argv) {
  palisade::bench::Flags flags;
  flags.replica_bin = palisade::bench::default_replica_bin();
  const char* tmp = std::getenv("TMPDIR");
  flags.tmp_dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  CLI::App app{"palisade-replica-bench: durable fenced writes against a real palisade-replica over loopback,\n"
               "next to the floor (bare ZeroMQ round trip, bare synced LMDB commit on the same disk)."};
  app.add_option("--replica-bin", flags.replica_bin, "palisade-replica executable")->capture_default_str();
  app.add_option("--tmp-dir", flags.tmp_dir, "Where the replica's and the LMDB floor's data go (same disk)")
      ->capture_default_str();
  app.add_option("--seconds", flags.seconds, "Duration of each client level")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("--floor-seconds", flags.floor_seconds, "Duration of each floor measurement")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("--clients", flags.clients, "Client levels (threads, one DEALER each)")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  app.add_option("--json", flags.json_path, "Also write the results as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);
  try {
    return palisade::bench::run(flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "palisade-replica-bench: %s\n", e.what());
    return 1;
  }
}
