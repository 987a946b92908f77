#include "cli/daemon_records.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace palisade::cli {
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

std::string metrics_address_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  bool next = false;
  for (std::string arg; std::getline(in, arg, '\0');) {
    if (next) return arg;
    next = arg == "--metrics-listen";
  }
  return {};
}

Status write_daemon_records(const std::string& path, const std::vector<DaemonRecord>& records) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const DaemonRecord& r : records) {
      out << r.name << ' ' << r.pid << ' ' << r.start_time << ' ' << r.endpoint << '\n';
    }
    if (!out.flush()) return Status(Code::kStorageError, "cannot write " + tmp + ": " + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status(Code::kStorageError, "cannot write " + path + ": " + ec.message());
  return Status::ok();
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
