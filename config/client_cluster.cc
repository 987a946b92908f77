#include "config/client_cluster.h"

#include "config/cluster_keys.h"
#include "palisade/sequencer.h"

namespace palisade {

std::optional<ConfigCheck> config_check(const std::string& group, const std::string& sequencer_public_key) {
  // The file was checked when it was read: a key that does not parse leaves
  // the store without a check, and a secure store then follows no change.
  auto verifier = SequencerVerifier::create(group, sequencer_public_key);
  if (!verifier.is_ok()) return std::nullopt;
  return ConfigCheck{
      .public_key = sequencer_public_key,
      .signature_verifies = [v = std::move(verifier).value()](std::string_view message, std::string_view signature) {
        return v.signature_verifies(message, signature);
      }};
}

ClusterFile client_cluster_file(const ClusterConfig& config, std::optional<Credentials> credentials) {
  ClusterFile file;
  file.path = config.path;
  if (!config.cluster_id.empty()) file.cluster_id = cluster_id_hex(config.cluster_id);
  for (const LockdNode& node : config.lockd) file.lock_group.push_back(node.endpoint);
  file.replicas = config.replicas;
  // No replicas: the lock group's record gives them, and R and W (0 here).
  const int majority = config.replicas.empty() ? 0 : static_cast<int>(config.replicas.size()) / 2 + 1;
  file.read_quorum = config.read_quorum != 0 ? config.read_quorum : majority;
  file.write_quorum = config.write_quorum != 0 ? config.write_quorum : majority;
  file.grace = std::chrono::milliseconds(config.timing.client_grace_ms);
  file.max_clock_drift_ppm = config.timing.max_clock_drift_ppm;
  file.group = config.group;
  file.sequencer_public_key = config.sequencer_public_key;
  file.credentials = std::move(credentials);
  return file;
}

Result<ClusterFile> ClusterFile::load(const std::string& path, const std::string& key_path) {
  auto config = load_cluster_file(path);
  if (!config.is_ok()) return config.status();  // it names the file, and the line
  auto credentials = load_client_credentials(config.value(), key_path);
  if (!credentials.is_ok()) return credentials.status();
  return client_cluster_file(config.value(), std::move(credentials).value());
}

QuorumStoreOptions ClusterFile::store_options() const {
  QuorumStoreOptions options;
  options.replicas = replicas;
  options.cluster_id = cluster_id;
  options.read_quorum = read_quorum;
  options.write_quorum = write_quorum;
  options.credentials = credentials;
  options.config_check = config_check(group, sequencer_public_key);
  options.lock_group = lock_group;
  return options;
}

LockClientOptions ClusterFile::lock_client_options() const {
  LockClientOptions options;
  options.nodes = lock_group;
  options.cluster_id = cluster_id;
  options.grace = grace;
  options.max_clock_drift_ppm = max_clock_drift_ppm;
  options.credentials = credentials;
  return options;
}

}  // namespace palisade
