// The palisade-replica under test, started as a real process.
#pragma once

#include <string>
#include <vector>

#include "auth/cluster_key.h"
#include "cli/replica_process.h"

namespace palisade::test {

// Path of the palisade-replica binary under test.
std::string replica_binary();

class ReplicaProcess : public cli::ReplicaProcess {
 public:
  explicit ReplicaProcess(std::string data_dir, std::vector<std::string> extra_args = {}, std::string endpoint = "")
      : cli::ReplicaProcess(replica_binary(), std::move(data_dir), std::move(extra_args), std::move(endpoint)) {}
};

// A cluster file for replicas that check sequencers, without a lock group to
// run: what `--cluster` gives replicas started one by one.
struct KeyedClusterFile {
  std::string path;  // dir/cluster.toml
  std::vector<std::string> replicas;  // free loopback ports to start them on, in the file's order
};

// Writes dir/cluster.key (`key`) and dir/cluster.toml: lock group `group`,
// `replicas` replicas (W a majority) and one lockd endpoint that nothing
// serves. It lists no identities, so its replicas serve plaintext links and
// start with --insecure (as ReplicaProcess adds).
KeyedClusterFile write_keyed_cluster_file(const std::string& dir, const std::string& group, const ClusterKey& key,
                                          int replicas);

// The replica set version the replica at `endpoint` keeps (stats'
// config_version; 0: none). Throws std::runtime_error when it does not answer.
uint64_t config_version_of(const std::string& endpoint);
// Gives the replica at `endpoint` a config certificate (install_config): its
// answer's status, or why none came.
Status install_config_on(const std::string& endpoint, const std::string& certificate);

}  // namespace palisade::test
