#include "base/hybrid_clock.h"

#include <algorithm>

#include "base/check.h"
#include "palisade/timestamp.h"

namespace palisade {

uint64_t HybridClock::advance_past(uint64_t floor) {
  uint64_t old = last_.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    PALISADE_CHECK(old != UINT64_MAX);
    next = std::max(old + 1, floor);  // old + 1 carries a full logical counter into the physical part
  } while (!last_.compare_exchange_weak(old, next, std::memory_order_acq_rel, std::memory_order_relaxed));
  return next;
}

uint64_t HybridClock::now() {
  return advance_past(hlc::make(physical_.now_ms(), 0));
}

Result<uint64_t> HybridClock::observe(uint64_t remote) {
  uint64_t pt = physical_.now_ms();
  if (hlc::physical_ms(remote) > pt + options_.max_clock_offset_ms) {
    return Status(Code::kClockSkew, "remote clock " + std::to_string(hlc::physical_ms(remote)) +
                                        " ms is " + std::to_string(hlc::physical_ms(remote) - pt) +
                                        " ms ahead of local time (limit " +
                                        std::to_string(options_.max_clock_offset_ms) + " ms)");
  }
  // HLC receive rule: the next value exceeds both the local and the remote value and
  // is at least physical time; the packed form makes it one max().
  return advance_past(std::max(hlc::make(pt, 0), remote + 1));
}

}  // namespace palisade
