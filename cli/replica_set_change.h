// Changing the replica set while the cluster serves, one replica at a time
// (docs/design.md "The replica set", docs/operations.md "Replacing a
// replica"; the rules are antientropy/replica_change.h's):
//   1. fill the new replica, if any, from the set as it serves (anti-entropy
//      with it as a target, which counts for nothing); a removal skips this;
//   2. pause the set (set_replicas, phase paused) and give every replica the
//      paused certificate: at least max(R, W) must keep it;
//   3. fill again over the paused replicas: floors and every settled version,
//      with no version left undecided (and, in a removal, every replica that
//      stays answering and taking every copy);
//   4. commit the new set (serving, with its W and R) and give it to every
//      replica, the one that leaves included, which then refuses.
// A step that fails ends the pause at once with the old set serving; a
// command that dies leaves it to the lock group's master, which ends a pause
// that lasts a minute.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "antientropy/anti_entropy.h"
#include "antientropy/replica_change.h"
#include "cli/cluster_access.h"
#include "cli/replica_record.h"
#include "palisade/status.h"

namespace palisade::cli {

struct ReplicaSetChange {
  ReplicaChangeKind kind = ReplicaChangeKind::kReplace;
  uint32_t old_id = 0;  // replace, remove: the replica leaving, its id in the set (`palisade member list`)
  std::string new_endpoint{};  // replace, add: the one joining, a [[replica]] of the cluster file, spare
  Quorums quorums{};  // add, remove: the new set's W and R; 0: the default (replica_change.h)
  std::chrono::milliseconds timeout{5000};  // per request to a replica or the master
  std::function<void(const std::string&)> progress{};  // told of each step, one line
};

struct ChangeReport {
  ReplicaRecord record;  // the set it committed
  AntiEntropyReport fill;  // step 1, while the set served (none for a removal)
  AntiEntropyReport paused_fill;  // step 3
  std::chrono::milliseconds took{0};
  std::chrono::milliseconds paused_for{0};  // writes refused, from step 2 to 4
  uint64_t bytes_moved() const { return fill.bytes_moved() + paused_fill.bytes_moved(); }
};

// BadRequest before anything changes when the ids, endpoints or quorums do
// not fit the set (or the new replica keeps a set already); Busy when a
// change is under way; otherwise the step that failed, after the old set was
// made to serve again.
Result<ChangeReport> change_replica_set(const ClusterAccess& access, const ReplicaSetChange& change);

}  // namespace palisade::cli
