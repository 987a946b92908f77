#include "cli/local_cluster_file.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "transport/curve_keys.h"

namespace palisade::cli {
namespace {

namespace fs = std::filesystem;

// `file` as the cluster file at `cluster_path` names it.
std::string relative_to(const std::string& file, const std::string& cluster_path) {
  if (file.empty()) return file;
  const fs::path dir = fs::path(cluster_path).parent_path();
  const fs::path relative = fs::path(file).lexically_relative(dir);
  const bool beside = !relative.empty() && *relative.begin() != "..";
  return beside ? relative.string() : file;
}

}  // namespace

std::optional<uint32_t> lockd_id_of(std::string_view name) {
  constexpr std::string_view kPrefix = "lockd-";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  const std::string_view digits = name.substr(kPrefix.size());
  uint32_t id = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (error != std::errc() || end != digits.data() + digits.size() || digits.starts_with('0') || id < 1 || id > 255) {
    return std::nullopt;
  }
  return id;
}

std::optional<uint32_t> next_lockd_id(const ClusterConfig& config, const std::vector<std::string>& names) {
  uint32_t highest = 0;
  for (const LockdNode& n : config.lockd) highest = std::max(highest, n.id);
  for (const std::string& name : names) {
    // Its data directory "lockd-4", its log "lockd-4.log".
    const std::string_view stem = std::string_view(name).substr(0, name.find('.'));
    if (auto id = lockd_id_of(stem)) highest = std::max(highest, *id);
  }
  if (highest >= 255) return std::nullopt;
  return highest + 1;
}

std::optional<std::string> unused_endpoint(const ClusterConfig& config, const std::vector<std::string>& candidates) {
  for (const std::string& candidate : candidates) {
    const bool used = std::ranges::find(config.replicas, candidate) != config.replicas.end() ||
                      std::ranges::any_of(config.lockd, [&](const LockdNode& n) { return n.endpoint == candidate; });
    if (!used) return candidate;
  }
  return std::nullopt;
}

void add_lockd_node(ClusterConfig& config, const LockdNode& node, const std::optional<Identity>& identity) {
  config.lockd.push_back(node);
  if (identity) {
    config.identities.push_back(*identity);
    config.daemon_identity[node.endpoint] = identity->name;
  }
}

bool remove_lockd_node(ClusterConfig& config, uint32_t id) {
  auto node = std::ranges::find_if(config.lockd, [id](const LockdNode& n) { return n.id == id; });
  if (node == config.lockd.end()) return false;
  if (auto served = config.daemon_identity.find(node->endpoint); served != config.daemon_identity.end()) {
    std::erase_if(config.identities, [&](const Identity& i) { return i.name == served->second; });
    config.daemon_identity.erase(served);
  }
  config.lockd.erase(node);
  return true;
}

std::string cluster_file_text(const ClusterConfig& config) {
  ClusterConfig written = config;
  written.key_file = relative_to(config.key_file, config.path);
  written.replica_key_file = relative_to(config.replica_key_file, config.path);
  return format_cluster_config(written);
}

Result<Identity> write_daemon_key(const std::string& dir, const std::string& name, const std::string& role) {
  const transport::KeyFile file{name, transport::generate_curve_keys()};
  if (Status s = transport::write_key_file(dir + "/keys/" + name + ".key", file); !s.is_ok()) return s;
  return Identity{.name = name, .keys = {file.keys.public_key}, .roles = {role}};
}

}  // namespace palisade::cli
