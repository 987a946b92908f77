#include "storage/journaled_lmdb.h"

#include <lmdb.h>

#include <utility>

#include "storage/journal.h"

namespace palisade {
namespace {

constexpr std::string_view kJournalKey = "journal";

MDB_val journal_key() { return MDB_val{kJournalKey.size(), const_cast<char*>(kJournalKey.data())}; }

}  // namespace

JournaledLmdb::JournaledLmdb(std::string daemon, LmdbError lmdb_error, ApplyRecord apply)
    : daemon_(std::move(daemon)), lmdb_error_(lmdb_error), apply_(std::move(apply)) {}

JournaledLmdb::~JournaledLmdb() = default;

Status JournaledLmdb::start(MDB_env* env, const std::string& dir, size_t checkpoint_bytes) {
  env_ = env;
  dir_ = dir;
  checkpoint_bytes_ = checkpoint_at_bytes_ = checkpoint_bytes;
  return begin_write();
}

Status JournaledLmdb::open_journal(unsigned meta, size_t journal_bytes, bool create) {
  meta_ = meta;
  auto journal = Journal::open(dir_ + "/journal", journal_bytes, create);
  if (!journal.is_ok()) return journal.status();
  journal_ = std::move(journal.value());
  return replay(/*reread=*/false);
}

Status JournaledLmdb::finish_open() {
  // Committed even when nothing was written: aborting the transaction that
  // opened the database handles would close them again.
  Status s = checkpoint();
  opened_ = s.is_ok();
  return s;
}

Status JournaledLmdb::begin_read() {
  if (!broken_.is_ok()) return broken_;
  if (base_ != nullptr) return Status::ok();
  // Reads between checkpoints run in a read-only transaction (no dirty pages
  // kept); the first change swaps it for a write transaction. The store is
  // the only writer, so the swap sees the same data.
  int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &base_);
  return rc == 0 ? Status::ok() : lmdb_error_("begin read transaction in " + dir_, rc);
}

Status JournaledLmdb::begin_write() {
  if (!broken_.is_ok()) return broken_;
  if (writable_) return Status::ok();
  end_base();  // a read-only one
  int rc = mdb_txn_begin(env_, nullptr, 0, &base_);
  writable_ = rc == 0;
  return rc == 0 ? Status::ok() : lmdb_error_("begin write transaction in " + dir_, rc);
}

Status JournaledLmdb::commit(std::string_view record) {
  if (!broken_.is_ok()) return broken_;
  // Too large for what is free of the journal: a checkpoint carries it (and a
  // failed one rebuilds the base without it).
  if (!journal_->fits(record.size())) return checkpoint();
  if (Status s = journal_->append(record); !s.is_ok()) {
    (void)recover(s);  // returns s: the append's failure is the batch's
    // The failed record may be on disk: a checkpoint moves the journal
    // position past it, so that no replay applies it. A failed one rebuilt
    // the base (or broke the store) itself, and the journal refuses appends
    // until a checkpoint succeeds, so the next commit checkpoints; until then
    // a restart may replay the record (docs/storage.md, "The journal").
    if (broken_.is_ok()) (void)checkpoint();
    return s;
  }
  unchecked_ = true;
  // A failed checkpoint fails no commit: the journal holds them all. It is
  // tried again checkpoint_bytes of journal later (a full map, say, stays
  // full until the operator raises it and restarts).
  if (journal_->unchecked_bytes() >= checkpoint_at_bytes_ && !checkpoint().is_ok()) {
    checkpoint_at_bytes_ = journal_->unchecked_bytes() + checkpoint_bytes_;
  }
  return broken_;
}

Status JournaledLmdb::checkpoint() {
  if (Status s = begin_write(); !s.is_ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  const std::string position = Journal::encode_position(journal_->next());
  MDB_val k = journal_key(), v{position.size(), const_cast<char*>(position.data())};
  int rc = mdb_put(base_, meta_, &k, &v, 0);
  if (rc != 0) return recover(lmdb_error_("write the journal position", rc));
  // Writes the dirty pages and syncs the data file before it returns.
  rc = mdb_txn_commit(base_);
  base_ = nullptr;
  writable_ = false;
  if (rc != 0) return recover(lmdb_error_("commit in " + dir_, rc));
  journal_->checkpointed();
  unchecked_ = false;
  checkpoint_at_bytes_ = checkpoint_bytes_;
  if (observer_) observer_(std::chrono::steady_clock::now() - start);
  return Status::ok();
}

void JournaledLmdb::release() {
  // A base holding journaled changes stays open until the checkpoint.
  if (!unchecked_) end_base();
}

void JournaledLmdb::close() {
  observer_ = nullptr;
  // A store that did not open never writes what it half read.
  // A failed checkpoint loses nothing: the journal holds what it would have
  // carried, replayed at the next open.
  if (opened_ && unchecked_ && broken_.is_ok()) (void)checkpoint();
  end_base();
}

void JournaledLmdb::end_base() {
  if (base_ != nullptr) mdb_txn_abort(base_);
  base_ = nullptr;
  writable_ = false;
}

Status JournaledLmdb::replay(bool reread) {
  MDB_val k = journal_key(), v;
  int rc = mdb_get(base_, meta_, &k, &v);
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error_("read the journal position in " + dir_, rc);
  auto from = rc == 0 ? Journal::decode_position({static_cast<const char*>(v.mv_data), v.mv_size})
                      : Journal::Position{};
  if (!from) return Status(Code::kCorrupt, "the journal position in " + dir_ + " is corrupt");
  // Opening takes what the journal holds; a rebuild takes back exactly what
  // was appended, all of which must read back.
  auto records = reread ? journal_->reread(*from) : journal_->replay(*from);
  if (!records.is_ok()) return records.status();
  for (size_t i = 0; i < records.value().size(); ++i) {
    Status s = apply_(base_, records.value()[i]);
    if (!s.is_ok()) {
      return Status(s.code() == Code::kCorrupt ? Code::kCorrupt : Code::kStorageError,
                    "journal record " + std::to_string(from->seq + i) + " in " + dir_ + ": " + s.message());
    }
  }
  unchecked_ = !records.value().empty();
  return Status::ok();
}

Status JournaledLmdb::write_whole(const std::function<Status(MDB_txn*)>& write, std::string_view keep) {
  if (Status s = begin_write(); !s.is_ok()) return s;
  if (!nested_) {
    Status s = write(base_);
    if (!s.is_ok()) {
      nested_ = true;
      (void)drop_batch(keep);  // the write's error is the reply; a failed rebuild sets broken_
    }
    return s;
  }
  MDB_txn* child = nullptr;
  int rc = mdb_txn_begin(env_, base_, 0, &child);
  if (rc != 0) return lmdb_error_("begin a nested transaction in " + dir_, rc);
  if (Status s = write(child); !s.is_ok()) {
    mdb_txn_abort(child);
    return s;
  }
  if ((rc = mdb_txn_commit(child)) != 0) {
    Status s = lmdb_error_("commit a nested transaction in " + dir_, rc);
    (void)drop_batch(keep);  // the base may be unusable too; a failed rebuild sets broken_
    return s;
  }
  return Status::ok();
}

Status JournaledLmdb::drop_batch(std::string_view keep) {
  if (!broken_.is_ok()) return broken_;
  if (Status s = rebuild(keep); !s.is_ok()) {
    broken_ = Status(Code::kStorageError, "the data in " + dir_ + " cannot be used after a failed write (" +
                                              s.message() + "): restart " + daemon_);
  }
  return broken_;
}

Status JournaledLmdb::rebuild(std::string_view keep) {
  ++rebuilds_;
  end_base();
  unchecked_ = false;
  Status s = begin_write();
  if (s.is_ok()) s = replay(/*reread=*/true);
  if (s.is_ok() && !keep.empty()) s = apply_(base_, keep);
  return s;
}

Status JournaledLmdb::recover(Status cause) {
  Status s = rebuild({});
  if (!s.is_ok()) {
    broken_ = Status(Code::kStorageError, "the data in " + dir_ + " cannot be used after a failed commit (" +
                                              cause.message() + ") and a failed replay of its journal (" +
                                              s.message() + "): restart " + daemon_);
  }
  return cause;
}

}  // namespace palisade
