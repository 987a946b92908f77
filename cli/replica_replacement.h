// Replacing one replica of the set while the cluster serves (docs/design.md
// "The replica set", docs/operations.md "Replacing a replica"):
//   1. fill the new replica from the set as it serves (anti-entropy with it
//      as a target, which counts for nothing);
//   2. pause the set (set_replicas, phase paused) and give every replica the
//      paused certificate: at least max(R, W) must keep it;
//   3. fill again over the paused replicas: floors and every settled version,
//      with no version left undecided;
//   4. commit the new set (serving, the new replica in, the old one out) and
//      give it to every replica, the old one included, which then refuses.
// A step that fails ends the pause at once with the old set serving; a
// command that dies leaves it to the lock group's master, which ends a pause
// that lasts a minute.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "antientropy/anti_entropy.h"
#include "cli/cluster_access.h"
#include "cli/replica_record.h"
#include "palisade/status.h"

namespace palisade::cli {

struct ReplicaReplacement {
  uint32_t old_id = 0;  // the replica leaving: its id in the set (`palisade member list`)
  std::string new_endpoint;  // the one joining: a [[replica]] of the cluster file, spare
  std::chrono::milliseconds timeout{5000};  // per request to a replica or the master
  std::function<void(const std::string&)> progress{};  // told of each step, one line
};

struct ReplacementReport {
  ReplicaRecord record;  // the set it committed
  AntiEntropyReport fill;  // step 1, while the set served
  AntiEntropyReport paused_fill;  // step 3
  std::chrono::milliseconds took{0};
  std::chrono::milliseconds paused_for{0};  // writes refused, from step 2 to 4
  uint64_t bytes_moved() const { return fill.bytes_moved() + paused_fill.bytes_moved(); }
};

// BadRequest before anything changes when the ids or endpoints do not fit the
// set (or the new replica keeps a set already); Busy when a
// replacement is under way; otherwise the step that failed, after the old set
// was made to serve again.
Result<ReplacementReport> replace_replica(const ClusterAccess& access, const ReplicaReplacement& replacement);

}  // namespace palisade::cli
