#include "cli/daemon_records.h"

#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "cli/files.h"

namespace palisade::cli {

using namespace std::chrono_literals;

namespace {

// The fields of /proc/PID/stat after the command name (which may hold spaces):
// index 0 is field 3 (the state).
std::optional<std::vector<std::string>> stat_fields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

// Whether a SIGHUP sent to the process waits to be taken: the shared pending
// set of /proc/PID/status (a daemon blocks it and reads it from a signalfd).
bool hangup_pending(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("ShdPnd:")) return (std::stoull(line.substr(7), nullptr, 16) >> (SIGHUP - 1)) & 1;
  }
  return false;
}

}  // namespace

std::optional<uint64_t> process_start_time(pid_t pid) {
  auto fields = stat_fields(pid);
  if (!fields || fields->size() < 20 || (*fields)[0] == "Z") return std::nullopt;  // a zombie has exited
  return std::stoull((*fields)[19]);  // field 22
}

bool is_alive(const DaemonRecord& record) {
  auto started = process_start_time(record.pid);
  return started && *started == record.start_time;
}

bool is_paused(const DaemonRecord& record) {
  auto fields = stat_fields(record.pid);
  return is_alive(record) && fields && ((*fields)[0] == "T" || (*fields)[0] == "t");
}

std::string flag_of(pid_t pid, std::string_view flag) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  bool next = false;
  for (std::string arg; std::getline(in, arg, '\0');) {
    if (next) return arg;
    next = arg == flag;
  }
  return {};
}

std::vector<DaemonRecord> alive(const std::vector<DaemonRecord>& records) {
  std::vector<DaemonRecord> out;
  for (const DaemonRecord& r : records) {
    if (is_alive(r)) out.push_back(r);
  }
  return out;
}

size_t stop_daemons(const std::vector<DaemonRecord>& records, std::chrono::milliseconds grace) {
  const auto running = alive(records);
  for (const DaemonRecord& r : running) {
    ::kill(r.pid, SIGCONT);
    ::kill(r.pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  size_t killed = 0;
  for (const DaemonRecord& r : running) {
    while (is_alive(r) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
    if (is_alive(r)) {
      ::kill(r.pid, SIGKILL);
      ++killed;
    }
  }
  return killed;
}

std::vector<std::string> reload_daemons(const std::vector<DaemonRecord>& records, std::chrono::milliseconds timeout) {
  const auto running = alive(records);
  for (const DaemonRecord& r : running) ::kill(r.pid, SIGHUP);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> late;
  for (const DaemonRecord& r : running) {
    while (is_alive(r) && !is_paused(r) && hangup_pending(r.pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    if (is_alive(r) && hangup_pending(r.pid)) late.push_back(r.name);
  }
  return late;
}

Status write_daemon_records(const std::string& path, const std::vector<DaemonRecord>& records) {
  std::string text;
  for (const DaemonRecord& r : records) {
    text += r.name + ' ' + std::to_string(r.pid) + ' ' + std::to_string(r.start_time) + ' ' + r.endpoint + '\n';
  }
  return replace_file(path, text, 0644);
}

Result<std::vector<DaemonRecord>> read_daemon_records(const std::string& path) {
  std::vector<DaemonRecord> records;
  std::ifstream in(path);
  if (!in) return records;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    DaemonRecord r;
    if (!(fields >> r.name >> r.pid >> r.start_time >> r.endpoint) || r.pid <= 1) {
      return Status(Code::kBadRequest, path + " line " + std::to_string(n) + " is not NAME PID START_TIME ENDPOINT");
    }
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace palisade::cli
