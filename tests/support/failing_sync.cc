// A disk whose syncs fail, for a daemon in a process of its own: preloaded
// (LD_PRELOAD=libpalisade_failing_sync.so), fdatasync and fsync fail with EIO
// while the file that PALISADE_FAIL_SYNCS_WHILE names exists, and go to the C
// library otherwise. The test creates the file when the disk should fail.
// (In-process tests use sim_disk.h instead.)
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace {

bool failing() {
  const char* flag = std::getenv("PALISADE_FAIL_SYNCS_WHILE");
  return flag != nullptr && access(flag, F_OK) == 0;
}

template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" int fdatasync(int fd) {
  static const auto real = next<int (*)(int)>("fdatasync");
  if (failing()) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

extern "C" int fsync(int fd) {
  static const auto real = next<int (*)(int)>("fsync");
  if (failing()) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}
