#include "palisade/lease.h"

#include <time.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "client/lease_clock.h"

namespace palisade {

uint64_t boottime_ms() {
  timespec ts{};
  if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0) {
    throw std::runtime_error(std::string("clock_gettime(CLOCK_BOOTTIME): ") + std::strerror(errno));
  }
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

Lease::Lease(std::string name, LockMode mode, uint64_t token, std::string sequencer,
             std::shared_ptr<const LeaseClock> clock)
    : name_(std::move(name)), mode_(mode), token_(token), sequencer_(std::move(sequencer)), clock_(std::move(clock)) {}

bool Lease::valid() const {
  if (!clock_ || released_->load(std::memory_order_acquire)) return false;
  return clock_->valid_at(clock_->now_ms());
}

std::chrono::milliseconds Lease::remaining() const {
  if (!clock_ || released_->load(std::memory_order_acquire)) return std::chrono::milliseconds(0);
  const uint64_t until = clock_->valid_until();
  const uint64_t now = clock_->now_ms();
  if (now >= until) return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(static_cast<int64_t>(until - now));
}

}  // namespace palisade
