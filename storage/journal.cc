#include "storage/journal.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/big_endian.h"
#include "storage/durable_file.h"
#include "wire/hash.h"

namespace palisade {
namespace {

constexpr uint32_t kMagic = 0x504a524e;  // "PJRN"
constexpr std::string_view kFileMagic = "PJRNFILE";
// The file header: magic(8) key(16) file size(8) checksum(8), the checksum
// XXH3-64 of what precedes it.
constexpr size_t kKeyAt = 8, kSizeAt = 24, kHeaderSumAt = 32, kHeaderUsed = 40;
// Above any sequence number a journal reaches (2^63 appends take 290,000
// years at a million a second), so that none wraps around to 0.
constexpr uint64_t kMaxSeq = uint64_t{1} << 63;
static_assert(crypto_shorthash_KEYBYTES == 16 && crypto_shorthash_BYTES == 8);

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

// Creates `path`, full of zeros but for its header, through a temporary file,
// so that a crash never leaves a journal of the wrong size or without a key.
Status create_file(const std::string& path, size_t size) {
  std::string header(kFileMagic);
  header.resize(kKeyAt + crypto_shorthash_KEYBYTES);
  if (::getrandom(header.data() + kKeyAt, crypto_shorthash_KEYBYTES, 0) !=
      static_cast<ssize_t>(crypto_shorthash_KEYBYTES)) {
    return io_error("cannot make a key for", path);
  }
  append_be(header, size, 8);
  append_be(header, hash64(header), 8);
  header.resize(Journal::kFileHeaderBytes, '\0');
  const std::string tmp = path + ".new";
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create", tmp);
  const std::string zeros(size_t{1} << 20, '\0');
  bool ok = write_all(fd, header, 0);
  for (size_t done = header.size(); ok && done < size; done += zeros.size()) {
    ok = write_all(fd, std::string_view(zeros).substr(0, std::min(zeros.size(), size - done)), done);
  }
  ok = ok && ::fdatasync(fd) == 0;
  Status s = ok ? Status::ok() : io_error("cannot fill", tmp);
  ::close(fd);
  if (!s.is_ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  return rename_durably(tmp, path);
}

}  // namespace

std::string Journal::encode_position(Position p) {
  std::string out;
  append_be(out, p.seq, 8);
  append_be(out, p.offset, 8);
  return out;
}

std::optional<Journal::Position> Journal::decode_position(std::string_view bytes) {
  if (bytes.size() != 16) return std::nullopt;
  return Position{read_be(bytes.data(), 8), read_be(bytes.data() + 8, 8)};
}

Result<std::unique_ptr<Journal>> Journal::open(const std::string& path, size_t size_bytes, bool create) {
  if (create) {
    if (size_bytes < kMinFileBytes) {
      return Status(Code::kBadRequest, "a journal needs at least " + std::to_string(kMinFileBytes) + " bytes");
    }
    if (Status s = create_file(path, size_bytes); !s.is_ok()) return s;
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    return Status(Code::kStorageError, "journal " + path +
                                           " is missing: writes acknowledged since the last checkpoint may be "
                                           "lost; restore the file, or empty the data directory and let "
                                           "anti-entropy refill it");
  }
  if (fd < 0) return io_error("cannot open", path);
  struct stat st;
  char header[kHeaderUsed];
  Status s;
  if (::fstat(fd, &st) != 0) {
    s = io_error("cannot stat", path);
  } else if (static_cast<size_t>(st.st_size) < kMinFileBytes || !read_all(fd, header, sizeof header, 0) ||
             std::string_view(header, kFileMagic.size()) != kFileMagic ||
             read_be(header + kHeaderSumAt, 8) != hash64(std::string_view(header, kHeaderSumAt))) {
    s = Status(Code::kStorageError, "journal " + path + " is damaged: its header is not a journal's");
  } else if (read_be(header + kSizeAt, 8) != static_cast<uint64_t>(st.st_size)) {
    s = Status(Code::kStorageError, "journal " + path + " is damaged: it has " + std::to_string(st.st_size) +
                                        " bytes, it was made with " + std::to_string(read_be(header + kSizeAt, 8)));
  }
  if (!s.is_ok()) {
    ::close(fd);
    return s;
  }
  Key key;
  std::memcpy(key.data(), header + kKeyAt, key.size());
  return std::unique_ptr<Journal>(new Journal(path, fd, static_cast<size_t>(st.st_size), key));
}

Journal::~Journal() { ::close(fd_); }

uint64_t Journal::checksum(std::string_view bytes) const {
  unsigned char out[crypto_shorthash_BYTES];
  crypto_shorthash(out, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), key_.data());
  return load_be64(out);
}

Result<bool> Journal::read_record(uint64_t offset, uint64_t seq, std::string* payload, size_t* record_bytes) const {
  if (offset + kHeaderBytes + kTrailerBytes > size_) return false;
  uint8_t header[kHeaderBytes];
  if (!read_all(fd_, reinterpret_cast<char*>(header), kHeaderBytes, offset)) return io_error("cannot read", path_);
  const uint64_t magic_and_length = load_be64(header);
  const size_t length = magic_and_length & 0xffffffff;
  if ((magic_and_length >> 32) != kMagic || load_be64(header + 8) != seq) return false;
  *record_bytes = kHeaderBytes + length + kTrailerBytes;
  if (offset + *record_bytes > size_) return false;
  std::string bytes(*record_bytes, '\0');
  if (!read_all(fd_, bytes.data(), bytes.size(), offset)) return io_error("cannot read", path_);
  std::string_view covered(bytes.data(), kHeaderBytes + length);
  if (checksum(covered) != load_be64(reinterpret_cast<const uint8_t*>(bytes.data()) + covered.size())) {
    return false;  // torn by a crash (or damaged: replay's check_nothing_after tells)
  }
  *payload = bytes.substr(kHeaderBytes, length);
  return true;
}

Status Journal::read_records(Position from, std::optional<Position> until, Scan* scan) const {
  // A store only ever keeps a position in the ring, numbered below kMaxSeq.
  // Any other, read from a damaged store, would have appends overwrite the
  // file's header or go past its end, or number records that replay refuses
  // once the numbers wrap around.
  if (from.offset < kFileHeaderBytes || from.offset > size_ || from.seq >= kMaxSeq) {
    return Status(Code::kCorrupt, "journal " + path_ + ": position " + std::to_string(from.seq) + "@" +
                                      std::to_string(from.offset) + " is not one of its ring (bytes " +
                                      std::to_string(kFileHeaderBytes) + " to " + std::to_string(size_) + ")");
  }
  Position at = from;
  while (!(until && at == *until)) {
    std::string payload;
    size_t bytes = 0;
    uint64_t place = at.offset;
    auto found = read_record(place, at.seq, &payload, &bytes);
    if (found.is_ok() && !found.value() && place != kFileHeaderBytes) {
      place = kFileHeaderBytes;  // a record that did not fit before the end of the file
      found = read_record(place, at.seq, &payload, &bytes);
    }
    if (!found.is_ok()) return found.status();
    if (!found.value()) break;
    if (scan->payloads.empty()) {
      scan->first = place;
    } else if (place != at.offset) {
      scan->used += size_ - at.offset;  // the gap left at the end of the file
    }
    scan->used += bytes;
    scan->payloads.push_back(std::move(payload));
    at = {at.seq + 1, place + bytes};
  }
  if (until && !(at == *until)) {
    return Status(Code::kStorageError, "journal " + path_ + ": record " + std::to_string(at.seq) +
                                           ", appended and synced, does not read back");
  }
  scan->end = at;
  return Status::ok();
}

Status Journal::check_nothing_after(uint64_t seq) const {
  // A crash cuts short only the last record written: a record with a higher
  // number, intact anywhere in the ring, means record `seq` was damaged after
  // it was synced, and what follows it must not be dropped in silence.
  std::string ring(size_ - kFileHeaderBytes, '\0');
  if (!read_all(fd_, ring.data(), ring.size(), kFileHeaderBytes)) return io_error("cannot read", path_);
  char magic[4];
  for (int i = 0; i < 4; ++i) magic[i] = static_cast<char>(kMagic >> (24 - 8 * i));
  const std::string_view view(ring);
  for (size_t at = view.find(std::string_view(magic, 4)); at != std::string_view::npos;
       at = view.find(std::string_view(magic, 4), at + 1)) {
    if (at + kHeaderBytes + kTrailerBytes > view.size()) break;
    const uint64_t found = read_be(view.data() + at + 8, 8);
    const size_t length = read_be(view.data() + at + 4, 4);
    if (found <= seq || at + kHeaderBytes + length + kTrailerBytes > view.size()) continue;
    std::string_view covered = view.substr(at, kHeaderBytes + length);
    if (checksum(covered) == read_be(view.data() + at + covered.size(), 8)) {
      return Status(Code::kCorrupt, "journal " + path_ + ": record " + std::to_string(seq) +
                                        " is damaged or missing, yet record " + std::to_string(found) +
                                        " after it is intact");
    }
  }
  return Status::ok();
}

Result<std::vector<std::string>> Journal::replay(Position from) {
  Scan scan;
  if (Status s = read_records(from, std::nullopt, &scan); !s.is_ok()) return s;
  if (Status s = check_nothing_after(scan.end.seq); !s.is_ok()) return s;
  // A record torn by a crash may sit where the scan ended. Its number is used
  // again: the next record overwrites it there, or goes to the ring's start,
  // where a scan looks when the record it finds is damaged.
  next_ = scan.end;
  written_ = next_;
  failed_ = false;
  used_ = scan.used;
  start_ = scan.payloads.empty() ? scan.end.offset : scan.first;
  return std::move(scan.payloads);
}

Result<std::vector<std::string>> Journal::reread(Position from) const {
  Scan scan;
  if (Status s = read_records(from, written_, &scan); !s.is_ok()) return s;
  return std::move(scan.payloads);
}

uint64_t Journal::place_for(size_t record_bytes) const {
  return next_.offset + record_bytes <= size_ ? next_.offset : kFileHeaderBytes;
}

bool Journal::fits(size_t payload_bytes) const {
  const size_t n = kHeaderBytes + payload_bytes + kTrailerBytes;
  if (failed_ || n > size_ - kFileHeaderBytes) return false;
  if (used_ == 0) return true;
  const uint64_t at = place_for(n);
  // The records not checkpointed sit in [start_, next_.offset)...
  if (next_.offset > start_) return at != kFileHeaderBytes || kFileHeaderBytes + n <= start_;
  // ...or, wrapped, in [start_, end of file) and [ring start, next_.offset).
  return next_.offset + n <= start_;
}

Status Journal::append(std::string_view payload) {
  if (!fits(payload.size())) {
    return Status(Code::kStorageError, failed_ ? "journal " + path_ +
                                                     " refuses appends after a failed one until "
                                                     "the next checkpoint"
                                               : "journal " + path_ + " is full: checkpoint first");
  }
  const uint64_t seq = next_.seq++;
  std::string record;
  record.reserve(kHeaderBytes + payload.size() + kTrailerBytes);
  append_be(record, (uint64_t{kMagic} << 32) | payload.size(), 8);
  append_be(record, seq, 8);
  record.append(payload);
  append_be(record, checksum(record), 8);
  const uint64_t at = place_for(record.size());
  if (!write_all(fd_, record, at) || ::fdatasync(fd_) != 0) {
    failed_ = true;
    return io_error("cannot write and sync", path_);
  }
  count(at, record.size());
  next_.offset = at + record.size();
  written_ = next_;
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
  written_ = next_;
  failed_ = false;
}

}  // namespace palisade
