#include "cli/cluster_clients.h"

#include "config/client_cluster.h"

namespace palisade::cli {

Result<std::unique_ptr<QuorumStore>> open_store(const ClusterAccess& cluster, std::chrono::milliseconds timeout) {
  QuorumStoreOptions options = client_cluster_file(cluster.config, cluster.credentials).store_options();
  options.timeout = timeout;
  return QuorumStore::open(options);
}

LockClientOptions lock_client_options(const ClusterAccess& cluster) {
  return client_cluster_file(cluster.config, cluster.credentials).lock_client_options();
}

}  // namespace palisade::cli
