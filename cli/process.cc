#include "cli/process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

namespace palisade::cli {

Process::Process(std::vector<std::string> argv, std::string log_path, bool detached)
    : Process(std::move(argv), std::move(log_path), ProcessOptions{.detached = detached}) {}

Process::Process(std::vector<std::string> argv, std::string log_path, ProcessOptions options)
    : log_path_(std::move(log_path)), detached_(options.detached) {
  const bool detached = options.detached;
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {  // only async-signal-safe calls until exec
    if (detached) {
      setsid();  // no terminal signals (Ctrl-C in the shell that ran `cluster up`)
      int null = open("/dev/null", O_RDONLY);
      if (null >= 0) dup2(null, 0);
    } else {
      if (options.own_process_group) setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // the parent died before prctl
    }
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  // Here too, as a shell does: the group exists when this returns.
  if (options.own_process_group && !detached) setpgid(pid_, pid_);
}

Process::~Process() {
  if (!released_ && running()) kill();
}

void Process::release() {
  if (detached_) released_ = true;
}

bool Process::running() {
  if (status_) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) status_ = st;
  return !status_;
}

void Process::signal(int sig) {
  if (running()) ::kill(pid_, sig);
}

std::optional<int> Process::wait(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status_;
}

void Process::kill() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  waitpid(pid_, &st, 0);
  status_ = st;
}

std::string Process::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

sockaddr_in loopback_address(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

namespace {

// Free ports are drawn from below the ephemeral range (32768 and up on
// Linux), where the kernel picks the local port of every outgoing connection:
// there, a connection made between our check and the daemon's bind could take
// the port (ZeroMQ reconnects every 100 ms). The scripts' picks in
// contrib/grafana and tests/scripts stay at 20000 and above.
constexpr int kFirstFreePort = 10000;
constexpr int kPortsToDrawFrom = 10000;

// A socket bound to a loopback port that was free, and the port: the caller
// closes the socket. Throws when there is none.
std::pair<int, int> bind_free_port() {
  thread_local std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> any(kFirstFreePort, kFirstFreePort + kPortsToDrawFrom - 1);
  for (int attempt = 0; attempt < 200; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    const int port = any(random);
    sockaddr_in addr = loopback_address(port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return {fd, port};
    close(fd);
  }
  throw std::runtime_error("cannot find a free port");
}

}  // namespace

int free_port() {
  auto [fd, port] = bind_free_port();
  close(fd);
  return port;
}

std::vector<std::string> free_endpoints(int n) {
  // Bound all at once, the sockets cannot share a port.
  std::vector<std::pair<int, int>> bound;
  try {
    for (int i = 0; i < n; ++i) bound.push_back(bind_free_port());
  } catch (const std::runtime_error&) {
    for (auto [fd, port] : bound) close(fd);
    throw;
  }
  std::vector<std::string> out;
  for (auto [fd, port] : bound) {
    close(fd);
    out.push_back("tcp://127.0.0.1:" + std::to_string(port));
  }
  return out;
}

bool listening_on(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (endpoint.rfind("tcp://", 0) != 0 || colon == std::string::npos) return false;
  const int port = std::atoi(endpoint.c_str() + colon + 1);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // as ZeroMQ binds
  sockaddr_in addr = loopback_address(port);
  const bool in_use = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno == EADDRINUSE;
  close(fd);
  return in_use;
}

}  // namespace palisade::cli
