#include "cli/cluster_clients.h"

namespace palisade::cli {

Result<std::unique_ptr<QuorumStore>> open_store(const ClusterAccess& cluster, std::chrono::milliseconds timeout) {
  const ClusterConfig& config = cluster.config;
  QuorumStoreOptions options;
  options.replicas = config.replicas;
  if (!config.cluster_id.empty()) options.cluster_id = cluster_id_hex(config.cluster_id);
  const int majority = static_cast<int>(config.replicas.size()) / 2 + 1;
  options.read_quorum = config.read_quorum != 0 ? config.read_quorum : majority;
  options.write_quorum = config.write_quorum != 0 ? config.write_quorum : majority;
  options.timeout = timeout;
  options.credentials = cluster.credentials;
  return QuorumStore::open(options);
}

LockClientOptions lock_client_options(const ClusterAccess& cluster) {
  const ClusterConfig& config = cluster.config;
  LockClientOptions options;
  for (const LockdNode& n : config.lockd) options.nodes.push_back(n.endpoint);
  if (!config.cluster_id.empty()) options.cluster_id = cluster_id_hex(config.cluster_id);
  options.grace = std::chrono::milliseconds(config.timing.client_grace_ms);
  options.max_clock_drift_ppm = config.timing.max_clock_drift_ppm;
  options.credentials = cluster.credentials;
  return options;
}

}  // namespace palisade::cli
