// The lock simulation's compare-and-sets (LockSimOptions::cas_keys) and the
// reads of their keys, as one register history per key, judged by the
// linearizability checker (tests/support/register_history.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "palisade/timestamp.h"
#include "tests/sim/history.h"
#include "tests/support/register_history.h"

namespace palisade::sim {

class CasHistory {
 public:
  // A compare-and-set of `key` by `client` at `now_ms`, expecting the value a
  // read returned (nullopt: no value) and writing `value` (unique): its index.
  // Its outcome is unknown until one of the three below says otherwise.
  size_t call(const std::string& key, int client, std::optional<std::string> expect, std::string value,
              uint64_t now_ms);
  // `sent_at`: the other timestamps its write went with (WriteRecord::attempts).
  void written(size_t cas, FencedTimestamp ts, std::vector<FencedTimestamp> sent_at, uint64_t now_ms);
  void stale(size_t cas, uint64_t now_ms);  // the compare failed: nothing written
  // It wrote nothing and never will: no grant, its fence or read failed, or
  // its write was refused (fenced, stale: the history checker sees to it
  // that no read returns such a write).
  void no_effect(size_t cas);

  // A read of a compare-and-set key that returned.
  void read(const ReadRecord& r);

  // One line per key whose history is not linearizable.
  std::vector<std::string> check() const;

  uint64_t ok() const { return count(test::RegisterOp::Outcome::kOk); }
  uint64_t failed() const { return count(test::RegisterOp::Outcome::kFailed); }
  uint64_t unknown() const { return count(test::RegisterOp::Outcome::kUnknown); }

 private:
  struct Entry {
    std::string key;
    test::RegisterOp op;
    bool effect = true;  // false: left out of the history
  };
  uint64_t count(test::RegisterOp::Outcome outcome) const;

  std::vector<Entry> entries_;
};

}  // namespace palisade::sim
