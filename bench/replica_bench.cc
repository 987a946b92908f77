// palisade-replica-bench: end-to-end load on one real palisade-replica, next to
// the floor that bounds it (a bare ZeroMQ round trip and a bare synced LMDB
// commit on the same disk), judged against the targets. bench/README.md
// explains what each number means.
//
// Everything runs over loopback, in a temporary directory, for a bounded time;
// the daemon is stopped by pid on the way out, also on error (and it dies with
// this process through PR_SET_PDEATHSIG if this process is killed).
#include <fcntl.h>
#include <lmdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/hybrid_clock.h"
#include "common/physical_clock.h"
#include "common/replica_protocol.h"
#include "common/transport.h"

namespace palisade::bench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr size_t kValueBytes = 100;
constexpr int kReplyTimeoutMs = 5000;
constexpr const char* kLock = "bench";

struct Flags {
  std::string replica_bin;
  std::string tmp_dir;
  double seconds = 3;
  double floor_seconds = 1;
  std::vector<int> clients = {1, 16, 64};
  std::string json_path;
};

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The q-quantile (0..1) of `samples_ms`, which it sorts.
double quantile(std::vector<double>& samples_ms, double q) {
  if (samples_ms.empty()) return 0;
  std::sort(samples_ms.begin(), samples_ms.end());
  size_t i = std::min(samples_ms.size() - 1, static_cast<size_t>(q * static_cast<double>(samples_ms.size())));
  return samples_ms[i];
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free loopback port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A directory removed with its contents when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& base) {
    std::string pattern = base + "/palisade-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a directory in " + base);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The palisade-replica under test. Stopped (SIGTERM, then SIGKILL) when the object dies.
class Daemon {
 public:
  Daemon(const std::string& bin, const std::string& data_dir, const std::string& endpoint, const std::string& log) {
    std::vector<std::string> argv = {bin, "--data-dir", data_dir, "--listen", endpoint, "--log-level", "warn"};
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {  // only async-signal-safe calls until exec
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Daemon() { stop(); }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  pid_t pid() const { return pid_; }
  bool running() {
    if (exited_) return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) exited_ = true;
    return !exited_;
  }
  // Peak resident set size so far, in KiB (VmHWM); 0 when unreadable.
  uint64_t peak_rss_kib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
    }
    return 0;
  }
  void stop() {
    if (!running()) return;
    ::kill(pid_, SIGTERM);
    auto deadline = Clock::now() + 3s;
    while (running() && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
    if (running()) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
      exited_ = true;
    }
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
};

// One synchronous client: a DEALER socket, one request in flight.
class Client {
 public:
  Client(zmq::context_t& ctx, const std::string& endpoint)
      : socket_(transport::make_dealer(ctx, endpoint, transport::SocketOptions{})) {
    socket_.set(zmq::sockopt::immediate, false);  // queue until connected
  }

  // Sends `request` and returns its reply; throws after kReplyTimeoutMs.
  wire::ReplicaReply call(const wire::ReplicaRequest& request) {
    socket_.send(zmq::buffer(wire::encode_request(request)), zmq::send_flags::none);
    auto deadline = Clock::now() + std::chrono::milliseconds(kReplyTimeoutMs);
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::max(0ms, left));
      if (!(item.revents & ZMQ_POLLIN)) throw std::runtime_error("no reply from palisade-replica within 5 s");
      zmq::message_t msg;
      (void)socket_.recv(msg);
      auto reply = wire::decode_reply({static_cast<const char*>(msg.data()), msg.size()}, limits_);
      if (!reply.is_ok()) throw std::runtime_error("undecodable reply: " + reply.status().to_string());
      if (reply.value().id == request.id) return std::move(reply).value();
    }
  }

 private:
  zmq::socket_t socket_;
  wire::Limits limits_;
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
        Client client(ctx, endpoint);
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
  end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
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

// Floor (a): DEALER -> ROUTER echo over loopback, one message in flight, the
// size of an encoded write. p50 in ms.
double echo_round_trip_p50_ms(double seconds, size_t message_bytes) {
  zmq::context_t ctx(1);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  zmq::socket_t router = transport::make_router(ctx, endpoint, transport::SocketOptions{});
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    while (!stop.load()) {
      zmq::poll(&item, 1, 50ms);
      while (auto routed = transport::try_recv_routed(router)) {
        transport::send_routed(router, *routed, {static_cast<const char*>(routed->payload.data()), routed->payload.size()});
      }
    }
  });
  std::vector<double> samples;
  try {
    zmq::socket_t dealer = transport::make_dealer(ctx, endpoint, transport::SocketOptions{});
    dealer.set(zmq::sockopt::immediate, false);
    const std::string payload(message_bytes, 'e');
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
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

// Floor (b): one small put per mdb_txn_commit, default (synced) flags, in `dir`. p50 in ms.
double synced_commit_p50_ms(const std::string& dir, double seconds) {
  MDB_env* env = nullptr;
  auto check = [&](int rc, const char* what) {
    if (rc != 0) {
      if (env != nullptr) mdb_env_close(env);
      throw std::runtime_error(std::string("LMDB ") + what + ": " + mdb_strerror(rc));
    }
  };
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
  const std::string value(kValueBytes, 'l');
  std::vector<double> samples;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
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

void wait_ready(Daemon& daemon, const std::string& endpoint) {
  zmq::context_t ctx(1);
  auto deadline = Clock::now() + 10s;
  uint64_t id = 0;
  while (Clock::now() < deadline) {
    if (!daemon.running()) throw std::runtime_error("palisade-replica exited at start (see its log)");
    try {
      zmq::socket_t probe = transport::make_dealer(ctx, endpoint, transport::SocketOptions{});
      probe.set(zmq::sockopt::immediate, false);
      probe.send(zmq::buffer(wire::encode_request({++id, wire::PingRequest{}})), zmq::send_flags::none);
      zmq::pollitem_t item{probe.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 200ms);
      if (item.revents & ZMQ_POLLIN) return;
    } catch (const zmq::error_t&) {
    }
  }
  throw std::runtime_error("palisade-replica did not answer a ping within 10 s");
}

std::string default_replica_bin() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "palisade-replica";
  return (self.parent_path() / ".." / "replica" / "palisade-replica").lexically_normal().string();
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

struct Target {
  std::string name;
  double measured = 0;
  double bound = 0;
  bool at_most = true;  // measured <= bound, else measured >= bound
  bool pass() const { return at_most ? measured <= bound : measured >= bound; }
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
  for (const auto& t : targets(r)) {
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
  o << "\n  ],\n  \"daemon_peak_rss_kib\": " << r.daemon_peak_rss_kib << ",\n  \"targets\": [";
  auto ts = targets(r);
  for (size_t i = 0; i < ts.size(); ++i) {
    o << (i ? ",\n" : "\n") << "    {\"name\": \"" << json_escape(ts[i].name) << "\", \"measured\": " << ts[i].measured
      << ", \"bound\": " << ts[i].bound << ", \"pass\": " << (ts[i].pass() ? "true" : "false") << "}";
  }
  o << "\n  ]\n}\n";
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
    wait_ready(daemon, endpoint);
    SystemClock wall;
    HybridClock hlc(wall);
    const uint64_t token = 1;
    {
      zmq::context_t ctx(1);
      Client client(ctx, endpoint);
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
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    throw std::runtime_error(std::string(e.what()) + "\npalisade-replica log:\n" + ss.str());
  }

  // A write request of the benchmark's size, so the echo moves as many bytes.
  const size_t write_bytes =
      wire::encode_request({1, wire::WriteRequest{"bench/64/63/100000", std::string(kValueBytes, 'v'), false, {1, 1}, kLock}})
          .size();
  report.round_trip_p50_ms = echo_round_trip_p50_ms(flags.floor_seconds, write_bytes);
  report.commit_p50_ms = synced_commit_p50_ms(lmdb_dir, flags.floor_seconds);

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
