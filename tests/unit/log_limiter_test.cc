// LogLimiter (base/log_limiter.h): a flood logs a few lines, a new burst after
// a quiet spell logs at once.
#include "base/log_limiter.h"

#include <catch2/catch.hpp>

#include <vector>

namespace palisade {
namespace {

// The events of `n`, all at `now_ms`, that `limiter` logs (1-based).
std::vector<uint64_t> logged(LogLimiter& limiter, uint64_t n, uint64_t now_ms) {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < n; ++i) {
    if (limiter.count(now_ms)) out.push_back(limiter.total());
  }
  return out;
}

TEST_CASE("log limiter: a burst logs its 1st, 2nd, 4th, 8th, ... event", "[base][logging]") {
  LogLimiter limiter(10'000);
  CHECK(logged(limiter, 100, 5) == std::vector<uint64_t>{1, 2, 4, 8, 16, 32, 64});
  CHECK(limiter.total() == 100);
}

TEST_CASE("log limiter: after the interval since the last logged, the next event logs", "[base][logging]") {
  LogLimiter limiter(10'000);
  CHECK(logged(limiter, 5, 1000) == std::vector<uint64_t>{1, 2, 4});
  CHECK(!limiter.count(10'999));  // the 6th, under 10 s after the 4th
  CHECK(limiter.count(11'000));  // the 7th, 10 s after it
  CHECK(limiter.count(11'001));  // the 8th, a power of two
  CHECK(!limiter.count(11'002));
  CHECK(!limiter.count(21'000));  // under 10 s after the 8th
  CHECK(limiter.count(21'001));
  // A steady flood logs once an interval, whatever its rate.
  uint64_t lines = 0;
  for (uint64_t ms = 21'002; ms < 81'002; ++ms) lines += limiter.count(ms) ? 1 : 0;
  CHECK(lines >= 6);
  CHECK(lines <= 6 + 16);  // and the powers of two up to 2^16 among its 60 000 events
}

}  // namespace
}  // namespace palisade
