// palisade-peer-bench: the same workloads (lock cycles, the handoff of one
// contended lock, durable puts, gets) against palisade, etcd, ZooKeeper or
// Redis, from C++ clients alike for all of them, with the servers' CPU time per
// operation. scripts/bench-peers starts the peers and runs this once per
// system; palisade it starts itself, with CURVE links as users run it, or
// plaintext, or both in one run to show what CURVE costs. bench/README.md
// explains the numbers.
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
#include "base/version.h"

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
  std::string links = "curve";
  std::string json_path;
  std::string tmp_dir = default_temp_base();
  std::string lockd_bin = cli::sibling_lockd_binary();
  std::string replica_bin = cli::sibling_replica_binary();
};

// The system measured, as started here: for palisade, with which links
// ("curve" or "plaintext"); empty for a peer.
struct Measured {
  std::string links;
  std::unique_ptr<PeerSystem> system;
  std::vector<pid_t> pids;  // counted for its server CPU
  std::vector<Point> points;
};

Measured open_system(const Flags& f, const TempDir& tmp, const std::string& links) {
  Measured m{links, nullptr, f.server_pids, {}};
  if (f.system == "palisade") {
    m.system = make_palisade({tmp.sub("palisade-" + links), f.lockd_bin, f.replica_bin, links == "curve"});
  } else if (f.system == "redis") {
    m.system = make_redis(f.endpoints);
  } else if (f.system == "etcd") {
    m.system = make_etcd(f.endpoints);
  } else {
    m.system = make_zookeeper(f.endpoints);
  }
  for (pid_t pid : m.system->own_server_pids()) m.pids.push_back(pid);
  return m;
}

// CPU seconds per operation of the timed part, in microseconds.
std::optional<double> us_per_op(std::optional<double> cpu_s, const Point& p) {
  if (!cpu_s || p.ops == 0) return std::nullopt;
  return *cpu_s * 1e6 / static_cast<double>(p.ops);
}

// CPU time of the servers and the clients together per operation, in microseconds.
std::optional<double> total_us_per_op(const Point& p) {
  const auto server = us_per_op(p.server_cpu_s, p);
  if (!server) return std::nullopt;
  return *server + *us_per_op(p.client_cpu_s, p);
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

nlohmann::json points_json(const std::vector<Point>& points) {
  nlohmann::json out = nlohmann::json::array();
  for (const Point& p : points) out.push_back(point_json(p));
  return out;
}

// What CURVE costs, per lock-cycle, put and get point measured both ways: the
// total CPU per operation with CURVE over that with plaintext links, against
// the bound. The one place that compares them: the table, the JSON
// and scripts/bench-peers all take these figures.
constexpr double kCurveCostBound = 1.25;

struct CurveCost {
  Workload workload;
  int clients = 0;
  double curve_us = 0;  // total CPU µs per operation
  double plaintext_us = 0;
  double ratio() const { return curve_us / plaintext_us; }
  bool pass() const { return ratio() <= kCurveCostBound; }
};

std::vector<CurveCost> curve_costs(const std::vector<Point>& curve, const std::vector<Point>& plaintext) {
  std::vector<CurveCost> out;
  for (size_t i = 0; i < curve.size() && i < plaintext.size(); ++i) {  // the same points, in the same order
    const Point& c = curve[i];
    if (c.workload == Workload::kHandoff) continue;  // the bound is on lock cycles, puts and gets
    const auto curve_us = total_us_per_op(c), plaintext_us = total_us_per_op(plaintext[i]);
    if (!curve_us || !plaintext_us || *plaintext_us <= 0) continue;
    out.push_back({c.workload, c.clients, *curve_us, *plaintext_us});
  }
  return out;
}

void print_curve_costs(const std::vector<CurveCost>& costs) {
  std::printf("\nCURVE's cost: total CPU (servers + clients) us/op, CURVE over plaintext, at most %.2fx\n",
              kCurveCostBound);
  std::printf("%-8s %7s %9s %10s %7s\n", "workload", "clients", "CURVE", "plaintext", "ratio");
  for (const CurveCost& c : costs) {
    std::printf("%-8s %7d %9.0f %10.0f %6.2fx  %s\n", std::string(workload_name(c.workload)).c_str(), c.clients,
                c.curve_us, c.plaintext_us, c.ratio(), c.pass() ? "PASS" : "MISS");
  }
}

nlohmann::json curve_costs_json(const std::vector<CurveCost>& costs) {
  nlohmann::json out = nlohmann::json::array();
  for (const CurveCost& c : costs) {
    out.push_back({{"workload", workload_name(c.workload)},
                   {"clients", c.clients},
                   {"curve_cpu_us_per_op", c.curve_us},
                   {"plaintext_cpu_us_per_op", c.plaintext_us},
                   {"ratio", c.ratio()},
                   {"at_most", kCurveCostBound},
                   {"pass", c.pass()}});
  }
  return out;
}

int run(const Flags& f) {
  std::vector<Workload> workloads;
  for (const auto& name : f.workloads) workloads.push_back(*workload_from_name(name));
  TempDir tmp(f.tmp_dir);
  // --links both: CURVE, then plaintext, point by point, so that drift reaches both alike.
  std::vector<Measured> runs;
  if (f.system != "palisade") {
    runs.push_back(open_system(f, tmp, ""));
  } else {
    for (const char* links : {"curve", "plaintext"}) {
      if (f.links == links || f.links == "both") runs.push_back(open_system(f, tmp, links));
    }
  }
  const bool both = runs.size() == 2;
  for (const Measured& m : runs) {
    std::printf("palisade-peer-bench: %s (%s), %.1f s per point\n", f.system.c_str(), m.system->topology().c_str(),
                f.duration);
  }
  std::printf("%-8s %7s %s%9s %10s %9s %9s %14s %14s %7s\n", "workload", "clients", both ? " links    " : "", "ops",
              "ops/s", "p50 ms", "p99 ms", "server us/op", "client us/op", "errors");

  int level = 0;
  if (f.warmup > 0) {  // untimed: JIT-compiled peers (ZooKeeper) reach their speed, caches fill
    for (Measured& m : runs) {
      for (Workload w : {Workload::kLock, Workload::kPut}) {
        run_point(*m.system, w, kWarmupClients, f.warmup / 2, level++, f.get_keys, {});
      }
    }
  }
  uint64_t errors = 0;
  for (Workload w : workloads) {
    if (w == Workload::kGet) {
      for (Measured& m : runs) preload(*m.system, f.get_keys);
    }
    const std::vector<int> levels = w == Workload::kHandoff ? std::vector<int>{f.handoff_clients} : f.clients;
    for (int clients : levels) {
      for (Measured& m : runs) {
        Point p = run_point(*m.system, w, clients, f.duration, level++, f.get_keys, m.pids);
        const auto server_us = us_per_op(p.server_cpu_s, p);
        const std::string links = both ? " " + m.links + std::string(9 - m.links.size(), ' ') : "";
        std::printf("%-8s %7d %s%9llu %10.0f %9.3f %9.3f %14s %14.0f %7llu\n", std::string(workload_name(w)).c_str(),
                    clients, links.c_str(), static_cast<unsigned long long>(p.ops), p.ops_per_s, p.p50_ms, p.p99_ms,
                    server_us ? std::to_string(std::lround(*server_us)).c_str() : "-",
                    us_per_op(p.client_cpu_s, p).value_or(0), static_cast<unsigned long long>(p.errors));
        std::fflush(stdout);
        if (p.errors != 0) std::fprintf(stderr, "  first error: %s\n", p.first_error.c_str());
        errors += p.errors;
        m.points.push_back(std::move(p));
      }
    }
  }
  std::vector<CurveCost> costs;
  if (both) {
    costs = curve_costs(runs[0].points, runs[1].points);
    print_curve_costs(costs);
  }
  if (!f.json_path.empty()) {
    const Measured& first = runs[0];  // --links both: CURVE's, the figure users get
    nlohmann::json out = {{"system", f.system},        {"topology", first.system->topology()},
                          {"duration_s", f.duration},  {"warmup_s", f.warmup},
                          {"server_pids", first.pids}, {"value_bytes", kValueBytes},
                          {"get_keys", f.get_keys},    {"points", points_json(first.points)}};
    if (f.system == "palisade") out["links"] = f.links;
    if (both) {
      out["plaintext"] = {{"topology", runs[1].system->topology()},
                          {"server_pids", runs[1].pids},
                          {"points", points_json(runs[1].points)}};
      out["curve_cost"] = curve_costs_json(costs);
    }
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
  app.set_version_flag("--version", palisade::version_line("palisade-peer-bench"));
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
  app.add_option("--links", f.links,
                 "palisade's links: curve (CurveZMQ, as users run it), plaintext, or both: every point with\n"
                 "CURVE and then plaintext, and what CURVE costs in CPU per operation")
      ->capture_default_str()
      ->check(CLI::IsMember({"curve", "plaintext", "both"}));
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
  if (f.system != "palisade" && app.count("--links") != 0) {
    std::fprintf(stderr, "--links: for palisade only\n");
    return 2;
  }
  if (f.system == "palisade" && !f.server_pids.empty()) {
    std::fprintf(stderr, "--server-pids: palisade's are known here, give none\n");
    return 2;
  }
  return palisade::bench::run_main("palisade-peer-bench", [&] { return palisade::bench::peers::run(f); });
}
