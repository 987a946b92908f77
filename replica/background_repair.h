// palisade-replica --anti-entropy-interval: runs the anti-entropy driver
// (palisade/anti_entropy.h) over the cluster's replicas on a timer, on a thread
// of its own, logs what each run found and tells its observer (the metrics).
// Once the replica keeps a replica set of the lock group's (follow()), the
// runs go over that set's replicas and quorum instead of the cluster file's.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>

#include "antientropy/anti_entropy.h"
#include "base/periodic_thread.h"
#include "wire/replica_set.h"

namespace palisade::replica {

// What one run came to.
struct RepairRun {
  Status status;  // ok, or why the run stopped
  // What it found and did; for a run that stopped, as far as its last
  // progress report went (the replicas it could not reach included).
  AntiEntropyReport report;
  std::chrono::steady_clock::duration took{};
};

class BackgroundRepair {
 public:
  // Told of each run as it ends, on the repair's thread.
  using Observer = std::function<void(const RepairRun&)>;

  // The first run starts one `interval` after construction.
  BackgroundRepair(AntiEntropyOptions options, std::chrono::milliseconds interval, Observer observer = {});
  // Stops the timer and waits for a run in progress to end.
  ~BackgroundRepair();
  BackgroundRepair(const BackgroundRepair&) = delete;
  BackgroundRepair& operator=(const BackgroundRepair&) = delete;

  // The replica set the replica keeps now (ReplicaConfig's observer): the
  // next run goes over it. Any thread.
  void follow(const wire::ReplicaSet& set, const std::string& certificate);

 private:
  // This run's options: the cluster file's, or those of the set followed.
  AntiEntropyOptions options_now();
  // One run, logged.
  RepairRun run();

  AntiEntropyOptions options_;
  Observer observer_;
  std::mutex mu_;
  wire::ReplicaSet set_;  // guarded by mu_; version 0: none followed
  std::string certificate_;  // guarded by mu_
  PeriodicThread timer_;  // last: stops first
};

}  // namespace palisade::replica
