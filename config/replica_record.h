// The replica set as the lock group records it (docs/design.md "The replica
// set"): get_replicas from the lock group, its certificate checked with the
// cluster file's sequencer_public_key. Version 0 while none is recorded: the
// cluster file's [[replica]] list stands, or, when it has none, the one the
// lock group's nodes serve signed from their own files. For the command line
// and for a replica whose file names only the lock group.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "config/cluster_config.h"
#include "palisade/credentials.h"
#include "palisade/status.h"
#include "wire/replica_set.h"

namespace palisade {

struct ReplicaRecord {
  wire::ReplicaSet set{};  // version 0: none recorded; then a file's replicas and quorums
  std::string certificate{};  // empty at version 0 unless a node signed its file's list
  bool checked = false;  // the signature was checked (the file gives sequencer_public_key)
};

// Asks every lock group node `config` lists and takes the newest record any
// serves (a node that lags serves an older one). Unavailable when none
// answers; BadRequest when a certificate a node serves does not check out
// (forged, or another group's).
Result<ReplicaRecord> read_replica_record(const ClusterConfig& config, const std::optional<Credentials>& credentials,
                                          std::chrono::milliseconds per_call);

}  // namespace palisade
