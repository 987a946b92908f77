// palisade-replica --anti-entropy-interval: runs the anti-entropy driver
// (palisade/anti_entropy.h) over the cluster's replicas on a timer, on a thread
// of its own, and logs what each run found.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "antientropy/anti_entropy.h"

namespace palisade::replica {

class BackgroundRepair {
 public:
  // The first run starts one `interval` after construction.
  BackgroundRepair(AntiEntropyOptions options, std::chrono::milliseconds interval);
  // Stops the timer and waits for a run in progress to end.
  ~BackgroundRepair();
  BackgroundRepair(const BackgroundRepair&) = delete;
  BackgroundRepair& operator=(const BackgroundRepair&) = delete;

 private:
  void loop();

  AntiEntropyOptions options_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace palisade::replica
