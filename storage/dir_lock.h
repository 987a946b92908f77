// An exclusive claim on a data directory, so that two daemons never share one.
// Held until the object is destroyed or the process dies (flock on DIR/LOCK).
#pragma once

#include <string>

#include "palisade/status.h"

namespace palisade {

class DirLock {
 public:
  // StorageError naming the holder's pid when another process holds the directory.
  static Result<DirLock> acquire(const std::string& dir);
  DirLock(DirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DirLock& operator=(DirLock&&) = delete;
  ~DirLock();

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace palisade
