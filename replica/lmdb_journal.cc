// LmdbStore's journal records: a batch's changes as one record, and back
// (storage/journaled_lmdb.h replays them).
//
// A record is the batch's changes one after the other, each
//   flags(1: bit 0 key, bit 1 floor)
//   [key_len(2) key record_len(4) record]              (key: record empty = erased)
//   [lock_len(2) lock floor(8) sequencer_len(2) sequencer]  (floor)
// big-endian. The key's record is its stored LMDB value (record.h), with its
// own checksum; the journal record as a whole has the journal's checksum.
#include "base/big_endian.h"
#include "replica/lmdb_store.h"
#include "replica/record.h"

namespace palisade::replica {
namespace {

constexpr uint8_t kKeyFlag = 1;
constexpr uint8_t kFloorFlag = 2;

// Reads fields off a journal record; any read past its end fails it.
class RecordReader {
 public:
  explicit RecordReader(std::string_view bytes) : rest_(bytes) {}
  bool done() const { return rest_.empty(); }
  bool ok() const { return ok_; }
  uint64_t number(int bytes) {
    if (!take(static_cast<size_t>(bytes))) return 0;
    return read_be(taken_.data(), bytes);
  }
  std::string_view text(int length_bytes) {
    size_t n = number(length_bytes);
    return take(n) ? taken_ : std::string_view();
  }

 private:
  bool take(size_t n) {
    if (!ok_ || rest_.size() < n) {
      ok_ = false;
      return false;
    }
    taken_ = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }
  std::string_view rest_, taken_;
  bool ok_ = true;
};

}  // namespace

void LmdbStore::log_change(std::string& log, const Change& c, std::string_view record) {
  log.push_back(static_cast<char>((c.put != nullptr ? kKeyFlag : 0) | (c.floor != 0 ? kFloorFlag : 0)));
  if (c.put != nullptr) {
    append_be(log, c.key.size(), 2);
    log.append(c.key);
    append_be(log, record.size(), 4);
    log.append(record);
  }
  if (c.floor != 0) {
    append_be(log, c.lock.size(), 2);
    log.append(c.lock);
    append_be(log, c.floor, 8);
    append_be(log, c.floor_sequencer.size(), 2);
    log.append(c.floor_sequencer);
  }
}

Status LmdbStore::replay_record(MDB_txn* txn, std::string_view payload) {
  RecordReader in(payload);
  while (!in.done()) {
    const uint64_t flags = in.number(1);
    Change c;
    std::string_view record;
    Versions versions;
    if ((flags & ~uint64_t{kKeyFlag | kFloorFlag}) != 0 || flags == 0) {
      return Status(Code::kCorrupt, "unknown change flags " + std::to_string(flags));
    }
    if ((flags & kKeyFlag) != 0) {
      c.key = in.text(2);
      record = in.text(4);
      if (in.ok() && !record.empty()) {
        auto decoded = decode_record(c.key, record);
        if (!decoded.is_ok()) return decoded.status();
        versions = std::move(decoded.value());
      }
      c.put = &versions;
    }
    if ((flags & kFloorFlag) != 0) {
      c.lock = in.text(2);
      c.floor = in.number(8);
      c.floor_sequencer = in.text(2);
    }
    if (!in.ok()) return Status(Code::kCorrupt, "a change is cut short");
    // The tree is built after this replay, or (a rebuilt base) already has these changes.
    if (Status s = apply_in(txn, c, record); !s.is_ok()) return s;
  }
  return Status::ok();
}

}  // namespace palisade::replica
