// Counters of a client's calls, for the application's own metrics: how many
// calls of each kind ended with each code since the client opened. Read them
// at any time from any thread; each count is exact, but counts read together
// may be a call apart.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "palisade/status.h"

namespace palisade {

// How many calls of one kind ended with each code (ok, fenced, timeout, ...).
struct OutcomeCounts {
  std::array<uint64_t, kCodeCount> by_code{};

  uint64_t operator[](Code code) const { return by_code[static_cast<size_t>(code)]; }
  uint64_t total() const {
    uint64_t sum = 0;
    for (uint64_t n : by_code) sum += n;
    return sum;
  }
};

// QuorumStore::counters(): this store's calls, blocking and asynchronous
// alike (not those of other stores sharing its connections).
struct StoreCounters {
  OutcomeCounts puts;
  OutcomeCounts deletes;
  OutcomeCounts gets;
  OutcomeCounts scans;  // QuorumStore::scan
  OutcomeCounts fences;  // QuorumStore::fence, and a LockClient's grant fences through this store
};

// LockClient::counters(): its calls, and what happened to its session.
struct LockCounters {
  OutcomeCounts acquires;  // try_acquire too: busy, timeout, fenced, no_session, ...
  OutcomeCounts releases;
  uint64_t jeopardy = 0;  // SessionEvent::kJeopardy: KeepAlives went unanswered
  uint64_t safe_again = 0;  // SessionEvent::kSafe: a master answered within the grace period
  uint64_t expired = 0;  // SessionEvent::kExpired
};

}  // namespace palisade
