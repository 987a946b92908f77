// PALISADE_CHECK: an assertion that stays in release builds. A failed check is a
// bug in palisade, never a reaction to input: it aborts with the place and the condition.
#pragma once

namespace palisade::detail {
[[noreturn]] void check_failed(const char* condition, const char* file, int line);
}

#define PALISADE_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::palisade::detail::check_failed(#cond, __FILE__, __LINE__))
