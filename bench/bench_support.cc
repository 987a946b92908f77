#include "bench/bench_support.h"

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
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/transport.h"

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

std::string default_replica_bin() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "palisade-replica";
  return (self.parent_path() / ".." / "replica" / "palisade-replica").lexically_normal().string();
}

TempDir::TempDir(const std::string& base) {
  std::string pattern = base + "/palisade-bench-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a directory in " + base);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Daemon::Daemon(const std::string& bin, const std::string& data_dir, const std::string& endpoint,
               const std::string& log)
    : endpoint_(endpoint), log_(log) {
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

Daemon::~Daemon() { stop(); }

bool Daemon::running() {
  if (exited_) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) exited_ = true;
  return !exited_;
}

void Daemon::wait_ready() {
  zmq::context_t ctx(1);
  auto deadline = Clock::now() + 10s;
  uint64_t id = 0;
  while (Clock::now() < deadline) {
    if (!running()) throw std::runtime_error("palisade-replica exited at start (see its log)");
    try {
      zmq::socket_t probe = transport::make_dealer(ctx, endpoint_, transport::SocketOptions{});
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

void Daemon::stop() {
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

ReplicaClient::ReplicaClient(zmq::context_t& ctx, const std::string& endpoint)
    : socket_(transport::make_dealer(ctx, endpoint, transport::SocketOptions{})) {
  socket_.set(zmq::sockopt::immediate, false);  // queue until connected
}

wire::ReplicaReply ReplicaClient::call(const wire::ReplicaRequest& request) {
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

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

}  // namespace palisade::bench
