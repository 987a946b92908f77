// Clients for the cluster a cluster file describes: its replicas as a
// QuorumStore (R and W from the file, else majorities), its lock group as
// LockClient options, both with the file's cluster_id and, on a secure
// cluster, the credentials. For the command line, the demo and its lock holders.
#pragma once

#include <chrono>
#include <memory>

#include "cli/command.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"

namespace palisade::cli {

Result<std::unique_ptr<QuorumStore>> open_store(const ClusterAccess& cluster,
                                                std::chrono::milliseconds timeout = std::chrono::seconds(5));
LockClientOptions lock_client_options(const ClusterAccess& cluster);

}  // namespace palisade::cli
