// palisade-quorum-bench: fenced puts and gets through QuorumStore against three
// real palisade-replica processes (N=3, W=2, R=2) over loopback, next to the
// floor that bounds them (a bare ZeroMQ round trip and a bare synced LMDB commit
// on the same disk), judged against the targets. bench/README.md explains
// what each number means.
//
// Everything runs in a temporary directory for a bounded time; the daemons
// (cli::ReplicaProcess) are killed on the way out, also on error, and die with
// this process if it is killed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_support.h"
#include "client/replica_connection.h"
#include "base/hybrid_clock.h"
#include "base/physical_clock.h"
#include "wire/replica_protocol.h"
#include "palisade/quorum_store.h"
#include "base/temp_dir.h"
#include "base/version.h"

namespace palisade::bench {
namespace {

constexpr size_t kValueBytes = 100;
constexpr int kReplicas = 3;
constexpr int kPreloadKeys = 10000;  // the keys the gets read

struct Flags : CommonFlags {
  std::string stores = "both";  // per-client, isolated or both
  std::vector<std::string> ops = {"put", "get"};
};

enum class Op { kPut, kGet };
const char* op_name(Op op) { return op == Op::kPut ? "put" : "get"; }

struct LevelResult : LoadResult {
  Op op = Op::kPut;
  bool isolated = false;  // every thread's store has an engine of its own (share_connections off)
  int clients = 0;
  uint64_t client_rss_kib = 0;       // this process, VmRSS at the end of the level (stores still open)
  uint64_t client_peak_kib = 0;      // this process, VmHWM (reset before the level when the kernel allows)
  uint64_t replicas_rss_kib = 0;     // the three daemons' VmRSS summed, at the end of the level
};

const char* stores_name(const LevelResult& l) { return l.isolated ? "isolated" : "per-client"; }

class Bench {
 public:
  Bench(const Flags& flags, std::vector<std::string> endpoints) : flags_(flags), endpoints_(std::move(endpoints)) {}

  std::unique_ptr<QuorumStore> open_store(bool isolated = false) const {
    QuorumStoreOptions o;
    o.share_connections = !isolated;
    o.replicas = endpoints_;
    o.read_quorum = 2;
    o.write_quorum = 2;
    auto store = QuorumStore::open(o);
    if (!store.is_ok()) throw std::runtime_error("cannot open a QuorumStore: " + store.status().to_string());
    return std::move(store).value();
  }

  // Fenced puts of the keys the get levels read, many in flight at once.
  void preload() {
    auto store = open_store();
    const Fence fence{"bench/preload", 1};
    if (auto f = store->fence(fence); !f.status.is_ok()) throw std::runtime_error("preload fence: " + f.status.to_string());
    const std::string value(kValueBytes, 'p');
    std::vector<std::future<WriteResult>> inflight;
    for (int i = 0; i < kPreloadKeys; ++i) {
      inflight.push_back(store->put_async(get_key(i), value, fence));
      if (inflight.size() == 256 || i + 1 == kPreloadKeys) {
        for (auto& f : inflight) {
          WriteResult w = f.get();
          if (!w.status.is_ok()) throw std::runtime_error("preload put: " + w.status.to_string());
        }
        inflight.clear();
      }
    }
  }

  // `clients` threads, each doing blocking `op`s until `seconds` pass on a store
  // of its own: the stores share one engine unless `isolated`. Every put thread
  // fences its own lock once before the clock starts and writes distinct keys
  // under it.
  LevelResult run_level(Op op, bool isolated, int clients, const Replicas& replicas) {
    const int level = next_level_++;
    std::vector<std::unique_ptr<QuorumStore>> stores;
    for (int i = 0; i < clients; ++i) stores.push_back(open_store(isolated));
    bool peak_reset = reset_peak_rss();

    const std::string value(kValueBytes, 'v');
    LevelResult r;
    static_cast<LoadResult&>(r) = run_load(clients, flags_.seconds, [&](int c) -> Operation {
      QuorumStore& store = *stores[c];
      const std::string lock = "bench/" + std::to_string(level) + "/" + std::to_string(c);
      const Fence fence{lock, static_cast<uint64_t>(c) + 1};
      Operation one = [&store, &value, op, c, fence, prefix = lock + "/", i = uint64_t{0}]() mutable -> Status {
        ++i;
        if (op == Op::kPut) return store.put(prefix + std::to_string(i), value, fence).status;
        ReadResult read = store.get(get_key(static_cast<int>((static_cast<uint64_t>(c) * 7919 + i) % kPreloadKeys)));
        if (read.status.is_ok() && !read.found) return Status(Code::kInternal, "a preloaded key was not found");
        return read.status;
      };
      if (op == Op::kPut) {
        if (auto f = store.fence(fence); !f.status.is_ok()) throw std::runtime_error("fence: " + f.status.to_string());
      }
      if (Status s = one(); !s.is_ok()) throw std::runtime_error(std::string("warm-up ") + op_name(op) + ": " + s.to_string());
      return one;
    });

    r.op = op;
    r.isolated = isolated;
    r.clients = clients;
    r.client_rss_kib = status_kib(0, "VmRSS");
    r.client_peak_kib = peak_reset ? status_kib(0, "VmHWM") : 0;
    for (const auto& replica : replicas) r.replicas_rss_kib += status_kib(replica->process().pid(), "VmRSS");
    return r;
  }

  static std::string get_key(int i) { return "bench/get/" + std::to_string(i); }

 private:
  const Flags& flags_;
  std::vector<std::string> endpoints_;
  int next_level_ = 0;
};

// Diagnostics: one replica served directly (no QuorumStore), one request in
// flight: a read of a preloaded key, and a fenced synced write. p50s in ms.
struct Direct {
  double read_p50_ms = 0;
  double write_p50_ms = 0;
};

Direct direct_replica_p50s(const std::string& endpoint, double seconds) {
  client::ReplicaConnection conn(endpoint);
  const Fence fence{"bench/direct", 1};
  if (Status s = reply_status(conn.call({0, wire::FenceRequest{fence.lock, fence.token}}, kReplyTimeoutMs));
      !s.is_ok()) {
    throw std::runtime_error("direct fence: " + s.to_string());
  }
  SystemClock wall;
  HybridClock hlc(wall);
  const std::string value(kValueBytes, 'd');
  Direct d;
  for (bool write : {false, true}) {
    std::vector<double> samples;
    auto deadline = Clock::now() + seconds_duration(seconds);
    for (uint64_t i = 2; Clock::now() < deadline || samples.size() < 10; ++i) {
      wire::ReplicaRequest req{i, wire::ReadRequest{Bench::get_key(static_cast<int>(i % kPreloadKeys)), ""}};
      if (write) {
        req.body = wire::WriteRequest{"bench/direct/" + std::to_string(i), value, false, {fence.token, hlc.now()},
                                      fence.lock};
      }
      auto t0 = Clock::now();
      Status s = reply_status(conn.call(req, kReplyTimeoutMs));
      samples.push_back(ms_between(t0, Clock::now()));
      if (!s.is_ok()) throw std::runtime_error("direct request: " + s.to_string());
    }
    (write ? d.write_p50_ms : d.read_p50_ms) = quantile(samples, 0.5);
  }
  return d;
}

struct Report {
  std::vector<LevelResult> levels;
  Floor floor;
  Direct direct;
  uint64_t client_peak_kib = 0;    // VmHWM of the whole run
  uint64_t replica_peak_kib = 0;   // the largest daemon VmHWM
  const LevelResult* level(Op op, bool isolated, int clients) const {
    for (const auto& l : levels) {
      // With one client both models are the same; it runs once, as per-client.
      if (l.op == op && l.clients == clients && (l.isolated == isolated || clients == 1)) return &l;
    }
    return nullptr;
  }
};

std::vector<Target> targets(const Report& r) {
  std::vector<Target> out;
  const LevelResult* put1 = r.level(Op::kPut, false, 1);
  const LevelResult* get1 = r.level(Op::kGet, false, 1);
  if (put1 != nullptr) {
    out.push_back({"1-client put p50 <= 1.5 x (round trip p50 + synced commit p50) [ms]", put1->p50_ms,
                   1.5 * (r.floor.round_trip_p50_ms + r.floor.commit_p50_ms), true});
  }
  if (get1 != nullptr) {
    out.push_back({"1-client get p50 <= 2 x round trip p50 [ms]", get1->p50_ms, 2 * r.floor.round_trip_p50_ms, true});
  }
  for (bool isolated : {false, true}) {
    const LevelResult* put64 = r.level(Op::kPut, isolated, 64);
    if (put1 != nullptr && put64 != nullptr) {
      out.push_back({std::string("64-client put ops/s >= 5 x 1-client put ops/s (") +
                         (isolated ? "isolated stores, for comparison" : "one store per client") + ")",
                     put64->ops_per_s, 5 * put1->ops_per_s, false});
    }
  }
  return out;
}

double mib(uint64_t kib) { return static_cast<double>(kib) / 1024; }

void print(const Report& r) {
  print_floor(r.floor);
  std::printf("%-4s %-11s %7s %9s %10s %9s %9s %7s %11s %12s %13s\n", "op", "stores", "clients", "ops", "ops/s",
              "p50 ms", "p99 ms", "errors", "client RSS", "client peak", "replicas RSS");
  for (const auto& l : r.levels) {
    std::printf("%-4s %-11s %7d %9llu %10.0f %9.3f %9.3f %7llu %7.1f MiB %8.1f MiB %9.1f MiB\n", op_name(l.op),
                stores_name(l), l.clients, static_cast<unsigned long long>(l.ops), l.ops_per_s, l.p50_ms, l.p99_ms,
                static_cast<unsigned long long>(l.errors), mib(l.client_rss_kib), mib(l.client_peak_kib),
                mib(l.replicas_rss_kib));
  }
  std::printf("\nstores: per-client = one QuorumStore per client thread; being equal, they share one engine\n"
              "        (connections, I/O thread), as any stores of one process do by default;\n"
              "        isolated = the same with share_connections off: an engine per store.\n"
              "client = this process (VmRSS at the end of the level, VmHWM during it); replicas RSS = the\n"
              "three daemons' VmRSS summed. Peaks over the run: client %.1f MiB, largest replica %.1f MiB.\n\n"
              "targets:\n",
              mib(r.client_peak_kib), mib(r.replica_peak_kib));
  print_targets(targets(r));
  std::printf("\ndiagnostics: one replica served directly, one request in flight: read p50 %.3f ms, synced\n"
              "fenced write p50 %.3f ms\n",
              r.direct.read_p50_ms, r.direct.write_p50_ms);
}

void write_json(const Report& r, const std::string& path) {
  std::ostringstream o;
  o << "{\n  \"n\": 3, \"w\": 2, \"r\": 2, \"value_bytes\": " << kValueBytes
    << ",\n  \"floor\": " << floor_json(r.floor) << ",\n  \"direct_replica\": {\"read_p50_ms\": "
    << r.direct.read_p50_ms << ", \"write_p50_ms\": " << r.direct.write_p50_ms << "},\n  \"levels\": [";
  for (size_t i = 0; i < r.levels.size(); ++i) {
    const auto& l = r.levels[i];
    o << (i ? ",\n" : "\n") << "    {\"op\": \"" << op_name(l.op) << "\", \"stores\": \"" << stores_name(l)
      << "\", \"clients\": " << l.clients << ", \"ops\": " << l.ops << ", \"seconds\": " << l.seconds
      << ", \"ops_per_s\": " << l.ops_per_s << ", \"p50_ms\": " << l.p50_ms << ", \"p99_ms\": " << l.p99_ms
      << ", \"errors\": " << l.errors << ", \"client_rss_kib\": " << l.client_rss_kib
      << ", \"client_peak_kib\": " << l.client_peak_kib << ", \"replicas_rss_kib\": " << l.replicas_rss_kib << "}";
  }
  o << "\n  ],\n  \"client_peak_kib\": " << r.client_peak_kib << ",\n  \"replica_peak_kib\": " << r.replica_peak_kib
    << ",\n  \"targets\": " << targets_json(targets(r), "  ") << "\n}\n";
  write_file(path, o.str());
}

int run(const Flags& flags) {
  TempDir tmp(flags.tmp_dir);
  std::printf("palisade-quorum-bench: 3 x %s, N=3 W=2 R=2, data in %s, %.1f s per level\n", flags.replica_bin.c_str(),
              tmp.path().c_str(), flags.seconds);
  std::vector<bool> models;
  if (flags.stores != "isolated") models.push_back(false);
  if (flags.stores != "per-client") models.push_back(true);

  Report report;
  {
    Replicas replicas = start_replicas(flags.replica_bin, tmp.path(), kReplicas);
    std::vector<std::string> endpoints;
    for (const auto& replica : replicas) endpoints.push_back(replica->endpoint());
    std::printf("replicas on %s, %s, %s\n", endpoints[0].c_str(), endpoints[1].c_str(), endpoints[2].c_str());
    try {
      Bench bench(flags, endpoints);
      bench.preload();
      for (Op op : {Op::kPut, Op::kGet}) {
        if (std::find(flags.ops.begin(), flags.ops.end(), op_name(op)) == flags.ops.end()) continue;
        for (int clients : flags.clients) {
          for (bool isolated : models) {
            if (clients == 1 && isolated && models.size() > 1) continue;  // the same as per-client
            LevelResult level = bench.run_level(op, isolated, clients, replicas);
            std::printf("  %s, %d clients, %s stores: %.0f ops/s, p50 %.3f ms, p99 %.3f ms\n", op_name(op), clients,
                        stores_name(level), level.ops_per_s, level.p50_ms, level.p99_ms);
            std::fflush(stdout);
            report.levels.push_back(level);
          }
        }
      }
      report.direct = direct_replica_p50s(endpoints[0], flags.floor_seconds);
      for (const auto& replica : replicas) {
        if (!replica->process().running()) throw std::runtime_error("a palisade-replica exited during the run");
        report.replica_peak_kib = std::max(report.replica_peak_kib, status_kib(replica->process().pid(), "VmHWM"));
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(with_logs(e.what(), replicas));
    }
  }  // the replicas are killed here, before the floor is measured
  report.client_peak_kib = status_kib(0, "VmHWM");  // since the last reset, when there was one
  for (const auto& l : report.levels) report.client_peak_kib = std::max(report.client_peak_kib, l.client_peak_kib);

  // The floor, with the daemons stopped: a write request of the benchmark's size.
  const size_t write_bytes =
      wire::encode_request({1, wire::WriteRequest{"bench/99/63/100000", std::string(kValueBytes, 'v'), false,
                                                  {64, 1}, "bench/99/63"}})
          .size();
  report.floor = measure_floor(flags.floor_seconds, write_bytes, tmp.sub("lmdb"), kValueBytes);

  print(report);
  if (!flags.json_path.empty()) write_json(report, flags.json_path);
  int rc = 0;
  for (const auto& l : report.levels) {
    if (l.errors != 0) {
      std::fprintf(stderr, "%llu %ss of the %d-client %s level failed, the first: %s\n",
                   static_cast<unsigned long long>(l.errors), op_name(l.op), l.clients, stores_name(l),
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
  CLI::App app{"palisade-quorum-bench: fenced puts and gets through QuorumStore against three real\n"
               "palisade-replica processes (N=3, W=2, R=2) over loopback, next to the floor (bare ZeroMQ\n"
               "round trip, bare synced LMDB commit on the same disk)."};
  app.set_version_flag("--version", palisade::version_line("palisade-quorum-bench"));
  palisade::bench::add_common_options(app, flags, "Client levels (threads doing blocking calls)");
  app.add_option("--stores", flags.stores,
                 "per-client: one QuorumStore per client thread (sharing one engine); isolated: the same\n"
                 "with an engine per store (share_connections off); both")
      ->capture_default_str()
      ->check(CLI::IsMember({"per-client", "isolated", "both"}));
  app.add_option("--ops", flags.ops, "Operations to run (the targets need both)")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::IsMember({"put", "get"}));
  CLI11_PARSE(app, argc, argv);
  return palisade::bench::run_main("palisade-quorum-bench", [&] { return palisade::bench::run(flags); });
}
