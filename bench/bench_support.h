// What the end-to-end benches share: temporary directories, palisade-replica
// daemons started and stopped by pid, latency quantiles, RSS readings, the
// floor measurements (bare ZeroMQ round trip, bare synced LMDB commit) and the
// PASS/MISS target lines. bench/README.md explains what the numbers mean.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "common/replica_protocol.h"

namespace palisade::bench {

using Clock = std::chrono::steady_clock;

// How long a bench waits for any one reply before it gives up.
constexpr int kReplyTimeoutMs = 5000;

double ms_between(Clock::time_point a, Clock::time_point b);
Clock::duration seconds_duration(double seconds);

// The q-quantile (0..1) of `samples_ms`, which it sorts.
double quantile(std::vector<double>& samples_ms, double q);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port();

// A field of /proc/PID/status in KiB ("VmHWM", "VmRSS"); 0 when unreadable.
// pid 0 means this process.
uint64_t status_kib(pid_t pid, const char* field);
// Resets this process's VmHWM to its current RSS (Linux >= 4.0); false when refused.
bool reset_peak_rss();

std::string default_replica_bin();

// A directory removed with its contents when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& base);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A palisade-replica serving `endpoint` from `data_dir`, its output appended to
// `log`. Stopped (SIGTERM, then SIGKILL after 3 s) by pid when the object dies; it
// also dies with this process (PR_SET_PDEATHSIG).
class Daemon {
 public:
  Daemon(const std::string& bin, const std::string& data_dir, const std::string& endpoint, const std::string& log);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& endpoint() const { return endpoint_; }
  const std::string& log_path() const { return log_; }
  bool running();
  // Waits until it answers a ping; throws after 10 s or when it exits.
  void wait_ready();
  uint64_t peak_rss_kib() const { return status_kib(pid_, "VmHWM"); }
  uint64_t rss_kib() const { return status_kib(pid_, "VmRSS"); }
  void stop();

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string endpoint_;
  std::string log_;
};

// One synchronous client of one palisade-replica: a DEALER socket, one request in flight.
class ReplicaClient {
 public:
  ReplicaClient(zmq::context_t& ctx, const std::string& endpoint);
  // Sends `request` and returns its reply; throws after kReplyTimeoutMs.
  wire::ReplicaReply call(const wire::ReplicaRequest& request);

 private:
  zmq::socket_t socket_;
  wire::Limits limits_;
};

// The contents of a file (a daemon's log, for error messages); empty when unreadable.
std::string read_file(const std::string& path);

// Floor (a): DEALER -> ROUTER echo over loopback against an echo thread, one
// message of `message_bytes` in flight, for `seconds`. p50 in ms.
double echo_round_trip_p50_ms(double seconds, size_t message_bytes);
// Floor (b): one put of `value_bytes` per mdb_txn_commit with LMDB's default
// (synced) flags, in a fresh environment in `dir`, for `seconds`. p50 in ms.
double synced_commit_p50_ms(const std::string& dir, double seconds, size_t value_bytes);

struct Target {
  std::string name;
  double measured = 0;
  double bound = 0;
  bool at_most = true;  // measured <= bound, else measured >= bound
  bool pass() const { return at_most ? measured <= bound : measured >= bound; }
};
void print_targets(const std::vector<Target>& targets);
// The targets as a JSON array (no trailing newline).
std::string targets_json(const std::vector<Target>& targets, const std::string& indent);
std::string json_escape(const std::string& s);

}  // namespace palisade::bench
