// A write-ahead journal: records synced to one preallocated file that is reused
// as a ring. A store appends a batch's changes here (one write and one
// fdatasync: a single device flush) and acknowledges the batch; now and then it
// checkpoints all of them into its main storage (one synced LMDB commit, which
// costs two flushes: data pages, then the meta page) and records there the
// Position the journal had reached, so that space can be reused.
//
// Record: magic(4) payload_length(4) seq(8) payload checksum(8), big-endian;
// the checksum is XXH3-64 of everything before it. A record never wraps: one
// that does not fit before the end of the file starts at offset 0. Sequence
// numbers are never reused (a failed append uses one up too), so replay, which
// looks for the next sequence number where the last record ended and then at
// offset 0, stops at the first record that is missing, torn or from an older lap.
//
// The file is zero-filled when it is created: overwriting blocks that exist
// changes no file-system metadata, so fdatasync flushes the data alone.
// One thread uses a journal at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "palisade/status.h"

namespace palisade {

class Journal {
 public:
  // Where the next record goes.
  struct Position {
    uint64_t seq = 1;
    uint64_t offset = 0;
    bool operator==(const Position&) const = default;
  };
  static constexpr size_t kHeaderBytes = 16;
  static constexpr size_t kTrailerBytes = 8;
  static constexpr size_t kMinFileBytes = 4096;

  // Opens the journal at `path`. A missing file is created with `size_bytes`
  // when `create`, else it is a StorageError; an existing file keeps its size.
  static Result<std::unique_ptr<Journal>> open(const std::string& path, size_t size_bytes, bool create);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // The payloads of the records from `from` on, in order, up to the first that
  // is missing or torn. Appends then continue after the last one returned, and
  // all of them count as not yet checkpointed. StorageError when the file
  // cannot be read.
  Result<std::vector<std::string>> replay(Position from);

  // Whether a payload of `payload_bytes` can be appended without overwriting a
  // record that is not checkpointed.
  bool fits(size_t payload_bytes) const;
  // Writes one record and syncs it before it returns ok. StorageError when it
  // does not fit or the write or the sync fails (the record may or may not be
  // on disk then; its sequence number is not used again).
  Status append(std::string_view payload);
  // Every record appended so far is in the main storage: its space is free.
  void checkpointed();

  Position next() const { return next_; }
  // Bytes taken by records not yet checkpointed (with any end-of-file gap).
  size_t unchecked_bytes() const { return used_; }
  size_t size_bytes() const { return size_; }

 private:
  Journal(std::string path, int fd, size_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  // Where a record of `record_bytes` goes: the end of the last one, or offset 0.
  uint64_t place_for(size_t record_bytes) const;
  // The payload of the record with sequence number `seq` at `offset`, if one is there.
  // Counts a record of `record_bytes` written at `at` as not checkpointed.
  void count(uint64_t at, size_t record_bytes);
  Result<bool> read_record(uint64_t offset, uint64_t seq, std::string* payload, size_t* record_bytes);

  std::string path_;
  int fd_;
  size_t size_;
  Position next_;
  uint64_t start_ = 0;  // offset of the oldest record not checkpointed
  size_t used_ = 0;
};

}  // namespace palisade
