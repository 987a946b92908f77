// palisade-lock-bench: acquire+release through LockClient against three real
// palisade-lockd processes over loopback (distinct locks from 1, 16 and 64
// clients, and the handoff of one contended lock), the lockd memory with 100k
// sessions, and the floor that bounds a cycle (two sequential operations, each a
// bare ZeroMQ round trip from the client to the master, a synced LMDB commit and a
// round trip from the master to a follower), judged against the targets. bench/README.md explains what each number means.
//
// Everything runs in a temporary directory for a bounded time; the daemons
// (cli::LocalCluster) are killed on the way out, also on error, and die with
// this process if it is killed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <zmq.hpp>

#include "bench/bench_support.h"
#include "bench/metrics_overhead.h"
#include "config/cluster_config.h"
#include "wire/lock_protocol.h"
#include "transport/transport.h"
#include "palisade/lock_client.h"
#include "cli/local_cluster.h"
#include "base/temp_dir.h"
#include "base/version.h"

namespace palisade::bench {
namespace {

using namespace std::chrono_literals;

constexpr int kLockd = 3;
constexpr int kReplicas = 1;  // LocalCluster needs at least one; nothing here uses it
constexpr auto kHandoffWait = 10s;  // the acquire wait of the contended clients
// The memory phase: sessions that outlive it without keepalives, opened over a
// few DEALER sockets with many requests in flight on each.
constexpr uint64_t kMemorySessionLeaseMs = 600'000;
constexpr int kMemorySockets = 4;
constexpr int kMemoryInFlight = 1000;  // per socket

// Lock-recipe cycles/s on this machine, from the issue: not measured by this bench.
struct Reference {
  const char* system;
  double one_client;
  double sixteen_clients;
};
constexpr Reference kReferences[] = {{"ZooKeeper", 660, 2400}, {"etcd", 470, 1300}};
constexpr double kAimOverZooKeeper = 4;

struct Flags : CommonFlags {
  std::string lockd_bin = cli::sibling_lockd_binary();
  int handoff_clients = 16;
  int sessions = 100000;
  bool skip_memory = false;
  OverheadFlags overhead;
};

// A level of acquire+release cycles: on distinct locks (one per client) or on one contended lock.
struct CycleResult : LoadResult {
  bool handoff = false;
  int clients = 0;
  double acquire_p50_ms = 0;  // the acquire alone (for handoff: the wait for the lock)
  double acquire_p99_ms = 0;
};

// Each lockd node's VmRSS before and after the sessions were opened.
struct NodeMemory {
  uint32_t id = 0;
  bool master = false;
  uint64_t before_kib = 0;
  uint64_t after_kib = 0;
  uint64_t sessions = 0;  // as the node's lock_status counts them, after
};
struct Memory {
  bool ran = false;
  uint64_t sessions = 0;  // opened
  double seconds = 0;     // to open them
  std::vector<NodeMemory> nodes;
};

std::unique_ptr<cli::LocalCluster> start_group(const Flags& flags, const std::string& dir, ClusterTiming timing,
                                               bool metrics = false) {
  cli::LocalClusterOptions o;
  o.dir = dir;
  o.lockd = kLockd;
  o.replicas = kReplicas;
  o.lockd_binary = flags.lockd_bin;
  o.replica_binary = flags.replica_bin;
  o.timing = timing;
  o.log_level = "warn";
  o.metrics = metrics;
  auto cluster = cli::LocalCluster::start(std::move(o));
  if (!cluster.is_ok()) throw std::runtime_error("cannot start the lock group: " + cluster.status().to_string());
  return std::move(cluster).value();
}

// `clients` threads, each with its own LockClient (its own session, opened
// before the clock starts), repeating acquire(lock_of(client), wait) + release.
CycleResult run_cycles(const std::vector<std::string>& nodes, bool handoff, int clients, double seconds,
                       const std::function<std::string(int)>& lock_of, std::chrono::milliseconds wait,
                       const LoadMarks& marks = {}) {
  std::vector<std::unique_ptr<LockClient>> sessions(clients);
  std::vector<std::vector<double>> acquire_ms(clients);
  CycleResult r;
  static_cast<LoadResult&>(r) = run_load(
      clients, seconds,
      [&](int c) -> Operation {
        LockClientOptions o;
        o.nodes = nodes;
        auto connected = LockClient::connect(o);
        if (!connected.is_ok()) throw std::runtime_error("LockClient::connect: " + connected.status().to_string());
        sessions[c] = std::move(connected).value();
        Operation cycle = [&client = *sessions[c], &waits = acquire_ms[c], lock = lock_of(c), wait]() -> Status {
          auto t0 = Clock::now();
          Result<Lease> lease = client.acquire(lock, {.wait = wait});
          waits.push_back(ms_between(t0, Clock::now()));
          return lease.is_ok() ? client.release(lease.value()) : lease.status();
        };
        if (Status s = cycle(); !s.is_ok()) throw std::runtime_error("warm-up acquire+release: " + s.to_string());
        acquire_ms[c].clear();
        return cycle;
      },
      marks);
  std::vector<double> all;
  for (const auto& w : acquire_ms) all.insert(all.end(), w.begin(), w.end());
  r.handoff = handoff;
  r.clients = clients;
  r.acquire_p50_ms = quantile(all, 0.50);
  r.acquire_p99_ms = quantile(all, 0.99);
  return r;  // the sessions close here
}

// Opens `count` sessions on `endpoint` (the master) with raw open_session
// requests, kMemoryInFlight in flight on each of kMemorySockets DEALERs.
uint64_t open_sessions(const std::string& endpoint, int count) {
  zmq::context_t ctx(1);
  std::vector<zmq::socket_t> sockets;
  std::vector<int> in_flight(kMemorySockets, 0);
  for (int i = 0; i < kMemorySockets; ++i) {
    sockets.push_back(transport::make_dealer(ctx, endpoint, {.queue_until_connected = true}));
  }
  uint64_t sent = 0, opened = 0;
  while (opened < static_cast<uint64_t>(count)) {
    std::vector<zmq::pollitem_t> items;
    for (int i = 0; i < kMemorySockets; ++i) {
      for (; in_flight[i] < kMemoryInFlight && sent < static_cast<uint64_t>(count); ++in_flight[i]) {
        const std::string bytes = wire::encode_lock_request({++sent, wire::OpenSessionRequest{0}});
        sockets[i].send(zmq::buffer(bytes), zmq::send_flags::none);
      }
      items.push_back({sockets[i].handle(), 0, ZMQ_POLLIN, 0});
    }
    if (zmq::poll(items.data(), items.size(), std::chrono::milliseconds(kReplyTimeoutMs)) <= 0) {
      throw std::runtime_error("open_session: no reply within " + std::to_string(kReplyTimeoutMs) + " ms");
    }
    for (int i = 0; i < kMemorySockets; ++i) {
      zmq::message_t msg;
      while (sockets[i].recv(msg, zmq::recv_flags::dontwait)) {
        auto reply = wire::decode_lock_reply({static_cast<const char*>(msg.data()), msg.size()}, size_t{1} << 20);
        Status s = reply.is_ok() ? reply.value().status : reply.status();
        if (!s.is_ok()) throw std::runtime_error("open_session: " + s.to_string());
        --in_flight[i];
        ++opened;
      }
    }
  }
  return opened;
}

// A fresh group whose sessions outlive the phase: every lockd's VmRSS before and
// after `count` sessions (once every node has applied them).
Memory measure_memory(const Flags& flags, const std::string& dir, int count) {
  ClusterTiming timing;
  timing.session_lease_ms = kMemorySessionLeaseMs;
  auto cluster = start_group(flags, dir, timing);
  Memory m;
  m.ran = true;
  try {
    auto master = cluster->wait_for_master(10s);
    if (!master) throw std::runtime_error("no lockd master");
    for (uint32_t id : cluster->lockd_ids()) {
      m.nodes.push_back({id, id == *master, status_kib(cluster->lockd(id).pid(), "VmRSS"), 0, 0});
    }
    auto t0 = Clock::now();
    m.sessions = open_sessions(cluster->lockd(*master).endpoint(), count);
    m.seconds = ms_between(t0, Clock::now()) / 1000;
    for (NodeMemory& n : m.nodes) {  // followers learn the last slots with the next heartbeat
      for (auto deadline = Clock::now() + 10s; n.sessions < m.sessions && Clock::now() < deadline;
           std::this_thread::sleep_for(50ms)) {
        auto status = cluster->lock_status(n.id);
        if (status) n.sessions = status->sessions;
      }
      n.after_kib = status_kib(cluster->lockd(n.id).pid(), "VmRSS");
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + "\n" + cluster->logs(30));
  }
  return m;
}

struct Report {
  std::vector<CycleResult> levels;  // distinct locks, then the handoff
  Memory memory;
  Floor floor;
  std::optional<Overhead> overhead;
  // Issue 4: two sequential (round trip + synced commit + round trip). An
  // operation cannot be answered before the master heard a follower's synced
  // accept: client -> master -> follower -> master -> client.
  double lock_floor_ms() const { return 2 * (2 * floor.round_trip_p50_ms + floor.commit_p50_ms); }
  const CycleResult* level(int clients) const {
    for (const auto& l : levels) {
      if (!l.handoff && l.clients == clients) return &l;
    }
    return nullptr;
  }
};

std::vector<Target> targets(const Report& r) {
  std::vector<Target> out;
  const CycleResult* one = r.level(1);
  const CycleResult* many = r.level(64);
  if (one != nullptr) {
    out.push_back({"1-client acquire+release p50 <= 1.5 x 2 x (2 x round trip p50 + synced commit p50) [ms]", one->p50_ms,
                   1.5 * r.lock_floor_ms(), true});
  }
  if (one != nullptr && many != nullptr) {
    out.push_back({"64-client acquire+release ops/s >= 5 x 1-client ops/s", many->ops_per_s, 5 * one->ops_per_s, false});
  }
  if (r.overhead) out.push_back(r.overhead->target(kLockd));
  return out;
}

double mib(uint64_t kib) { return static_cast<double>(kib) / 1024; }

// Bytes of RSS growth per session.
double per_session_bytes(const NodeMemory& n, uint64_t sessions) {
  if (sessions == 0) return 0;
  return (static_cast<double>(n.after_kib) - static_cast<double>(n.before_kib)) * 1024 / static_cast<double>(sessions);
}

void print(const Report& r) {
  print_floor(r.floor);
  std::printf("lock floor: acquire + release = 2 x (round trip + synced commit + round trip) = %.3f ms\n\n",
              r.lock_floor_ms());
  std::printf("%-26s %7s %9s %10s %9s %9s %12s %12s %7s\n", "cycle", "clients", "cycles", "cycles/s", "p50 ms",
              "p99 ms", "acq p50 ms", "acq p99 ms", "errors");
  for (const auto& l : r.levels) {
    std::printf("%-26s %7d %9llu %10.0f %9.3f %9.3f %12.3f %12.3f %7llu\n",
                l.handoff ? "handoff of one lock" : "distinct locks", l.clients,
                static_cast<unsigned long long>(l.ops), l.ops_per_s, l.p50_ms, l.p99_ms, l.acquire_p50_ms,
                l.acquire_p99_ms, static_cast<unsigned long long>(l.errors));
  }
  std::printf("\ncycle = acquire + release through LockClient, one session per client thread; distinct locks:\n"
              "one lock per client, never contended; handoff: every client acquires the same lock with a %lld s\n"
              "wait, so cycles/s = handoffs/s and acq = the wait for the lock.\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(kHandoffWait).count()));

  if (r.memory.ran) {
    std::printf("\nlockd memory: %llu sessions opened in %.1f s (%.0f/s), raw open_session requests, no\n"
                "keepalives (session lease %llu s), on a fresh group:\n",
                static_cast<unsigned long long>(r.memory.sessions), r.memory.seconds,
                static_cast<double>(r.memory.sessions) / r.memory.seconds,
                static_cast<unsigned long long>(kMemorySessionLeaseMs / 1000));
    std::printf("  %-8s %-8s %10s %14s %14s %16s\n", "node", "role", "sessions", "VmRSS before", "VmRSS after",
                "bytes/session");
    for (const auto& n : r.memory.nodes) {
      std::printf("  lockd-%-2u %-8s %10llu %10.1f MiB %10.1f MiB %16.0f\n", n.id, n.master ? "master" : "follower",
                  static_cast<unsigned long long>(n.sessions), mib(n.before_kib), mib(n.after_kib),
                  per_session_bytes(n, r.memory.sessions));
    }
  }

  if (r.overhead) print_overhead(*r.overhead, kLockd);
  std::printf("\ntargets:\n");
  print_targets(targets(r));

  std::printf("\nreference numbers from the issue, not measured in this run (lock-recipe cycles/s on this\n"
              "machine; palisade aims at %.0f x ZooKeeper):\n",
              kAimOverZooKeeper);
  std::printf("  %-10s %14s %14s %16s %16s\n", "system", "1 client", "16 clients", "palisade/it, 1",
              "palisade/it, 16");
  const CycleResult* one = r.level(1);
  const CycleResult* sixteen = r.level(16);
  for (const auto& ref : kReferences) {
    std::printf("  %-10s %12.0f/s %12.0f/s %15.2fx %15.2fx\n", ref.system, ref.one_client, ref.sixteen_clients,
                one ? one->ops_per_s / ref.one_client : 0, sixteen ? sixteen->ops_per_s / ref.sixteen_clients : 0);
  }
}

void write_json(const Report& r, const std::string& path) {
  std::ostringstream o;
  o << "{\n  \"lockd\": " << kLockd << ",\n  \"floor\": " << floor_json(r.floor)
    << ",\n  \"lock_floor_ms\": " << r.lock_floor_ms() << ",\n  \"levels\": [";
  for (size_t i = 0; i < r.levels.size(); ++i) {
    const auto& l = r.levels[i];
    o << (i ? ",\n" : "\n") << "    {\"cycle\": \"" << (l.handoff ? "handoff" : "distinct") << "\", \"clients\": "
      << l.clients << ", \"cycles\": " << l.ops << ", \"seconds\": " << l.seconds << ", \"ops_per_s\": " << l.ops_per_s
      << ", \"p50_ms\": " << l.p50_ms << ", \"p99_ms\": " << l.p99_ms << ", \"acquire_p50_ms\": " << l.acquire_p50_ms
      << ", \"acquire_p99_ms\": " << l.acquire_p99_ms << ", \"errors\": " << l.errors << "}";
  }
  o << "\n  ]";
  if (r.overhead) o << ",\n  \"metrics_overhead\": " << overhead_json(*r.overhead, kLockd);
  if (r.memory.ran) {
    o << ",\n  \"memory\": {\"sessions\": " << r.memory.sessions << ", \"seconds\": " << r.memory.seconds
      << ", \"nodes\": [";
    for (size_t i = 0; i < r.memory.nodes.size(); ++i) {
      const auto& n = r.memory.nodes[i];
      o << (i ? ", " : "") << "{\"id\": " << n.id << ", \"master\": " << (n.master ? "true" : "false")
        << ", \"sessions\": " << n.sessions << ", \"rss_before_kib\": " << n.before_kib
        << ", \"rss_after_kib\": " << n.after_kib << "}";
    }
    o << "]}";
  }
  o << ",\n  \"reference_not_measured\": [";
  for (size_t i = 0; i < std::size(kReferences); ++i) {
    o << (i ? ", " : "") << "{\"system\": \"" << kReferences[i].system
      << "\", \"ops_per_s_1_client\": " << kReferences[i].one_client
      << ", \"ops_per_s_16_clients\": " << kReferences[i].sixteen_clients << "}";
  }
  o << "],\n  \"targets\": " << targets_json(targets(r), "  ") << "\n}\n";
  write_file(path, o.str());
}

// One run of `clients` cycling distinct locks against a fresh group, serving
// metrics (and scraped) or not.
OverheadRun overhead_round(const Flags& flags, const std::string& dir, int clients, bool metrics) {
  auto cluster = start_group(flags, dir, ClusterTiming{}, metrics);
  try {
    std::vector<pid_t> pids;
    std::vector<std::string> addresses;
    for (uint32_t id : cluster->lockd_ids()) {
      pids.push_back(cluster->lockd(id).pid());
      if (metrics) addresses.push_back(cluster->lockd(id).metrics_address());
    }
    std::optional<MetricsScraper> scraper;
    if (metrics) scraper.emplace(addresses, std::chrono::milliseconds(flags.overhead.scrape_ms));
    auto lock_of = [](int c) { return "bench/overhead/" + std::to_string(c); };
    return overhead_run(
        metrics, pids, addresses, scraper ? &*scraper : nullptr, [&](const LoadMarks& marks) -> LoadResult {
          return run_cycles(cluster->lockd_endpoints(), false, clients, flags.seconds, lock_of, 0ms, marks);
        });
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + "\n" + cluster->logs(30));
  }
}

int run(const Flags& flags) {
  TempDir tmp(flags.tmp_dir);
  std::printf("palisade-lock-bench: %d x %s, data in %s, %.1f s per level\n", kLockd, flags.lockd_bin.c_str(),
              tmp.path().c_str(), flags.seconds);
  Report report;
  {
    auto cluster = start_group(flags, tmp.sub("group"), ClusterTiming{});
    const std::vector<std::string> nodes = cluster->lockd_endpoints();
    std::printf("lock group on %s, %s, %s\n", nodes[0].c_str(), nodes[1].c_str(), nodes[2].c_str());
    try {
      for (int clients : flags.clients) {
        const int level = static_cast<int>(report.levels.size());
        auto lock_of = [level](int c) { return "bench/" + std::to_string(level) + "/" + std::to_string(c); };
        CycleResult l = run_cycles(nodes, false, clients, flags.seconds, lock_of, 0ms);
        std::printf("  distinct locks, %d clients: %.0f cycles/s, p50 %.3f ms, p99 %.3f ms\n", clients, l.ops_per_s,
                    l.p50_ms, l.p99_ms);
        std::fflush(stdout);
        report.levels.push_back(l);
      }
      if (flags.handoff_clients > 0) {
        auto lock_of = [](int) { return std::string("bench/handoff"); };
        CycleResult l = run_cycles(nodes, true, flags.handoff_clients, flags.seconds, lock_of, kHandoffWait);
        std::printf("  handoff of one lock, %d clients: %.0f handoffs/s, acquire wait p50 %.3f ms, p99 %.3f ms\n",
                    l.clients, l.ops_per_s, l.acquire_p50_ms, l.acquire_p99_ms);
        std::fflush(stdout);
        report.levels.push_back(l);
      }
      for (uint32_t id : cluster->lockd_ids()) {
        if (!cluster->lockd(id).running()) throw std::runtime_error("a palisade-lockd exited during the run");
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(e.what()) + "\n" + cluster->logs(30));
    }
  }  // the group is killed here
  if (flags.overhead.rounds > 0) {
    const int clients = *std::max_element(flags.clients.begin(), flags.clients.end());
    int run_index = 0;
    report.overhead = measure_overhead(clients, flags.overhead, [&](bool metrics) {
      return overhead_round(flags, tmp.sub("overhead-" + std::to_string(++run_index)), clients, metrics);
    });
  }
  if (!flags.skip_memory) {
    report.memory = measure_memory(flags, tmp.sub("memory"), flags.sessions);
    std::printf("  memory: %llu sessions opened in %.1f s\n", static_cast<unsigned long long>(report.memory.sessions),
                report.memory.seconds);
  }

  // The floor, with the daemons stopped: an acquire request of the benchmark's size.
  const std::string acquire = wire::encode_lock_request(
      {1, wire::AcquireRequest{.epoch = 1, .session = 100000, .lock = "bench/2/63", .call = 100000}});
  report.floor = measure_floor(flags.floor_seconds, acquire.size(), tmp.sub("lmdb"), acquire.size());

  print(report);
  if (!flags.json_path.empty()) write_json(report, flags.json_path);
  int rc = 0;
  for (const auto& l : report.levels) {
    if (l.errors != 0) {
      std::fprintf(stderr, "%llu cycles of the %d-client %s level failed, the first: %s\n",
                   static_cast<unsigned long long>(l.errors), l.clients, l.handoff ? "handoff" : "distinct-lock",
                   l.first_error.c_str());
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
  CLI::App app{"palisade-lock-bench: acquire+release through LockClient against three real palisade-lockd\n"
               "processes over loopback (distinct locks, and the handoff of one contended lock), lockd memory\n"
               "with many sessions, next to the floor (bare ZeroMQ round trip, bare synced LMDB commit)."};
  app.set_version_flag("--version", palisade::version_line("palisade-lock-bench"));
  palisade::bench::add_common_options(app, flags, "Client levels on distinct locks (one LockClient per thread)");
  app.add_option("--lockd-bin", flags.lockd_bin, "palisade-lockd executable")->capture_default_str();
  app.add_option("--handoff-clients", flags.handoff_clients, "Clients contending one lock (0: skip)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app.add_option("--sessions", flags.sessions, "Sessions opened for the memory measurement")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  app.add_flag("--skip-memory", flags.skip_memory, "Do not measure lockd memory with --sessions sessions");
  palisade::bench::add_overhead_options(app, flags.overhead);
  CLI11_PARSE(app, argc, argv);
  return palisade::bench::run_main("palisade-lock-bench", [&] { return palisade::bench::run(flags); });
}
