// The atomic counts behind OutcomeCounts (palisade/client_counters.h): one
// relaxed increment per call, read from any thread.
#pragma once

#include <atomic>

#include "palisade/client_counters.h"

namespace palisade::client {

class OutcomeCounter {
 public:
  void add(Code code) {
    size_t i = static_cast<size_t>(code);
    if (i >= kCodeCount) i = static_cast<size_t>(Code::kInternal);  // no code is, but no index may pass the end
    counts_[i].fetch_add(1, std::memory_order_relaxed);
  }
  OutcomeCounts read() const {
    OutcomeCounts out;
    for (size_t i = 0; i < kCodeCount; ++i) out.by_code[i] = counts_[i].load(std::memory_order_relaxed);
    return out;
  }

 private:
  std::array<std::atomic<uint64_t>, kCodeCount> counts_{};
};

}  // namespace palisade::client
