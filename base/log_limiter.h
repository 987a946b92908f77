// Which of a stream of like events to log. An event that can repeat without
// end (a client resending a refused request, a zombie holder writing on, a
// failing disk) must not flood the log, yet one after a quiet spell must show
// at once: logged are the 1st, 2nd, 4th, 8th, ... event, and any other that
// comes at least `interval_ms` after the last one logged.
//
// Concurrency: one thread.
#pragma once

#include <cstdint>

namespace palisade {

class LogLimiter {
 public:
  static constexpr uint64_t kDefaultIntervalMs = 10'000;

  explicit LogLimiter(uint64_t interval_ms = kDefaultIntervalMs) : interval_ms_(interval_ms) {}

  // Counts an event at `now_ms` (any clock that does not go back); true when
  // this one is to be logged.
  bool count(uint64_t now_ms);
  // The events counted.
  uint64_t total() const { return total_; }

 private:
  uint64_t interval_ms_;
  uint64_t total_ = 0;
  uint64_t last_logged_ms_ = 0;  // set by the first event, which is always logged
};

}  // namespace palisade
