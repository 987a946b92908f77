// The daemons `palisade cluster up` left running, in DIR/daemons: one line per
// daemon ("NAME PID START_TIME ENDPOINT"), so that `cluster down` and `cluster
// status` find exactly those processes. START_TIME (field 22 of /proc/PID/stat)
// tells a daemon from another process that later got the same pid.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
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

// HOST:PORT of the --metrics-listen the process was started with, read from
// /proc/PID/cmdline; empty without one (or when the process is gone).
std::string metrics_address_of(pid_t pid);

Status write_daemon_records(const std::string& path, const std::vector<DaemonRecord>& records);
// An empty list when the file does not exist; BadRequest when it is not ours.
Result<std::vector<DaemonRecord>> read_daemon_records(const std::string& path);

}  // namespace palisade::cli
