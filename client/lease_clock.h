// LeaseClock (internal): what a Lease checks its validity against. LockClient's
// background thread publishes the session's local lease deadline here after
// every step of its LockSession; Leases read it lock-free from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "palisade/lease.h"

namespace palisade {

// Milliseconds on CLOCK_BOOTTIME: monotonic, and counting through a suspend.
uint64_t boottime_ms();

class LeaseClock {
 public:
  using NowFn = uint64_t (*)();
  explicit LeaseClock(NowFn now = &boottime_ms) : now_(now) {}

  // Leases are valid while the session is safe and now < deadline_ms. One word,
  // so that a reader never sees the state of one step with the deadline of another.
  void publish(bool safe, uint64_t deadline_ms) {
    {
      std::lock_guard lock(mu_);
      valid_until_.store(safe ? deadline_ms : 0, std::memory_order_release);
    }
    changed_.notify_all();
  }
  // Void for good (the session expired or closed): later publishes are ignored.
  void void_all() {
    {
      std::lock_guard lock(mu_);
      void_.store(true, std::memory_order_release);
      valid_until_.store(0, std::memory_order_release);
    }
    changed_.notify_all();
  }
  // Waits until leases are valid, the clock is void, or `timeout` passed;
  // whether leases are valid.
  bool wait_valid(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [this] {
      return valid_at(now_ms()) || void_.load(std::memory_order_acquire);
    }) && valid_at(now_ms());
  }
  uint64_t now_ms() const { return now_(); }
  uint64_t valid_until() const {
    if (void_.load(std::memory_order_acquire)) return 0;
    return valid_until_.load(std::memory_order_acquire);
  }
  bool valid_at(uint64_t now_ms) const { return now_ms < valid_until(); }

 private:
  NowFn now_;
  std::atomic<uint64_t> valid_until_{0};
  std::atomic<bool> void_{false};
  std::mutex mu_;  // only for waiters: readers of validity take no lock
  std::condition_variable changed_;
};

}  // namespace palisade
