// ReplicaStore on LMDB: the daemon's durable state. Databases (docs/storage.md):
//   versions: key -> record (record.h)
//   floors:   lock name -> fence floor record (record.h)
//   meta:     "format" -> storage format version; "journal" -> the journal
//             position the last checkpoint reached; "replica_id" -> this
//             replica's id in its receipts (8 random bytes, made once)
// The Merkle tree (merkle.h), with every entry's digest, lives in memory: built
// from every record when the store opens, updated with every change and undone
// with a batch that fails or aborts.
//
// Durability (docs/storage.md, "The journal"; storage/journaled_lmdb.h): commit()
// appends the batch's changes to the journal in DIR/journal and syncs it, one
// device flush, then keeps them in a write transaction that stays open. Every
// checkpoint_bytes of journal, or with a batch that does not fit in it, that
// transaction commits, synced, with the journal position it covers: a
// checkpoint. Opening the store replays the journal from that position.
// Never opened with MDB_NOSYNC or MDB_WRITEMAP. MDB_NOLOCK: the daemon's
// DirLock keeps other processes out, and this object never has two
// transactions open but a write transaction and a nested one of it, so no LMDB
// lock ties a transaction to the thread that began it. One thread at a time.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "wire/envelope.h"
#include "storage/journaled_lmdb.h"
#include "replica/merkle.h"
#include "replica/store.h"

typedef struct MDB_env MDB_env;
typedef struct MDB_txn MDB_txn;

namespace palisade::replica {

class LmdbStore final : public ReplicaStore {
 public:
  // The longest key LMDB stores (its default MDB_MAXKEYSIZE); longer keys, and
  // the empty key, are never found and cannot be written (TooLarge, BadRequest).
  static constexpr size_t kMaxKeyBytes = 511;
  static_assert(wire::Limits{}.max_key_bytes <= kMaxKeyBytes, "default key limit beyond LMDB's");

  struct Options {
    size_t map_size_bytes = size_t{8} << 30;      // the most the data can grow to
    size_t journal_bytes = size_t{8} << 20;       // the journal file's size when it is created
    size_t checkpoint_bytes = size_t{2} << 20;  // journal bytes that make a commit checkpoint
  };

  // Opens or creates the store in directory `dir` (which must exist), replays
  // its journal and checkpoints.
  static Result<std::unique_ptr<LmdbStore>> open(const std::string& dir, Options options);
  // Checkpoints what the journal holds (a clean close), unless the store broke.
  ~LmdbStore() override;

  Result<Versions> get(std::string_view key) override;
  Result<std::vector<std::string>> keys_in(std::string_view prefix, std::string_view after, size_t max) override;
  Result<uint64_t> fence_floor(std::string_view lock) override;
  Status apply(const Change& change) override;
  Status commit() override;
  void abort() override;
  Result<wire::TreeNode> tree_node(uint32_t level, uint64_t index) override;
  Status list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) override;
  Result<wire::ReplicaStats> stats(size_t max_floors) override;
  // In DIR/config-certificate, replaced whole (storage/durable_file.h).
  Result<std::string> config_certificate() override;
  Status save_config_certificate(std::string_view text) override;

  // Commits what the journal holds into LMDB (synced) so that its space is
  // reused. Between batches only: BadRequest while a batch holds changes.
  Status checkpoint();
  // Number of keys stored (committed state plus the open batch).
  Result<uint64_t> key_count();
  // What opening found: key records and floors that fail their checksum.
  uint64_t damaged_at_open() const { return damaged_at_open_; }
  // This replica's id in its receipts (wire::Receipt): random, never 0, kept
  // in the directory.
  uint64_t replica_id() const { return replica_id_; }
  // How often the open transaction was rebuilt after a failure.
  uint64_t rebuilds() const { return journaled_.rebuilds(); }
  // Reports how long each checkpoint from now on takes (JournaledLmdb::on_checkpoint).
  void on_checkpoint(JournaledLmdb::CheckpointObserver observer) { journaled_.on_checkpoint(std::move(observer)); }

 private:
  Status load_replica_id();
  LmdbStore();
  Status init(const std::string& dir, Options options);
  // The transaction that reads and writes see, the batch's changes included.
  MDB_txn* txn() const { return journaled_.base(); }
  // Opens a read-only base transaction when none is open.
  Status begin() { return journaled_.begin_read(); }
  // Applies `c` in `txn`, its key's new record being `record` (empty: erased).
  Status apply_in(MDB_txn* txn, const Change& c, std::string_view record);
  // Drops the batch's changes.
  void drop_batch();

  // lmdb_journal.cc: the batch's changes as one journal record, and back.
  static void log_change(std::string& log, const Change& c, std::string_view record);
  // Applies the changes of journal record `payload` in `txn`.
  Status replay_record(MDB_txn* txn, std::string_view payload);

  // lmdb_tree.cc: builds the tree from every record and floor.
  Status build_tree();

  std::string dir_;
  MDB_env* env_ = nullptr;
  unsigned versions_ = 0, floors_ = 0, meta_ = 0;
  MerkleTree tree_;
  uint64_t damaged_at_open_ = 0;
  uint64_t replica_id_ = 0;
  JournaledLmdb journaled_;                     // the base transaction and the journal
  const Status& broken_ = journaled_.broken();  // why the store refuses every call, if it does
  std::string batch_log_;                       // the batch's changes in the base, as its journal record
};

}  // namespace palisade::replica
