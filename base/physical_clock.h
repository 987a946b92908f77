// Where time comes from. Protocol cores never read a clock themselves: they are
// given one of these, and the simulator gives them a simulated one.
#pragma once

#include <atomic>
#include <cstdint>

namespace palisade {

// Wall-clock milliseconds since the Unix epoch, for hybrid logical clocks only.
// Never use it to time a lease: wall clocks jump.
class PhysicalClock {
 public:
  virtual ~PhysicalClock() = default;
  virtual uint64_t now_ms() = 0;
};

// The host's wall clock (CLOCK_REALTIME).
class SystemClock final : public PhysicalClock {
 public:
  uint64_t now_ms() override;
};

// A clock that tests and the simulator set by hand. Thread-safe.
class ManualClock final : public PhysicalClock {
 public:
  explicit ManualClock(uint64_t start_ms = 0) : ms_(start_ms) {}
  uint64_t now_ms() override { return ms_.load(std::memory_order_relaxed); }
  void set_ms(uint64_t ms) { ms_.store(ms, std::memory_order_relaxed); }
  void advance_ms(uint64_t delta) { ms_.fetch_add(delta, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> ms_;
};

}  // namespace palisade
