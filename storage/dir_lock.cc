#include "storage/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace palisade {

Result<DirLock> DirLock::acquire(const std::string& dir) {
  std::string path = dir + "/LOCK";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status(Code::kStorageError, "cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {};
    ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    std::string pid = n > 0 ? std::string(holder, static_cast<size_t>(n)) : "unknown";
    return Status(Code::kStorageError,
                  "data directory " + dir + " is in use by another process (pid " + pid + ")");
  }
  std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds anyway; the pid is only a hint for the error message above.
  }
  return DirLock(fd);
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace palisade
