#include "common/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/big_endian.h"
#include "common/hash.h"

namespace palisade {
namespace {

constexpr uint32_t kMagic = 0x504a524e;                 // "PJRN"
constexpr uint64_t kChecksumSeed = 0x6a6f75726e616c31;  // "journal1"

Status io_error(const std::string& what, const std::string& path) {
  return Status(Code::kStorageError, what + " " + path + ": " + std::strerror(errno));
}

// Writes all of `bytes` at `offset`.
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

// Reads `n` bytes at `offset`; false on a short read or an error (errno set).
bool read_all(int fd, char* out, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0) errno = EIO;
      return false;
    }
    out += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

// Creates `path` full of zeros through a temporary file, so that a crash never
// leaves a journal of the wrong size behind.
Status create_file(const std::string& path, size_t size) {
  const std::string tmp = path + ".new";
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create", tmp);
  const std::string zeros(size_t{1} << 20, '\0');
  bool ok = true;
  for (size_t done = 0; ok && done < size; done += zeros.size()) {
    ok = write_all(fd, std::string_view(zeros).substr(0, std::min(zeros.size(), size - done)), done);
  }
  ok = ok && ::fdatasync(fd) == 0;
  Status s = ok ? Status::ok() : io_error("cannot fill", tmp);
  ::close(fd);
  if (s.is_ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = io_error("cannot rename to", path);
  if (!s.is_ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename is durable once the directory is synced.
  std::string dir = path.substr(0, path.find_last_of('/') + 1);
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return io_error("cannot open directory of", path);
  int rc = ::fsync(dfd);
  ::close(dfd);
  return rc == 0 ? Status::ok() : io_error("cannot sync directory of", path);
}

}  // namespace

Result<std::unique_ptr<Journal>> Journal::open(const std::string& path, size_t size_bytes, bool create) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return io_error("cannot stat", path);
    if (!create) {
      return Status(Code::kStorageError, "journal " + path +
                                             " is missing: writes acknowledged since the last checkpoint may be "
                                             "lost; restore the file, or empty the data directory and let "
                                             "anti-entropy refill it");
    }
    if (size_bytes < kMinFileBytes) {
      return Status(Code::kBadRequest, "a journal needs at least " + std::to_string(kMinFileBytes) + " bytes");
    }
    if (Status s = create_file(path, size_bytes); !s.is_ok()) return s;
  } else if (static_cast<size_t>(st.st_size) < kMinFileBytes) {
    return Status(Code::kStorageError, "journal " + path + " has " + std::to_string(st.st_size) +
                                           " bytes, fewer than the " + std::to_string(kMinFileBytes) +
                                           " of any journal: it is damaged");
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", path);
  if (::fstat(fd, &st) != 0) {
    Status s = io_error("cannot stat", path);
    ::close(fd);
    return s;
  }
  return std::unique_ptr<Journal>(new Journal(path, fd, static_cast<size_t>(st.st_size)));
}

Journal::~Journal() { ::close(fd_); }

Result<bool> Journal::read_record(uint64_t offset, uint64_t seq, std::string* payload, size_t* record_bytes) {
  if (offset + kHeaderBytes + kTrailerBytes > size_) return false;
  uint8_t header[kHeaderBytes];
  if (!read_all(fd_, reinterpret_cast<char*>(header), kHeaderBytes, offset)) return io_error("cannot read", path_);
  const uint64_t magic_and_length = load_be64(header);
  const size_t length = magic_and_length & 0xffffffff;
  if ((magic_and_length >> 32) != kMagic || load_be64(header + 8) != seq) return false;
  if (offset + kHeaderBytes + length + kTrailerBytes > size_) return false;
  std::string bytes(kHeaderBytes + length + kTrailerBytes, '\0');
  if (!read_all(fd_, bytes.data(), bytes.size(), offset)) return io_error("cannot read", path_);
  std::string_view covered(bytes.data(), kHeaderBytes + length);
  if (hash64(covered, kChecksumSeed) != load_be64(reinterpret_cast<const uint8_t*>(bytes.data()) + covered.size())) {
    return false;  // torn by a crash in the middle of its write
  }
  *payload = bytes.substr(kHeaderBytes, length);
  *record_bytes = bytes.size();
  return true;
}

Result<std::vector<std::string>> Journal::replay(Position from) {
  std::vector<std::string> out;
  next_ = from;
  start_ = from.offset;
  used_ = 0;
  for (;;) {
    std::string payload;
    size_t record_bytes = 0;
    uint64_t at = next_.offset;
    auto found = read_record(at, next_.seq, &payload, &record_bytes);
    if (found.is_ok() && !found.value() && at != 0) {
      at = 0;  // a record that did not fit before the end of the file
      found = read_record(at, next_.seq, &payload, &record_bytes);
    }
    if (!found.is_ok()) return found.status();
    if (!found.value()) break;
    count(at, record_bytes);
    next_ = {next_.seq + 1, at + record_bytes};
    out.push_back(std::move(payload));
  }
  return out;
}

uint64_t Journal::place_for(size_t record_bytes) const {
  return next_.offset + record_bytes <= size_ ? next_.offset : 0;
}

bool Journal::fits(size_t payload_bytes) const {
  const size_t n = kHeaderBytes + payload_bytes + kTrailerBytes;
  if (n > size_) return false;
  if (used_ == 0) return true;
  const uint64_t at = place_for(n);
  // The records not checkpointed sit in [start_, next_.offset)...
  if (next_.offset > start_) return at != 0 || n <= start_;
  // ...or, wrapped, in [start_, end of file) and [0, next_.offset).
  return next_.offset + n <= start_;
}

Status Journal::append(std::string_view payload) {
  if (!fits(payload.size())) {
    return Status(Code::kStorageError, "journal " + path_ + " is full: checkpoint first");
  }
  const uint64_t seq = next_.seq++;
  std::string record;
  record.reserve(kHeaderBytes + payload.size() + kTrailerBytes);
  append_be(record, (uint64_t{kMagic} << 32) | payload.size(), 8);
  append_be(record, seq, 8);
  record.append(payload);
  append_be(record, hash64(record, kChecksumSeed), 8);
  const uint64_t at = place_for(record.size());
  if (!write_all(fd_, record, at)) return io_error("cannot write", path_);
  if (::fdatasync(fd_) != 0) return io_error("cannot sync", path_);
  count(at, record.size());
  next_.offset = at + record.size();
  return Status::ok();
}

void Journal::count(uint64_t at, size_t record_bytes) {
  if (used_ == 0) {
    start_ = at;
  } else if (at != next_.offset) {
    used_ += size_ - next_.offset;  // the gap left at the end of the file
  }
  used_ += record_bytes;
}

void Journal::checkpointed() {
  used_ = 0;
  start_ = next_.offset;
}

}  // namespace palisade
