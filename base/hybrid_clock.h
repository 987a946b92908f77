// A hybrid logical clock (Kulkarni et al. 2014) packed in 64 bits (see hlc:: in
// timestamp.h). Values it hands out strictly increase, stay close to physical time,
// and respect causality through observe().
//
// Thread safety: every method may be called from any number of threads at once
// (one atomic word, compare-and-swap).
#pragma once

#include <atomic>
#include <cstdint>

#include "base/physical_clock.h"
#include "palisade/status.h"

namespace palisade {

class HybridClock {
 public:
  struct Options {
    // A remote value further ahead of local physical time than this is refused.
    uint64_t max_clock_offset_ms = 500;
  };

  // `physical` must outlive the clock.
  explicit HybridClock(PhysicalClock& physical) : HybridClock(physical, Options{}) {}
  HybridClock(PhysicalClock& physical, Options options) : physical_(physical), options_(options) {}

  // A value greater than every value this clock returned or observed before. When the
  // logical counter overflows, the physical part advances instead of wrapping.
  uint64_t now();

  // Merges a value received from another node, so that the next now() is later than
  // it. Returns ClockSkew (and changes nothing) when `remote` is more than
  // max_clock_offset_ms ahead of local physical time; otherwise the merged value.
  Result<uint64_t> observe(uint64_t remote);

  // The latest value handed out or observed, without advancing.
  uint64_t last() const { return last_.load(std::memory_order_acquire); }

  const Options& options() const { return options_; }
  // The physical clock's reading, in ms since the epoch.
  uint64_t physical_ms() { return physical_.now_ms(); }

 private:
  // Raises last_ to max(last_ + 1, floor) and returns the new value.
  uint64_t advance_past(uint64_t floor);

  PhysicalClock& physical_;
  Options options_;
  std::atomic<uint64_t> last_{0};
};

}  // namespace palisade
