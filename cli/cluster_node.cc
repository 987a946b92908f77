#include "cli/cluster_node.h"

#include <cstdio>
#include <filesystem>

namespace palisade::cli {

namespace fs = std::filesystem;

NodeFlags absolute(NodeFlags flags) {
  std::error_code ec;
  flags.dir = fs::absolute(flags.dir, ec).lexically_normal().string();
  if (flags.dir.size() > 1 && flags.dir.back() == '/') flags.dir.pop_back();
  return flags;
}

Result<ClusterAccess> access_to(const NodeFlags& flags, const CommonOptions& common) {
  CommonOptions options = common;
  options.cluster_file = flags.cluster_file();
  return load_cluster(options);
}

std::optional<Found> find_cluster(const NodeFlags& flags, const CommonOptions& common, std::string_view what,
                                  int& exit_code) {
  if (!fs::exists(flags.cluster_file())) {
    exit_code = report_failure(
        what, "no cluster in " + flags.dir + ": start one with `palisade cluster up" + flags.dir_flag() + "`",
        kExitUnavailable);
    return std::nullopt;
  }
  auto records = read_daemon_records(flags.records_path());
  if (!records.is_ok()) {
    exit_code = report_error(what, records.status());
    return std::nullopt;
  }
  auto access = access_to(flags, common);
  if (!access.is_ok()) {
    exit_code = report_cluster_error(what, access.status());
    return std::nullopt;
  }
  return Found{std::move(access).value(), std::move(records).value()};
}

void warn_late(std::string_view what, const std::vector<std::string>& late) {
  for (const std::string& name : late) {
    std::fprintf(stderr, "palisade: %.*s: %s has not read the cluster file again yet (paused?); it does once it runs\n",
                 static_cast<int>(what.size()), what.data(), name.c_str());
  }
}

}  // namespace palisade::cli
