// An LMDB environment's base transaction and the journal (storage/journal.h)
// that makes what it holds durable: what LmdbStore and LmdbPaxosStorage share
// (docs/storage.md, "The journal" and "Failures").
//
// A store writes a batch in the base itself (write_whole); commit() appends
// the batch's journal record, synced, and the base stays open. (Not in a child
// transaction: a child copies every page it touches that its parent holds
// dirty, and merges them back, which at 64 clients cost about a quarter of a
// replica's CPU. The rare batch that must be undone, after a failed write or a
// failed append, is dropped by rebuilding the base from LMDB and the journal
// instead; after a failed write, later writes nest.) Every checkpoint_bytes of
// journal, or with a record that does not fit in it, the base commits (synced)
// with the journal position it covers, under "journal" in the store's "meta"
// database: a checkpoint. Opening replays the journal from that position
// through the store's ApplyRecord. One thread at a time; only the base and a
// write's nested transaction are ever open (MDB_NOLOCK is safe).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "palisade/status.h"

typedef struct MDB_env MDB_env;
typedef struct MDB_txn MDB_txn;

namespace palisade {

class Journal;

class JournaledLmdb {
 public:
  // Applies the changes of one journal record in `txn`.
  using ApplyRecord = std::function<Status(MDB_txn* txn, std::string_view record)>;
  // How the store words a failed LMDB call.
  using LmdbError = Status (*)(const std::string& what, int rc);
  // Told how long each checkpoint that succeeded took (the synced commit of
  // the base): the daemons' metrics, which storage/ does not depend on.
  using CheckpointObserver = std::function<void(std::chrono::steady_clock::duration)>;

  // `daemon` is what the message of a broken store says to restart.
  JournaledLmdb(std::string daemon, LmdbError lmdb_error, ApplyRecord apply);
  ~JournaledLmdb();
  JournaledLmdb(const JournaledLmdb&) = delete;
  JournaledLmdb& operator=(const JournaledLmdb&) = delete;

  // Opening: start() begins the base, a write transaction of `env` (in
  // directory `dir`) for the store to open its databases in; open_journal()
  // opens DIR/journal (Journal::open) and replays it from the position in
  // database `meta`; finish_open() checkpoints, and from then on close() does.
  Status start(MDB_env* env, const std::string& dir, size_t checkpoint_bytes);
  Status open_journal(unsigned meta, size_t journal_bytes, bool create);
  Status finish_open();

  // The base: a write transaction, a read-only one, or none.
  MDB_txn* base() const { return base_; }
  // Why every call must fail, after a failed rebuild of the base.
  const Status& broken() const { return broken_; }
  // How often the base was rebuilt after a failure since opening.
  uint64_t rebuilds() const { return rebuilds_; }
  // From now on, each checkpoint that succeeds is reported to `observer`, on
  // the thread that makes it; close() forgets it first (its owner may be
  // gone by then), so a close's checkpoint is not reported.
  void on_checkpoint(CheckpointObserver observer) { observer_ = std::move(observer); }
  // The base holds journaled changes that LMDB does not.
  bool unchecked() const { return unchecked_; }

  // Opens a read-only base when none is open.
  Status begin_read();
  // Makes the batch's changes in the base durable: `record` (encoding them)
  // appended to the journal and synced; or, when `record` does not fit, in a
  // checkpoint. When that fails, the base is rebuilt without the batch.
  Status commit(std::string_view record);
  // Runs `write` (changes of the batch) on the base, all or nothing: on error
  // none of its changes stay, and the base holds the batch's earlier changes,
  // of which `keep` is the record. A failed LMDB write (a full map) leaves its
  // transaction unusable, so at first `write` runs on the base itself and an
  // error rebuilds the base (drop_batch). From then on, since more errors are
  // likely (a full map stays full until a restart) and each rebuild reads back
  // the journal, it runs in a nested transaction, which an error aborts alone.
  Status write_whole(const std::function<Status(MDB_txn*)>& write, std::string_view keep);
  // Drops the batch's changes from the base but `keep` (a record of some of
  // them, applied again; may be empty): the base is rebuilt from LMDB and the
  // journal. Should the rebuild fail, broken().
  Status drop_batch(std::string_view keep);
  // Commits the base with the journal position, synced. Between batches only:
  // it would make a batch's changes durable before their record is. After a
  // failed commit the base is rebuilt from LMDB and the journal; should that
  // fail, broken().
  Status checkpoint();
  // Ends a base that holds nothing to checkpoint. Between batches only: a
  // batch's changes kept by drop_batch() are not counted as unchecked.
  void release();
  // A clean close: checkpoints what the base holds (unless opening did not
  // finish or the store broke), then ends it. Before the environment closes.
  void close();

 private:
  Status begin_write();
  void end_base();
  // Applies the records from the position in meta on: all the journal holds
  // (opening), or exactly what was appended since the checkpoint (`reread`).
  Status replay(bool reread);
  // Begins the base again from LMDB and what the journal holds since the
  // last checkpoint, then applies `keep`.
  Status rebuild(std::string_view keep);
  // After a failed checkpoint or append: rebuilds the base without what the
  // journal does not hold (or breaks the store); returns `cause`.
  Status recover(Status cause);

  const std::string daemon_;
  const LmdbError lmdb_error_;
  const ApplyRecord apply_;
  MDB_env* env_ = nullptr;
  std::string dir_;
  size_t checkpoint_bytes_ = 0;
  unsigned meta_ = 0;
  std::unique_ptr<Journal> journal_;
  MDB_txn* base_ = nullptr;
  bool writable_ = false;           // base_ is a write transaction
  bool unchecked_ = false;
  size_t checkpoint_at_bytes_ = 0;  // journal bytes that make the next commit checkpoint
  bool opened_ = false;             // finish_open() succeeded: close() may checkpoint
  uint64_t rebuilds_ = 0;
  bool nested_ = false;  // a write failed: write_whole() nests from now on
  Status broken_;
  CheckpointObserver observer_;
};

}  // namespace palisade
