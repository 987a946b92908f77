// PALISADE_CHECK: an assertion that stays in release builds. A failed check is a
// bug in palisade, never a reaction to input: it aborts with the place and the condition.
#pragma once

#include <string>

namespace palisade::detail {
[[noreturn]] void check_failed(const char* condition, const char* file, int line);
// Aborts naming the broken invariant when `problem` is not empty.
void check_invariant(const std::string& problem, const char* what, const char* file, int line);
}  // namespace palisade::detail

#define PALISADE_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::palisade::detail::check_failed(#cond, __FILE__, __LINE__))

// PALISADE_DCHECK_INVARIANTS(problem): in debug builds only (the sanitizer
// builds run every unit test this way), aborts when `problem`, the result of a
// check_invariants() that walks a whole state and returns "" when it holds, is
// not empty. Release builds do not evaluate it: the simulator calls the same
// check_invariants() after every event and reports the seed instead.
#ifdef NDEBUG
#define PALISADE_DCHECK_INVARIANTS(problem) static_cast<void>(0)
#else
#define PALISADE_DCHECK_INVARIANTS(problem) ::palisade::detail::check_invariant((problem), #problem, __FILE__, __LINE__)
#endif
