// A LocalCluster of the palisade-lockd and palisade-replica binaries under test.
#pragma once

#include <memory>
#include <string>

#include "cli/local_cluster.h"

namespace palisade::test {

// Path of the palisade-lockd binary under test.
std::string lockd_binary();

// Options for a cluster in `dir` that runs this build's daemons.
cli::LocalClusterOptions local_cluster_options(std::string dir);

// Starts the cluster; throws std::runtime_error (with the daemons' logs) when it
// does not become healthy.
std::unique_ptr<cli::LocalCluster> start_local_cluster(cli::LocalClusterOptions options);

}  // namespace palisade::test
