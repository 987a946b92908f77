// What a master applied that an operator wants to read in its log: grants,
// releases, closed and expired sessions (docs/protocol.md, "Lock group logs").
// LockService reports them; palisade-lockd logs each as one info line.
#pragma once

#include <string>
#include <vector>

#include "palisade/lock_mode.h"
#include "lockgroup/lock_table.h"

namespace palisade::lockgroup {

struct LockEvent {
  enum class Kind { kGranted, kReleased, kClosed, kExpired };
  Kind kind = Kind::kGranted;
  SessionId session = 0;
  std::string lock{};                    // kGranted, kReleased
  LockMode mode = LockMode::kExclusive;  // kGranted
  Token token = 0;                       // kGranted
  bool again = false;  // kGranted: the session held it already (a retry)
  std::vector<std::string> locks{};      // kClosed, kExpired: the locks the session held
  friend bool operator==(const LockEvent&, const LockEvent&) = default;
};

// The event as one log line. Lock names are bytes: each is quoted
// (base/quoted.h), so a name can neither break the line nor fake another one.
// A session's locks are listed up to kMaxLocksListed, then counted.
std::string describe(const LockEvent& event);

constexpr size_t kMaxLocksListed = 8;

}  // namespace palisade::lockgroup
