// The command line's replica set: the one the lock group records in place of
// the cluster file's [[replica]] list (config/replica_record.h).
#pragma once

#include <chrono>

#include "cli/cluster_access.h"
#include "config/replica_record.h"
#include "palisade/status.h"

namespace palisade::cli {

// `access` with the set the lock group records (its replicas, quorums and
// CURVE keys) in place of the file's [[replica]] list; as it is while none
// is recorded. A file that lists no replicas (one that names only the lock
// group) needs the record, or the lock group nodes' own list: Unavailable,
// saying why, without one.
Result<ClusterAccess> with_recorded_replicas(ClusterAccess access, std::chrono::milliseconds per_call);

}  // namespace palisade::cli
