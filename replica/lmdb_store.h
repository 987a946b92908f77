// ReplicaStore on LMDB: the daemon's durable state. Databases (docs/storage.md):
//   versions: key -> record (record.h)
//   floors:   lock name -> fence floor, 8 bytes big-endian, then an 8-byte checksum
//   meta:     "format" -> storage format version
// commit() is one synced LMDB transaction, so one fsync serves a whole batch.
// Never opened with MDB_NOSYNC or MDB_WRITEMAP. One thread uses it at a time.
#pragma once

#include <memory>
#include <string>

#include "common/envelope.h"
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

  // Number of keys stored (committed state plus the open batch).
  Result<uint64_t> key_count();

 private:
  LmdbStore() = default;
  Status init(const std::string& dir, Options options);
  // Opens the batch's transaction if none is open: read-only unless `write`,
  // and a read-only one becomes a write transaction when `write` is asked.
  Status begin(bool write = false);
  Status apply_in(MDB_txn* txn, const Change& c);

  MDB_env* env_ = nullptr;
  unsigned versions_ = 0, floors_ = 0, meta_ = 0;
  MDB_txn* txn_ = nullptr;
  bool writable_ = false;
  bool dirty_ = false;
};

}  // namespace palisade::replica
