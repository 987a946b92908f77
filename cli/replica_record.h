// The replica set as the lock group records it (docs/design.md "The replica
// set"): get_replicas from the lock group, its certificate checked with the
// cluster file's sequencer_public_key. Version 0 while none is recorded: the
// cluster file's [[replica]] list stands, or, when it has none, the one the
// lock group's nodes serve signed from their own files.
#pragma once

#include <chrono>
#include <string>

#include "cli/cluster_access.h"
#include "palisade/status.h"
#include "wire/replica_set.h"

namespace palisade::cli {

struct ReplicaRecord {
  wire::ReplicaSet set{};  // version 0: none recorded; then the file's replicas and quorums
  std::string certificate{};  // empty at version 0 unless a node signed its file's list
  bool checked = false;  // the signature was checked (the file gives sequencer_public_key)
};

// Asks every lock group node the cluster file lists and takes the newest
// record any serves (a node that lags serves an older one). Unavailable when
// none answers; BadRequest when a certificate a node serves does not check
// out (forged, or another group's).
Result<ReplicaRecord> read_replica_record(const ClusterAccess& access, std::chrono::milliseconds per_call);

// `access` with the set the lock group records (its replicas, quorums and
// CURVE keys) in place of the file's [[replica]] list; as it is while none
// is recorded. A file that lists no replicas (one that names only the lock
// group) needs the record: Unavailable, saying why, without one.
Result<ClusterAccess> with_recorded_replicas(ClusterAccess access, std::chrono::milliseconds per_call);

}  // namespace palisade::cli
