#include "cli/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace palisade::cli {

Status write_file(const std::string& path, const std::string& text, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Status(Code::kStorageError, "cannot write " + path + ": " + std::strerror(errno));
  bool ok = fchmod(fd, mode) == 0;
  size_t done = 0;
  while (ok && done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  int saved = errno;
  ::close(fd);
  if (!ok) return Status(Code::kStorageError, "cannot write " + path + ": " + std::strerror(saved));
  return Status::ok();
}

Status replace_file(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = path + ".tmp";
  if (Status s = write_file(tmp, text, mode); !s.is_ok()) return s;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    std::remove(tmp.c_str());
    return Status(Code::kStorageError, "cannot replace " + path + ": " + std::strerror(saved));
  }
  return Status::ok();
}

}  // namespace palisade::cli
