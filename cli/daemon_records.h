// The daemons `palisade cluster up` left running, in DIR/daemons: one line per
// daemon ("NAME PID START_TIME ENDPOINT"), so that `cluster down` and `cluster
// status` find exactly those processes. START_TIME (field 22 of /proc/PID/stat)
// tells a daemon from another process that later got the same pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "palisade/status.h"

namespace palisade::cli {

struct DaemonRecord {
  std::string name;  // "lockd-1", "replica-0"
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string endpoint;
};

// When `pid` started, in clock ticks since boot; nullopt when no such process.
std::optional<uint64_t> process_start_time(pid_t pid);
// Whether the process is that daemon (not gone, not a reused pid).
bool is_alive(const DaemonRecord& record);
// Whether it is stopped (SIGSTOP).
bool is_paused(const DaemonRecord& record);

// The value of `flag` on the command line the process was started with
// (/proc/PID/cmdline, "--flag VALUE"); empty without it (or when the process
// is gone).
std::string flag_of(pid_t pid, std::string_view flag);
// HOST:PORT of its --metrics-listen; empty without one.
inline std::string metrics_address_of(pid_t pid) { return flag_of(pid, "--metrics-listen"); }

// The records whose daemons are alive.
std::vector<DaemonRecord> alive(const std::vector<DaemonRecord>& records);
// Stops the daemons: SIGCONT (a paused one cannot act on SIGTERM) and
// SIGTERM to all, then SIGKILL to those still alive after `grace`. Returns
// how many needed SIGKILL.
size_t stop_daemons(const std::vector<DaemonRecord>& records, std::chrono::milliseconds grace);
// Sends SIGHUP to each daemon alive (they read the cluster file again), and
// waits up to `timeout` until each has taken it: once it is no longer pending,
// the daemon has reloaded before it reads another request. Returns the names
// of those that had not (a paused daemon takes it when resumed).
std::vector<std::string> reload_daemons(const std::vector<DaemonRecord>& records, std::chrono::milliseconds timeout);

Status write_daemon_records(const std::string& path, const std::vector<DaemonRecord>& records);
// An empty list when the file does not exist; BadRequest when it is not ours.
Result<std::vector<DaemonRecord>> read_daemon_records(const std::string& path);

}  // namespace palisade::cli
