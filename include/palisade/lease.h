// Lease: one grant of a lock to a LockClient session.
//
// Thread safety: a Lease (and its copies, which share its released flag) may be
// read from any thread while LockClient::release runs on another.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "palisade/lock_mode.h"

namespace palisade {

// What a lease checks its validity against: the session's local lease
// deadline on CLOCK_BOOTTIME, which LockClient keeps up to date.
class LeaseClock;

class Lease {
 public:
  Lease() = default;
  Lease(std::string name, LockMode mode, uint64_t token, std::string sequencer,
        std::shared_ptr<const LeaseClock> clock);

  const std::string& name() const { return name_; }
  LockMode mode() const { return mode_; }
  uint64_t token() const { return token_; }
  // The signed proof of this grant (PALISADE_SEQUENCER); replicas verify it.
  const std::string& sequencer() const { return sequencer_; }
  // Whether the session still holds it as far as this process can tell: not
  // released, session safe, local deadline ahead. A valid lease can still be
  // superseded a moment later (a pause); fenced writes catch that.
  bool valid() const;
  // Time left before the local deadline (zero when not valid). Keeps growing
  // while KeepAlives are answered.
  std::chrono::milliseconds remaining() const;

 private:
  friend class LockClient;
  std::string name_;
  LockMode mode_ = LockMode::kExclusive;
  uint64_t token_ = 0;
  std::string sequencer_;
  std::shared_ptr<const LeaseClock> clock_;
  // Shared by copies, and by every Lease of the same grant from the same client.
  std::shared_ptr<std::atomic<bool>> released_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace palisade
