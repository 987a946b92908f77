// A linearizability checker for histories of one register read and written
// by compare-and-set (docs/consistency.md, "Conditional writes"), in the
// style of Knossos and Porcupine: the Wing & Gong search with Lowe's cache
// of (operations linearized, state) already explored.
//
// Every write in a history writes a value no other write does, so the state
// is the write whose value the register holds (or none). A read is legal
// when it returns that write's value (and timestamp, when the write's is
// known); a compare-and-set that succeeded when the register held what it
// expected, one that failed (stale) when it did not. One whose outcome is
// unknown (a timeout, a killed client) may take effect at any time after its
// call, or never.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "palisade/timestamp.h"

namespace palisade::test {

struct RegisterOp {
  enum class Kind { kRead, kCas };
  enum class Outcome { kOk, kFailed, kUnknown };  // kFailed: a compare that did not match (stale)
  Kind kind = Kind::kRead;
  Outcome outcome = Outcome::kOk;
  uint64_t call = 0;  // when it was called and when it returned, one clock
  uint64_t ret = 0;  // ignored for kUnknown: it may take effect any time after its call
  int process = 0;  // who ran it, for the report
  // kCas: what it expected to find: nullopt for nothing (put-if-absent), else
  // the value a read returned (values are unique to their writes).
  std::optional<std::string> expect{};
  // kCas: what it writes. kRead, kOk: what it read, nullopt for nothing.
  std::optional<std::string> value{};
  // kRead of a value, kCas kOk: the version's timestamp, when known.
  std::optional<FencedTimestamp> ts{};
  // kCas kOk: other timestamps its write went with, a read of any of which
  // reads it (a write that moved to a newer replica set is sent again there
  // with a new timestamp, docs/consistency.md).
  std::vector<FencedTimestamp> sent_at{};
};

struct RegisterVerdict {
  bool linearizable = false;
  std::string why;  // when not: the operations it could not order, or a malformed history
  size_t explored = 0;  // states the search visited
};

// `initial`: the value the register holds before the history (nullopt: none).
RegisterVerdict check_register(const std::vector<RegisterOp>& history,
                               const std::optional<std::string>& initial = std::nullopt);

// One op as a line of a report: "p3 cas 'a' -> 'b' ok [120, 180]".
std::string describe(const RegisterOp& op);

}  // namespace palisade::test
