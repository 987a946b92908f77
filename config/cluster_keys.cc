#include "config/cluster_keys.h"

#include <algorithm>

namespace palisade {
namespace {

// The key file at `path`, checked against the identity the cluster file lists
// under its name.
Result<transport::KeyFile> listed_key(const ClusterConfig& config, const std::string& path) {
  auto file = transport::read_key_file(path);
  if (!file.is_ok()) return file.status();
  const Identity* identity = config.identity(file.value().identity);
  if (identity == nullptr) {
    return Status(Code::kBadRequest, path + " is the key of identity '" + file.value().identity + "', which " +
                                         config.path + " does not list");
  }
  const auto& keys = identity->keys;
  if (std::find(keys.begin(), keys.end(), file.value().keys.public_key) == keys.end()) {
    return Status(Code::kBadRequest, path + " holds a public key that " + config.path + " does not list for '" +
                                         identity->name + "' (a key rotated out, or a file of another cluster?)");
  }
  return file;
}

}  // namespace

transport::AllowList allowed_keys(const ClusterConfig& config) {
  transport::AllowList allowed;
  for (const Identity& identity : config.identities) {
    for (const std::string& key : identity.keys) allowed[key] = identity.name;
  }
  return allowed;
}

std::map<std::string, std::string> server_keys(const ClusterConfig& config) {
  std::map<std::string, std::string> keys;
  for (const auto& [endpoint, name] : config.daemon_identity) {
    if (const Identity* identity = config.identity(name); identity != nullptr && !identity->keys.empty()) {
      keys[endpoint] = identity->keys.front();
    }
  }
  return keys;
}

wire::ReplicaSet file_replica_set(const ClusterConfig& config) {
  wire::ReplicaSet set;
  if (config.replicas.empty()) return set;
  const std::map<std::string, std::string> keys = server_keys(config);
  const auto n = static_cast<uint32_t>(config.replicas.size());
  for (uint32_t i = 0; i < n; ++i) {
    auto key = keys.find(config.replicas[i]);
    set.replicas.push_back({i + 1, config.replicas[i], key == keys.end() ? "" : key->second});
  }
  set.write_quorum = config.write_quorum > 0 ? static_cast<uint32_t>(config.write_quorum) : n / 2 + 1;
  set.read_quorum = config.read_quorum > 0 ? static_cast<uint32_t>(config.read_quorum) : n / 2 + 1;
  return set;
}

Result<std::optional<DaemonKeys>> load_daemon_keys(const ClusterConfig& config, const std::string& endpoint,
                                                   const std::string& key_path) {
  if (config.identities.empty()) {
    if (key_path.empty()) return std::optional<DaemonKeys>();
    return Status(Code::kBadRequest, "a key file was given, but " + config.path +
                                         " lists no identities: its links are plaintext (docs/security.md)");
  }
  auto name = config.daemon_identity.find(endpoint);
  // A replica whose file names only the lock group is not listed: it serves
  // as its key file's identity (clients take its key from the lock group's
  // record of the replica set).
  const bool unlisted_replica = name == config.daemon_identity.end() && config.replicas.empty();
  if (name == config.daemon_identity.end() && !unlisted_replica) {
    return Status(Code::kBadRequest, config.path + " names no identity for " + endpoint);
  }
  if (key_path.empty()) {
    const std::string identity = unlisted_replica ? "NAME" : name->second;
    return Status(Code::kBadRequest, config.path +
                                         " lists identities, so its links are CurveZMQ: give --key FILE, "
                                         "the key file of identity '" +
                                         identity + "' (`palisade keygen " + identity + "` writes one)");
  }
  auto key = listed_key(config, key_path);
  if (!key.is_ok()) return key.status();
  const std::string identity = unlisted_replica ? key.value().identity : name->second;
  if (unlisted_replica && !config.identity(identity)->has_role("replica")) {
    return Status(Code::kBadRequest, key_path + " is the key of '" + identity + "', which has no replica role, and " +
                                         config.path + " lists no [[replica]] for " + endpoint +
                                         " to name the identity it serves as");
  }
  if (key.value().identity != identity) {
    return Status(Code::kBadRequest, key_path + " is the key of '" + key.value().identity + "', but " + config.path +
                                         " says " + endpoint + " serves as '" + identity + "'");
  }
  // Clients know a daemon by its identity's first key: a daemon serving with
  // its second would fail every handshake.
  if (key.value().keys.public_key != config.identity(identity)->keys.front()) {
    return Status(Code::kBadRequest, key_path + " holds the second key of '" + identity +
                                         "': a daemon serves with the first key its identity lists");
  }
  return std::optional<DaemonKeys>(DaemonKeys{std::move(key).value(), allowed_keys(config), config.permissions()});
}

Result<DaemonKeys> reload_daemon_keys(const std::string& cluster_file, const std::string& endpoint,
                                      const std::string& key_path) {
  auto config = load_cluster_file(cluster_file);
  if (!config.is_ok()) return config.status();
  if (config.value().identities.empty()) {
    return Status(Code::kBadRequest, cluster_file + " lists no identities now: a node serving CurveZMQ links cannot "
                                                    "turn plaintext while it runs");
  }
  auto keys = load_daemon_keys(config.value(), endpoint, key_path);
  if (!keys.is_ok()) return keys.status();
  return std::move(*keys.value());
}

Status check_insecure_flag(const ClusterConfig& config, bool insecure) {
  if (config.identities.empty() && !insecure) {
    return Status(Code::kBadRequest,
                  config.path + " lists no identities, so this daemon's links would be plaintext: list the "
                                "identities and their keys (docs/security.md; `palisade cluster up` makes them), or "
                                "give --insecure to serve plaintext on a trusted network");
  }
  if (!config.identities.empty() && insecure) {
    return Status(Code::kBadRequest,
                  "--insecure, but " + config.path + " lists identities: its links are CurveZMQ; drop --insecure");
  }
  return Status::ok();
}

Result<std::optional<Credentials>> load_client_credentials(const ClusterConfig& config, const std::string& key_path) {
  if (config.identities.empty()) {
    if (key_path.empty()) return std::optional<Credentials>();
    return Status(Code::kBadRequest, "a key file was given, but " + config.path +
                                         " lists no identities: its links are plaintext (docs/security.md)");
  }
  if (key_path.empty()) {
    return Status(Code::kBadRequest, config.path + " lists identities, so its links are CurveZMQ: give --key FILE, "
                                                   "a key file of an identity it lists (palisade keygen)");
  }
  auto key = listed_key(config, key_path);
  if (!key.is_ok()) return key.status();
  return std::optional<Credentials>(Credentials{.identity = key.value().identity,
                                                .public_key = key.value().keys.public_key,
                                                .secret_key = key.value().keys.secret_key,
                                                .server_keys = server_keys(config)});
}

}  // namespace palisade
