#include "tests/support/failing_sync.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace {

std::atomic<int> failures_left{0};

}  // namespace

namespace palisade::test {

void fail_next_syncs(int n) { failures_left = n; }

}  // namespace palisade::test

extern "C" int fdatasync(int fd) {
  using Real = int (*)(int);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "fdatasync"));
  for (int left = failures_left.load(); left > 0;) {
    if (failures_left.compare_exchange_weak(left, left - 1)) {
      errno = EIO;
      return -1;
    }
  }
  return real(fd);
}
