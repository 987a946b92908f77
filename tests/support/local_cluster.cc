#include "tests/support/local_cluster.h"

#include <stdexcept>

#include "tests/support/replica_process.h"

namespace palisade::test {

std::string lockd_binary() { return PALISADE_LOCKD_BIN; }

tools::LocalClusterOptions local_cluster_options(std::string dir) {
  tools::LocalClusterOptions o;
  o.dir = std::move(dir);
  o.lockd_binary = lockd_binary();
  o.replica_binary = replica_binary();
  return o;
}

std::unique_ptr<tools::LocalCluster> start_local_cluster(tools::LocalClusterOptions options) {
  auto cluster = tools::LocalCluster::start(std::move(options));
  if (!cluster.is_ok()) throw std::runtime_error("the local cluster did not start: " + cluster.status().to_string());
  return std::move(cluster).value();
}

}  // namespace palisade::test
