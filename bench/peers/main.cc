// palisade-peer-bench: the same workloads (lock cycles, the handoff of one
// contended lock, durable puts, gets) against palisade, etcd, ZooKeeper or
// Redis, from C++ clients alike for all of them, with the servers' CPU time per
// operation. scripts/bench-peers starts the peers and runs this once per
// system; palisade it starts itself. bench/README.md explains the numbers.
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/bench_support.h"
#include "bench/peers/systems.h"
#include "bench/peers/workloads.h"
#include "cli/local_cluster.h"
#include "base/temp_dir.h"

namespace palisade::bench::peers {
namespace {

constexpr int kWarmupClients = 16;

struct Flags {
  std::string system;
  std::vector<std::string> endpoints;
  std::vector<std::string> workloads = {"lock", "handoff", "put", "get"};
  std::vector<int> clients = {1, 16, 64};
  int handoff_clients = 16;
  double duration = 5;
  int get_keys = 1000;
  double warmup = 3;
  std::vector<pid_t> server_pids;
  std::string json_path;
  std::string tmp_dir = default_temp_base();
  std::string lockd_bin = cli::sibling_lockd_binary();
  std::string replica_bin = cli::sibling_replica_binary();
};

std::unique_ptr<PeerSystem> open_system(const Flags& f, const TempDir& tmp) {
  if (f.system == "palisade") return make_palisade({tmp.sub("palisade"), f.lockd_bin, f.replica_bin});
  if (f.system == "redis") return make_redis(f.endpoints);
  if (f.system == "etcd") return make_etcd(f.endpoints);
  return make_zookeeper(f.endpoints);
}

// CPU seconds per operation of the timed part, in microseconds.
std::optional<double> us_per_op(std::optional<double> cpu_s, const Point& p) {
  if (!cpu_s || p.ops == 0) return std::nullopt;
  return *cpu_s * 1e6 / static_cast<double>(p.ops);
}

nlohmann::json point_json(const Point& p) {
  nlohmann::json j = {{"workload", workload_name(p.workload)}, {"clients", p.clients}, {"ops", p.ops},
                      {"errors", p.errors},   {"seconds", p.seconds},  {"ops_per_s", p.ops_per_s},
                      {"p50_ms", p.p50_ms},   {"p99_ms", p.p99_ms}};
  if (p.server_cpu_s) j["server_cpu_s"] = *p.server_cpu_s;
  if (auto us = us_per_op(p.server_cpu_s, p)) j["server_cpu_us_per_op"] = *us;
  j["client_cpu_s"] = p.client_cpu_s;
  if (auto us = us_per_op(p.client_cpu_s, p)) j["client_cpu_us_per_op"] = *us;
  if (!p.first_error.empty()) j["first_error"] = p.first_error;
  return j;
}

int run(const Flags& f) {
  std::vector<Workload> workloads;
  for (const auto& name : f.workloads) workloads.push_back(*workload_from_name(name));
  TempDir tmp(f.tmp_dir);
  auto system = open_system(f, tmp);
  std::vector<pid_t> pids = f.server_pids;
  for (pid_t pid : system->own_server_pids()) pids.push_back(pid);
  std::printf("palisade-peer-bench: %s (%s), %.1f s per point\n", f.system.c_str(), system->topology().c_str(),
              f.duration);
  std::printf("%-8s %7s %9s %10s %9s %9s %14s %14s %7s\n", "workload", "clients", "ops", "ops/s", "p50 ms", "p99 ms",
              "server us/op", "client us/op", "errors");

  int level = 0;
  if (f.warmup > 0) {  // untimed: JIT-compiled peers (ZooKeeper) reach their speed, caches fill
    for (Workload w : {Workload::kLock, Workload::kPut}) {
      run_point(*system, w, kWarmupClients, f.warmup / 2, level++, f.get_keys, {});
    }
  }
  nlohmann::json points = nlohmann::json::array();
  uint64_t errors = 0;
  for (Workload w : workloads) {
    if (w == Workload::kGet) preload(*system, f.get_keys);
    const std::vector<int> levels = w == Workload::kHandoff ? std::vector<int>{f.handoff_clients} : f.clients;
    for (int clients : levels) {
      Point p = run_point(*system, w, clients, f.duration, level++, f.get_keys, pids);
      const auto server_us = us_per_op(p.server_cpu_s, p);
      std::printf("%-8s %7d %9llu %10.0f %9.3f %9.3f %14s %14.0f %7llu\n", std::string(workload_name(w)).c_str(),
                  clients, static_cast<unsigned long long>(p.ops), p.ops_per_s, p.p50_ms, p.p99_ms,
                  server_us ? std::to_string(std::lround(*server_us)).c_str() : "-",
                  us_per_op(p.client_cpu_s, p).value_or(0), static_cast<unsigned long long>(p.errors));
      std::fflush(stdout);
      if (p.errors != 0) std::fprintf(stderr, "  first error: %s\n", p.first_error.c_str());
      errors += p.errors;
      points.push_back(point_json(p));
    }
  }
  if (!f.json_path.empty()) {
    nlohmann::json out = {{"system", f.system},           {"topology", system->topology()},
                          {"duration_s", f.duration},     {"warmup_s", f.warmup}, {"server_pids", pids},
                          {"value_bytes", kValueBytes},   {"get_keys", f.get_keys},
                          {"points", points}};
    write_file(f.json_path, out.dump(2) + "\n");
  }
  return errors == 0 ? 0 : 1;
}

}  // namespace
}  // namespace palisade::bench::peers

int main(int argc, char** argv) {
  using palisade::bench::peers::workload_from_name;
  palisade::bench::peers::Flags f;
  CLI::App app{"palisade-peer-bench: lock cycles, lock handoff, durable puts and gets against palisade (started\n"
               "here: 3 palisade-lockd, 3 palisade-replica) or a running etcd, ZooKeeper or Redis, with the same\n"
               "C++ load for each; scripts/bench-peers runs it for all four."};
  app.add_option("--system", f.system, "System under test")
      ->required()
      ->check(CLI::IsMember({"palisade", "etcd", "zookeeper", "redis"}));
  app.add_option("--endpoints", f.endpoints, "host:port of each server (peers only), comma-separated")->delimiter(',');
  app.add_option("--workloads", f.workloads, "Workloads to run, in order")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"lock", "handoff", "put", "get"}));
  app.add_option("--clients", f.clients, "Client counts for lock, put and get")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--handoff-clients", f.handoff_clients, "Clients contending the one lock")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  app.add_option("--duration", f.duration, "Seconds per point")->capture_default_str()->check(CLI::Range(0.1, 600.0));
  app.add_option("--get-keys", f.get_keys, "Keys written before the gets, which read them")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--warmup", f.warmup, "Seconds of untimed lock cycles and puts (16 clients) before the points")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--server-pids", f.server_pids, "Server processes whose CPU time is counted (peers)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--json", f.json_path, "Also write the results as JSON to this file");
  app.add_option("--tmp-dir", f.tmp_dir, "Where palisade's data goes")->capture_default_str();
  app.add_option("--lockd-bin", f.lockd_bin, "palisade-lockd executable")->capture_default_str();
  app.add_option("--replica-bin", f.replica_bin, "palisade-replica executable")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if ((f.system == "palisade") != f.endpoints.empty()) {
    std::fprintf(stderr, "--endpoints: %s\n",
                 f.system == "palisade" ? "palisade is started here, give none" : "required for a peer");
    return 2;
  }
  if (f.system == "palisade" && !f.server_pids.empty()) {
    std::fprintf(stderr, "--server-pids: palisade's are known here, give none\n");
    return 2;
  }
  return palisade::bench::run_main("palisade-peer-bench", [&] { return palisade::bench::peers::run(f); });
}
