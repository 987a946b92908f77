// palisade-replica --anti-entropy-interval: runs the anti-entropy driver
// (palisade/anti_entropy.h) over the cluster's replicas on a timer, on a thread
// of its own, logs what each run found and tells its observer (the metrics).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "antientropy/anti_entropy.h"

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

 private:
  void loop();
  // One run, logged.
  RepairRun run();

  AntiEntropyOptions options_;
  std::chrono::milliseconds interval_;
  Observer observer_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace palisade::replica
