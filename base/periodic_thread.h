// A thread that runs `tick` every `interval` (the first one interval after it
// starts) until it is destroyed, which waits for a tick in progress. For the
// daemons' background work: a replica's anti-entropy, a paused replica asking
// the lock group for its set.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace palisade {

class PeriodicThread {
 public:
  PeriodicThread(std::chrono::milliseconds interval, std::function<void()> tick);
  ~PeriodicThread();
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

 private:
  void loop();

  const std::chrono::milliseconds interval_;
  const std::function<void()> tick_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;  // last: it starts once the rest is ready
};

}  // namespace palisade
