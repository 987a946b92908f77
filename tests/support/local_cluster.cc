#include "tests/support/local_cluster.h"

#include <stdexcept>

#include "tests/support/replica_process.h"

namespace palisade::test {

std::string lockd_binary() { return PALISADE_LOCKD_BIN; }

cli::LocalClusterOptions local_cluster_options(std::string dir) {
  cli::LocalClusterOptions o;
  o.dir = std::move(dir);
  o.lockd_binary = lockd_binary();
  o.replica_binary = replica_binary();
  return o;
}

std::unique_ptr<cli::LocalCluster> start_local_cluster(cli::LocalClusterOptions options) {
  auto cluster = cli::LocalCluster::start(std::move(options));
  if (!cluster.is_ok()) throw std::runtime_error("the local cluster did not start: " + cluster.status().to_string());
  return std::move(cluster).value();
}

}  // namespace palisade::test
