#include "metrics/health.h"

namespace palisade::metrics {

Health::Health(std::chrono::milliseconds stall) : stall_ms_(stall.count()), last_turn_ms_(now_ms()) {}

int64_t Health::now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Health::turned() { last_turn_ms_.store(now_ms(), std::memory_order_relaxed); }

void Health::set_ready(bool ready, std::string_view why_not) {
  std::lock_guard lock(mutex_);
  ready_ = ready;
  if (!ready && why_not_ != why_not) why_not_ = why_not;  // allocates only on a change: called every turn
}

Health::Answer Health::healthz() const {
  const int64_t idle = now_ms() - last_turn_ms_.load(std::memory_order_relaxed);
  if (idle > stall_ms_) return {false, "the event loop has not turned for " + std::to_string(idle) + " ms"};
  return {true, "ok"};
}

Health::Answer Health::readyz() const {
  Answer health = healthz();
  if (!health.ok) return health;
  std::lock_guard lock(mutex_);
  return ready_ ? Answer{true, "ok"} : Answer{false, why_not_};
}

}  // namespace palisade::metrics
