#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace palisade::detail {

void check_failed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "palisade: check failed: %s at %s:%d\n", condition, file, line);
  std::abort();
}

}  // namespace palisade::detail
