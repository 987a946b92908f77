// The client's view of a cluster file (palisade/cluster_file.h) made from a
// cluster file already read, for the command line, which finds its key file
// in its own ways ($PALISADE_KEY, the local cluster's admin key).
#pragma once

#include <optional>

#include "config/cluster_config.h"
#include "palisade/cluster_file.h"

namespace palisade {

ClusterFile client_cluster_file(const ClusterConfig& config, std::optional<Credentials> credentials);

// How a store checks config certificates: with the lock group `group`'s
// sequencer_public_key; nullopt when that is empty or not a key.
std::optional<ConfigCheck> config_check(const std::string& group, const std::string& sequencer_public_key);

}  // namespace palisade
