// What the end-to-end benches share beyond cli/ (daemons, temporary
// directories) and client/ (ReplicaConnection): closed-loop load threads,
// latency quantiles, RSS readings, the floor measurements (bare ZeroMQ round
// trip, bare synced LMDB commit) and the PASS/MISS target lines.
// bench/README.md explains what the numbers mean.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "wire/replica_protocol.h"
#include "palisade/status.h"
#include "cli/replica_process.h"
#include "base/temp_dir.h"

namespace palisade::bench {

using Clock = std::chrono::steady_clock;

// How long a bench waits for any one reply before it gives up.
constexpr int kReplyTimeoutMs = 5000;

double ms_between(Clock::time_point a, Clock::time_point b);
Clock::duration seconds_duration(double seconds);

// The q-quantile (0..1) of `samples_ms`, which it sorts.
double quantile(std::vector<double>& samples_ms, double q);

// A field of /proc/PID/status in KiB ("VmHWM", "VmRSS"); 0 when unreadable.
// pid 0 means this process.
uint64_t status_kib(pid_t pid, const char* field);
// Resets this process's VmHWM to its current RSS (Linux >= 4.0); false when refused.
bool reset_peak_rss();

// The options every end-to-end bench takes; `seconds` defaults differ.
struct CommonFlags {
  std::string replica_bin = cli::sibling_replica_binary();
  std::string tmp_dir = default_temp_base();
  double seconds = 2;
  double floor_seconds = 1;
  std::vector<int> clients = {1, 16, 64};
  std::string json_path;
};
// Adds --replica-bin, --tmp-dir, --seconds, --floor-seconds, --clients, --json.
void add_common_options(CLI::App& app, CommonFlags& flags, const std::string& clients_help);
// The body of a bench's main() after parsing: SIGPIPE ignored; an exception is
// printed as "`name`: what" and makes the exit code 1.
int run_main(const char* name, const std::function<int()>& run);

// `count` copies of `replica_bin` on free loopback ports, serving `dir`/replicaI
// (created), logging warnings and errors only (to `dir`/replicaI.log), with
// `extra_args`; all
// started and answering. Each is killed when its object dies.
using Replicas = std::vector<std::unique_ptr<cli::ReplicaProcess>>;
Replicas start_replicas(const std::string& replica_bin, const std::string& dir, int count,
                        const std::vector<std::string>& extra_args = {});
// `what`, then the log of every replica, for an error message.
std::string with_logs(const std::string& what, const Replicas& replicas);

// The status a replica replied with, or why no reply came (client::ReplicaConnection::call).
Status reply_status(const Result<wire::ReplicaReply>& reply);

// What a level of closed-loop load measured.
struct LoadResult {
  uint64_t ops = 0;
  uint64_t errors = 0;  // operations that returned an error status
  double seconds = 0;
  double ops_per_s = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  std::string first_error;  // of the first thread that had one
};

// One operation of a load thread, timed; a status that is not ok counts as an error.
using Operation = std::function<Status()>;

// Called on the calling thread right before the clock starts and right after
// every thread stopped (e.g. to read the servers' CPU time of exactly the timed part).
struct LoadMarks {
  std::function<void()> start;
  std::function<void()> stop;
};

// Runs `clients` threads. Each first calls make_operation(thread index), untimed
// (connect, fence, warm up; throwing aborts the run with that message); once every
// thread is set up, all repeat their operation for `seconds`.
LoadResult run_load(int clients, double seconds, const std::function<Operation(int)>& make_operation,
                    const LoadMarks& marks = {});

// What bounds the end-to-end latencies from below.
struct Floor {
  double round_trip_p50_ms = 0;  // (a)
  double commit_p50_ms = 0;      // (b)
};
// Both floor measurements, each for `seconds`: (a) with messages of
// `message_bytes`, (b) in `lmdb_dir` with values of `value_bytes`.
Floor measure_floor(double seconds, size_t message_bytes, const std::string& lmdb_dir, size_t value_bytes);
// The "floor: ..." line of the printed report, and the floor as a JSON object.
void print_floor(const Floor& floor);
std::string floor_json(const Floor& floor);

// Floor (a): DEALER -> ROUTER echo over loopback against an echo thread with a
// ZeroMQ context of its own (as a server process has), one message of
// `message_bytes` in flight, for `seconds`. p50 in ms.
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
// Writes `text` to `path`; throws std::runtime_error when it cannot.
void write_file(const std::string& path, const std::string& text);

}  // namespace palisade::bench
