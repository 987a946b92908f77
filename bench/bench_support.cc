#include "bench/bench_support.h"

#include <lmdb.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <zmq.hpp>

#include "transport/transport.h"
#include "cli/process.h"

namespace palisade::bench {

using namespace std::chrono_literals;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

Clock::duration seconds_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double quantile(std::vector<double>& samples_ms, double q) {
  if (samples_ms.empty()) return 0;
  std::sort(samples_ms.begin(), samples_ms.end());
  size_t i = std::min(samples_ms.size() - 1, static_cast<size_t>(q * static_cast<double>(samples_ms.size())));
  return samples_ms[i];
}

uint64_t status_kib(pid_t pid, const char* field) {
  std::ifstream in(pid == 0 ? std::string("/proc/self/status") : "/proc/" + std::to_string(pid) + "/status");
  const std::string prefix = std::string(field) + ":";
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stoull(line.substr(prefix.size()));
  }
  return 0;
}

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

void add_common_options(CLI::App& app, CommonFlags& flags, const std::string& clients_help) {
  app.add_option("--replica-bin", flags.replica_bin, "palisade-replica executable")->capture_default_str();
  app.add_option("--tmp-dir", flags.tmp_dir, "Where the replica data and the LMDB floor's data go (same disk)")
      ->capture_default_str();
  app.add_option("--seconds", flags.seconds, "Duration of each level")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("--floor-seconds", flags.floor_seconds, "Duration of each floor measurement")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("--clients", flags.clients, clients_help)
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  app.add_option("--json", flags.json_path, "Also write the results as JSON to this file");
}

int run_main(const char* name, const std::function<int()>& run) {
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

Replicas start_replicas(const std::string& replica_bin, const std::string& dir, int count,
                        const std::vector<std::string>& extra_args) {
  Replicas replicas;
  for (int i = 0; i < count; ++i) {
    const std::string data_dir = dir + "/replica" + std::to_string(i);
    std::filesystem::create_directories(data_dir);
    std::vector<std::string> args = {"--log-level", "warn"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    replicas.push_back(std::make_unique<cli::ReplicaProcess>(replica_bin, data_dir, std::move(args)));
  }
  return replicas;
}

std::string with_logs(const std::string& what, const Replicas& replicas) {
  std::string out = what;
  for (size_t i = 0; i < replicas.size(); ++i) {
    out += "\nreplica " + std::to_string(i) + " log:\n" + replicas[i]->process().log();
  }
  return out;
}

Status reply_status(const Result<wire::ReplicaReply>& reply) {
  return reply.is_ok() ? reply.value().status : reply.status();
}

LoadResult run_load(int clients, double seconds, const std::function<Operation(int)>& make_operation,
                    const LoadMarks& marks) {
  std::vector<std::vector<double>> latencies(clients);
  std::vector<uint64_t> errors(clients, 0);
  std::vector<std::string> first_errors(clients), failures(clients);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point start, end;  // written before `go`, read after it
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      try {
        Operation op = make_operation(c);
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        const Clock::time_point stop = end;
        for (Clock::time_point t0 = Clock::now(); t0 < stop; t0 = Clock::now()) {
          Status s = op();
          latencies[c].push_back(ms_between(t0, Clock::now()));
          if (!s.is_ok() && errors[c]++ == 0) first_errors[c] = s.to_string();
        }
      } catch (const std::exception& e) {
        failures[c] = e.what();
        ready.fetch_add(1);
      }
    });
  }
  while (ready.load() < clients) std::this_thread::sleep_for(1ms);
  if (marks.start) marks.start();
  start = Clock::now();
  end = start + seconds_duration(seconds);
  go.store(true);
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  if (marks.stop) marks.stop();
  for (const auto& f : failures) {
    if (!f.empty()) throw std::runtime_error(f);
  }

  LoadResult r;
  r.seconds = elapsed;
  std::vector<double> all;
  for (int c = 0; c < clients; ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    r.errors += errors[c];
    if (r.first_error.empty()) r.first_error = first_errors[c];
  }
  r.ops = all.size();
  r.ops_per_s = static_cast<double>(r.ops) / elapsed;
  r.p50_ms = quantile(all, 0.50);
  r.p99_ms = quantile(all, 0.99);
  return r;
}

Floor measure_floor(double seconds, size_t message_bytes, const std::string& lmdb_dir, size_t value_bytes) {
  return {echo_round_trip_p50_ms(seconds, message_bytes), synced_commit_p50_ms(lmdb_dir, seconds, value_bytes)};
}

void print_floor(const Floor& floor) {
  std::printf("\nfloor: ZeroMQ DEALER->ROUTER round trip p50 %.3f ms, synced LMDB commit p50 %.3f ms\n\n",
              floor.round_trip_p50_ms, floor.commit_p50_ms);
}

std::string floor_json(const Floor& floor) {
  std::ostringstream o;
  o << "{\"round_trip_p50_ms\": " << floor.round_trip_p50_ms << ", \"synced_commit_p50_ms\": " << floor.commit_p50_ms
    << "}";
  return o.str();
}

double echo_round_trip_p50_ms(double seconds, size_t message_bytes) {
  // Client and server each with a context (an I/O thread) of their own, as
  // in two processes: one context would serve both ends in one thread.
  zmq::context_t ctx(1), server_ctx(1);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(cli::free_port());
  zmq::socket_t router = transport::make_router(server_ctx, endpoint, transport::SocketOptions{});
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    while (!stop.load()) {
      zmq::poll(&item, 1, 50ms);
      while (auto routed = transport::try_recv_routed(router)) {
        transport::send_routed(router, *routed, routed->frame());
      }
    }
  });
  std::vector<double> samples;
  try {
    zmq::socket_t dealer = transport::make_dealer(ctx, endpoint, transport::SocketOptions{});
    dealer.set(zmq::sockopt::immediate, false);
    const std::string payload(message_bytes, 'e');
    auto deadline = Clock::now() + seconds_duration(seconds);
    for (int i = 0; Clock::now() < deadline || i < 10; ++i) {
      auto t0 = Clock::now();
      dealer.send(zmq::buffer(payload), zmq::send_flags::none);
      zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(kReplyTimeoutMs));
      if (!(item.revents & ZMQ_POLLIN)) throw std::runtime_error("echo server did not answer");
      zmq::message_t msg;
      (void)dealer.recv(msg);
      if (i > 0) samples.push_back(ms_between(t0, Clock::now()));  // the first one includes connecting
    }
  } catch (...) {
    stop.store(true);
    echo.join();
    throw;
  }
  stop.store(true);
  echo.join();
  return quantile(samples, 0.5);
}

double synced_commit_p50_ms(const std::string& dir, double seconds, size_t value_bytes) {
  MDB_env* env = nullptr;
  auto check = [&](int rc, const char* what) {
    if (rc != 0) {
      if (env != nullptr) mdb_env_close(env);
      throw std::runtime_error(std::string("LMDB ") + what + ": " + mdb_strerror(rc));
    }
  };
  std::filesystem::create_directories(dir);
  check(mdb_env_create(&env), "create");
  check(mdb_env_set_mapsize(env, size_t{1} << 30), "set_mapsize");
  check(mdb_env_open(env, dir.c_str(), 0, 0644), "open");
  MDB_dbi dbi = 0;
  {
    MDB_txn* txn = nullptr;
    check(mdb_txn_begin(env, nullptr, 0, &txn), "begin");
    check(mdb_dbi_open(txn, nullptr, 0, &dbi), "dbi_open");
    check(mdb_txn_commit(txn), "commit");
  }
  const std::string value(value_bytes, 'l');
  std::vector<double> samples;
  auto deadline = Clock::now() + seconds_duration(seconds);
  for (uint64_t i = 0; Clock::now() < deadline || i < 10; ++i) {
    std::string key = "k" + std::to_string(i);
    auto t0 = Clock::now();
    MDB_txn* txn = nullptr;
    check(mdb_txn_begin(env, nullptr, 0, &txn), "begin");
    MDB_val k{key.size(), key.data()}, v{value.size(), const_cast<char*>(value.data())};
    if (int rc = mdb_put(txn, dbi, &k, &v, 0); rc != 0) {
      mdb_txn_abort(txn);
      check(rc, "put");
    }
    check(mdb_txn_commit(txn), "commit");
    samples.push_back(ms_between(t0, Clock::now()));
  }
  mdb_env_close(env);
  return quantile(samples, 0.5);
}

void print_targets(const std::vector<Target>& targets) {
  for (const auto& t : targets) {
    std::printf("  %-4s %s: %.3f vs %.3f\n", t.pass() ? "PASS" : "MISS", t.name.c_str(), t.measured, t.bound);
  }
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string targets_json(const std::vector<Target>& targets, const std::string& indent) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    o << (i ? ",\n" : "\n") << indent << "  {\"name\": \"" << json_escape(t.name) << "\", \"measured\": " << t.measured
      << ", \"bound\": " << t.bound << ", \"pass\": " << (t.pass() ? "true" : "false") << "}";
  }
  o << "\n" << indent << "]";
  return o.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace palisade::bench
