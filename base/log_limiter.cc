#include "base/log_limiter.h"

#include <bit>

namespace palisade {

bool LogLimiter::count(uint64_t now_ms) {
  ++total_;
  if (!std::has_single_bit(total_) && now_ms - last_logged_ms_ < interval_ms_) return false;
  last_logged_ms_ = now_ms;
  return true;
}

}  // namespace palisade
