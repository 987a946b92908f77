#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace palisade::detail {

void check_failed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "palisade: check failed: %s at %s:%d\n", condition, file, line);
  std::abort();
}

void check_invariant(const std::string& problem, const char* what, const char* file, int line) {
  if (problem.empty()) return;
  std::fprintf(stderr, "palisade: invariant broken: %s (%s at %s:%d)\n", problem.c_str(), what, file, line);
  std::abort();
}

}  // namespace palisade::detail
