#include "tests/support/replica_process.h"

#include <fstream>
#include <stdexcept>

#include "cli/process.h"
#include "client/replica_connection.h"
#include "config/cluster_config.h"

namespace palisade::test {

std::string replica_binary() { return PALISADE_REPLICA_BIN; }

KeyedClusterFile write_keyed_cluster_file(const std::string& dir, const std::string& group, const ClusterKey& key,
                                          int replicas) {
  std::ofstream(dir + "/cluster.key") << key.to_hex() << "\n";
  ClusterConfig config;
  config.group = group;
  config.key_file = dir + "/cluster.key";
  config.lockd = {{1, "tcp://127.0.0.1:1"}};
  config.replicas = cli::free_endpoints(replicas);
  KeyedClusterFile file{.path = dir + "/cluster.toml", .replicas = config.replicas};
  std::ofstream(file.path) << format_cluster_config(config);
  return file;
}

uint64_t config_version_of(const std::string& endpoint) {
  client::ReplicaConnection conn(endpoint);
  auto stats = conn.call({0, wire::StatsRequest{}});
  if (!stats.is_ok() || !stats.value().stats) throw std::runtime_error(endpoint + " did not answer stats");
  return stats.value().stats->config_version;
}

Status install_config_on(const std::string& endpoint, const std::string& certificate) {
  client::ReplicaConnection conn(endpoint);
  auto reply = conn.call({0, wire::InstallConfigRequest{certificate}});
  if (!reply.is_ok()) return reply.status();
  return reply.value().status;
}

}  // namespace palisade::test
