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

// PREFIX-N -> N, N written without leading zeros; nullopt for another name.
std::optional<uint32_t> number_after(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return std::nullopt;
  const std::string_view digits = name.substr(prefix.size());
  uint32_t n = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (error != std::errc() || end != digits.data() + digits.size() || (digits.starts_with('0') && digits.size() > 1)) {
    return std::nullopt;
  }
  return n;
}

// Its data directory "replica-4", its log "replica-4.log".
std::string_view stem_of(const std::string& entry) { return std::string_view(entry).substr(0, entry.find('.')); }

}  // namespace

std::optional<uint32_t> lockd_id_of(std::string_view name) {
  auto id = number_after(name, "lockd-");
  if (!id || *id < 1 || *id > 255) return std::nullopt;
  return id;
}

std::optional<uint32_t> replica_number_of(std::string_view name) { return number_after(name, "replica-"); }

std::string next_replica_name(const ClusterConfig& config, const std::vector<std::string>& names) {
  uint32_t next = 0;
  auto see = [&next](std::string_view name) {
    if (auto n = replica_number_of(name)) next = std::max(next, *n + 1);
  };
  for (const Identity& i : config.identities) see(i.name);
  for (size_t i = 0; i < config.replicas.size() + config.spare_replicas.size(); ++i)
    see("replica-" + std::to_string(i));
  for (const std::string& entry : names) see(stem_of(entry));
  return "replica-" + std::to_string(next);
}

void add_spare_replica(ClusterConfig& config, const std::string& endpoint, const Identity& identity) {
  config.spare_replicas.push_back(endpoint);
  config.identities.push_back(identity);
  config.daemon_identity[endpoint] = identity.name;
}

bool remove_replica(ClusterConfig& config, const std::string& endpoint) {
  const size_t before = config.replicas.size() + config.spare_replicas.size();
  std::erase(config.replicas, endpoint);
  std::erase(config.spare_replicas, endpoint);
  if (config.replicas.size() + config.spare_replicas.size() == before) return false;
  if (auto served = config.daemon_identity.find(endpoint); served != config.daemon_identity.end()) {
    std::erase_if(config.identities, [&](const Identity& i) { return i.name == served->second; });
    config.daemon_identity.erase(served);
  }
  return true;
}

bool swap_replica(ClusterConfig& config, const std::string& leaving, const std::string& joining) {
  auto place = std::ranges::find(config.replicas, leaving);
  if (place == config.replicas.end() ||
      std::ranges::find(config.spare_replicas, joining) == config.spare_replicas.end()) {
    return false;
  }
  *place = joining;
  std::erase(config.spare_replicas, joining);
  if (auto served = config.daemon_identity.find(leaving); served != config.daemon_identity.end()) {
    std::erase_if(config.identities, [&](const Identity& i) { return i.name == served->second; });
    config.daemon_identity.erase(served);
  }
  return true;
}

bool admit_spare_replica(ClusterConfig& config, const std::string& endpoint) {
  if (std::erase(config.spare_replicas, endpoint) == 0) return false;
  config.replicas.push_back(endpoint);
  return true;
}

std::optional<uint32_t> next_lockd_id(const ClusterConfig& config, const std::vector<std::string>& names) {
  uint32_t highest = 0;
  for (const LockdNode& n : config.lockd) highest = std::max(highest, n.id);
  for (const std::string& name : names) {
    if (auto id = lockd_id_of(stem_of(name))) highest = std::max(highest, *id);
  }
  if (highest >= 255) return std::nullopt;
  return highest + 1;
}

std::optional<std::string> unused_endpoint(const ClusterConfig& config, const std::vector<std::string>& candidates) {
  for (const std::string& candidate : candidates) {
    const bool used = std::ranges::find(config.replicas, candidate) != config.replicas.end() ||
                      std::ranges::find(config.spare_replicas, candidate) != config.spare_replicas.end() ||
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
