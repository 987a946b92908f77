// ReplicaStore on LMDB: the daemon's durable state. Databases (docs/storage.md):
//   versions: key -> record (record.h)
//   floors:   lock name -> fence floor record (record.h)
//   digests:  entry position -> the entries there and their digests (anti-entropy)
//   meta:     "format" -> storage format version
// The Merkle tree (merkle.h) lives in memory: built when the store opens, which
// also checks every record against the digests database, and kept up to date
// by every change in the same transaction as the change.
// commit() is one synced LMDB transaction, so one fsync serves a whole batch.
// Never opened with MDB_NOSYNC or MDB_WRITEMAP. One thread uses it at a time.
#pragma once

#include <memory>
#include <string>

#include "common/envelope.h"
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
    size_t map_size_bytes = size_t{8} << 30;  // the most the data can grow to
  };

  // Opens or creates the store in directory `dir` (which must exist).
  static Result<std::unique_ptr<LmdbStore>> open(const std::string& dir, Options options);
  ~LmdbStore() override;

  Result<Versions> get(std::string_view key) override;
  Result<uint64_t> fence_floor(std::string_view lock) override;
  Status apply(const Change& change) override;
  Status commit() override;
  void abort() override;
  Result<wire::TreeNode> tree_node(uint32_t level, uint64_t index) override;
  Status list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) override;
  Result<wire::ReplicaStats> stats(size_t max_floors) override;

  // Number of keys stored (committed state plus the open batch).
  Result<uint64_t> key_count();
  // What opening found: records whose digest did not match the digests
  // database (a damaged record, or an upgrade from format 1).
  uint64_t digests_rebuilt() const { return digests_rebuilt_; }

 private:
  LmdbStore() = default;
  Status init(const std::string& dir, Options options);
  // Opens the batch's transaction if none is open: read-only unless `write`,
  // and a read-only one becomes a write transaction when `write` is asked.
  Status begin(bool write = false);
  // Applies `c` in `txn`; the tree changes go to *deltas, for after it commits.
  Status apply_in(MDB_txn* txn, const Change& c, std::vector<TreeDelta>* deltas);

  // lmdb_digests.cc: the digests database and the tree.
  // Sets the digests database's entry of (kind, name) to `digest` and
  // `lone_tombstone` (digest 0: removes it) and returns the tree delta.
  Result<TreeDelta> index_entry(MDB_txn* txn, wire::LeafEntry::Kind kind, std::string_view name, uint64_t digest,
                                bool lone_tombstone);
  // Builds the tree from every record; rewrites the digests database when it
  // does not match them.
  Status check_digests();
  // Calls `visit(entry)` for every stored key and floor.
  template <typename Visit>
  Status scan_entries(Visit visit);

  MDB_env* env_ = nullptr;
  unsigned versions_ = 0, floors_ = 0, meta_ = 0, digests_ = 0;
  MerkleTree tree_;
  uint64_t digests_rebuilt_ = 0;
  MDB_txn* txn_ = nullptr;
  bool writable_ = false;
  bool dirty_ = false;
};

}  // namespace palisade::replica
