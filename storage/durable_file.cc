#include "storage/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace palisade {

Status io_error(const std::string& what, const std::string& path) {
  return Status(Code::kStorageError, what + " " + path + ": " + std::strerror(errno));
}

bool write_all(int fd, std::string_view bytes, uint64_t offset) {
  while (!bytes.empty()) {
    ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

Status rename_durably(const std::string& tmp, const std::string& path) {
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = io_error("cannot rename to", path);
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename is durable once the directory is synced.
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return io_error("cannot open directory of", path);
  int rc = ::fsync(dfd);
  Status s = rc == 0 ? Status::ok() : io_error("cannot sync directory of", path);
  ::close(dfd);
  return s;
}

Status write_file_durably(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".new";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("cannot create", tmp);
  const bool ok = write_all(fd, contents, 0) && ::fdatasync(fd) == 0;
  Status s = ok ? Status::ok() : io_error("cannot write", tmp);
  ::close(fd);
  if (!s.is_ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  return rename_durably(tmp, path);
}

Result<std::optional<std::string>> read_small_file(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return io_error("cannot open", path);
  }
  std::string out;
  char buf[4096];
  Status s = Status::ok();
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      s = io_error("cannot read", path);
      break;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      s = Status(Code::kStorageError, path + " holds more than " + std::to_string(max_bytes) + " bytes");
      break;
    }
  }
  ::close(fd);
  if (!s.is_ok()) return s;
  return std::optional<std::string>(std::move(out));
}

}  // namespace palisade
