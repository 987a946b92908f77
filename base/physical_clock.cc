#include "base/physical_clock.h"

#include <time.h>

namespace palisade {

uint64_t SystemClock::now_ms() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

}  // namespace palisade
