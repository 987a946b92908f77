// LmdbStore's journal side: a batch's changes as one journal record, replaying
// the journal after the last checkpoint, and rebuilding the base transaction
// after a failed commit.
//
// A record is the batch's changes one after the other, each
//   flags(1: bit 0 key, bit 1 floor)
//   [key_len(2) key record_len(4) record]              (key: record empty = erased)
//   [lock_len(2) lock floor(8) sequencer_len(2) sequencer]  (floor)
// big-endian. The key's record is its stored LMDB value (record.h), with its
// own checksum; the journal record as a whole has the journal's checksum.
#include <lmdb.h>

#include "common/big_endian.h"
#include "replica/lmdb_store.h"
#include "replica/lmdb_util.h"
#include "replica/record.h"

namespace palisade::replica {
namespace {

constexpr uint8_t kKeyFlag = 1;
constexpr uint8_t kFloorFlag = 2;
constexpr std::string_view kJournalKey = "journal";

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

Status LmdbStore::replay_record(std::string_view payload) {
  RecordReader in(payload);
  std::vector<TreeDelta> deltas;  // the tree is built, or already up to date
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
    if (Status s = apply_in(txn_, c, record, &deltas); !s.is_ok()) return s;
  }
  return Status::ok();
}

Status LmdbStore::replay_journal(bool reread) {
  MDB_val k = val(kJournalKey), v;
  int rc = mdb_get(txn_, meta_, &k, &v);
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("read journal position", rc);
  auto from = rc == 0 ? Journal::decode_position(view(v)) : Journal::Position{};
  if (!from) return Status(Code::kCorrupt, "the journal position in the meta database is damaged");
  // Opening takes what the journal holds; a rebuild takes back exactly what
  // was appended, all of which must read back.
  auto records = reread ? journal_->reread(*from) : journal_->replay(*from);
  if (!records.is_ok()) return records.status();
  for (size_t i = 0; i < records.value().size(); ++i) {
    Status s = replay_record(records.value()[i]);
    if (!s.is_ok()) {
      return Status(s.code() == Code::kCorrupt ? Code::kCorrupt : Code::kStorageError,
                    "journal record " + std::to_string(from->seq + i) + ": " + s.message());
    }
  }
  unchecked_ = !records.value().empty();
  return Status::ok();
}

Status LmdbStore::write_journal_position() {
  const std::string position = Journal::encode_position(journal_->next());
  MDB_val k = val(kJournalKey), v = val(position);
  int rc = mdb_put(txn_, meta_, &k, &v, 0);
  return rc == 0 ? Status::ok() : lmdb_error("write journal position", rc);
}

Status LmdbStore::recover(Status cause) {
  drop_batch();
  if (txn_ != nullptr) mdb_txn_abort(txn_);
  txn_ = nullptr;
  unchecked_ = false;
  int rc = mdb_txn_begin(env_, nullptr, 0, &txn_);
  Status s = rc == 0 ? replay_journal(/*reread=*/true) : lmdb_error("begin transaction", rc);
  if (rc != 0) txn_ = nullptr;
  writable_ = txn_ != nullptr;
  if (!s.is_ok()) {
    broken_ = Status(Code::kStorageError, "the store cannot go on after a failed commit (" + cause.message() +
                                              ") and a failed replay of its journal (" + s.message() +
                                              "): restart palisade-replica");
  }
  return cause;
}

}  // namespace palisade::replica
