#include "tests/support/replica_process.h"

#include <fstream>

#include "cli/process.h"
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

}  // namespace palisade::test
