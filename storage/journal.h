// A write-ahead journal: records synced to one preallocated file that is reused
// as a ring. A store appends a batch's changes here (one write and one
// fdatasync: a single device flush) and acknowledges the batch; now and then it
// checkpoints all of them into its main storage (one synced LMDB commit, which
// costs two flushes: data pages, then the meta page) and records there the
// Position the journal had reached, so that space can be reused.
//
// File: a 4096-byte header (magic "PJRNFILE", a random 16-byte key made when
// the file is created, the file's size, a checksum of those), then the ring. Record: magic(4) payload_length(4)
// seq(8) payload checksum(8), big-endian; the checksum is SipHash-2-4 under the
// file's key of everything before it, so a record cannot be forged by someone
// who controls payload bytes (a client's value) without the key, and records of
// an older file never verify in a new one. A record never wraps: one that does
// not fit before the end of the file starts at the ring's start. Replay looks
// for the next sequence number where the last record ended, then at the ring's
// start, and stops at the first record that is missing, torn or from an older
// lap. A failed append's number is never used again (the record may be on
// disk); a torn record's is, by the record that replaces it.
//
// The file is zero-filled when it is created: overwriting blocks that exist
// changes no file-system metadata, so fdatasync flushes the data alone.
// One thread uses a journal at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "palisade/status.h"

namespace palisade {

class Journal {
 public:
  static constexpr size_t kFileHeaderBytes = 4096;
  static constexpr size_t kHeaderBytes = 16;
  static constexpr size_t kTrailerBytes = 8;
  static constexpr size_t kMinFileBytes = 2 * kFileHeaderBytes;

  // Where the next record goes.
  struct Position {
    uint64_t seq = 1;
    uint64_t offset = kFileHeaderBytes;
    bool operator==(const Position&) const = default;
  };
  // A position as a store keeps it with a checkpoint: seq(8) offset(8), big-endian.
  static std::string encode_position(Position p);
  // nullopt when `bytes` is not a position.
  static std::optional<Position> decode_position(std::string_view bytes);

  // Opens the journal at `path`. With `create`, a new file of `size_bytes`
  // replaces whatever is there (with a new key, so that no record of an older
  // file is ever replayed); else a missing or damaged file is a StorageError.
  static Result<std::unique_ptr<Journal>> open(const std::string& path, size_t size_bytes, bool create);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // The payloads of the records from `from` on, in order, up to the first that
  // is missing or torn. Appends then continue after the last one returned, and
  // all of them count as not yet checkpointed. Corrupt when a record numbered
  // higher than that first one is intact somewhere in the ring (damage, not a
  // write cut short by a crash), or when `from` is no position of the ring
  // (in the file header, past the end, or numbered 2^63 or more);
  // StorageError when the file cannot be read.
  Result<std::vector<std::string>> replay(Position from);
  // The payloads of the records appended successfully since `from` (a
  // checkpoint's position), read back from the file; StorageError when one
  // does not read back, Corrupt when `from` is no position of the ring (as for
  // replay). Changes nothing.
  Result<std::vector<std::string>> reread(Position from) const;

  // Whether a payload of `payload_bytes` can be appended without overwriting a
  // record that is not checkpointed. False after a failed append until the
  // next checkpoint.
  bool fits(size_t payload_bytes) const;
  // Writes one record and syncs it before it returns ok. StorageError when it
  // does not fit or the write or the sync fails: the record may or may not be
  // on disk then, so its sequence number is not used again and no record is
  // appended until a checkpoint has moved past it.
  Status append(std::string_view payload);
  // Every record appended so far is in the main storage: its space is free.
  void checkpointed();

  Position next() const { return next_; }
  // Bytes taken by records not yet checkpointed (with any end-of-file gap).
  size_t unchecked_bytes() const { return used_; }
  size_t size_bytes() const { return size_; }

 private:
  using Key = std::array<unsigned char, 16>;
  Journal(std::string path, int fd, size_t size, Key key) : path_(std::move(path)), fd_(fd), size_(size), key_(key) {}
  // Where a record of `record_bytes` goes: the end of the last one, or the ring's start.
  uint64_t place_for(size_t record_bytes) const;
  // Counts a record of `record_bytes` written at `at` as not checkpointed.
  void count(uint64_t at, size_t record_bytes);
  uint64_t checksum(std::string_view bytes) const;
  // Whether the record with sequence number `seq` is at `offset`, intact.
  Result<bool> read_record(uint64_t offset, uint64_t seq, std::string* payload, size_t* record_bytes) const;
  struct Scan {
    std::vector<std::string> payloads;
    Position end;        // after the last record read
    uint64_t first = 0;  // where the first record read is
    size_t used = 0;     // bytes the records take, with any end-of-file gap
  };
  // Reads the records from `from` on, up to the first missing or torn one, or
  // up to `until` when given (then every record before it must read back).
  Status read_records(Position from, std::optional<Position> until, Scan* scan) const;
  // Corrupt when a record numbered above `seq` is intact anywhere in the ring.
  Status check_nothing_after(uint64_t seq) const;

  std::string path_;
  int fd_;
  size_t size_;
  Key key_;
  Position next_;
  Position written_;                   // after the last record appended successfully
  bool failed_ = false;                // an append failed since the last checkpoint
  uint64_t start_ = kFileHeaderBytes;  // offset of the oldest record not checkpointed
  size_t used_ = 0;
};

}  // namespace palisade
