// PaxosStorage on LMDB: the durable state of a palisade-lockd acceptor.
// Databases of the environment in its directory:
//   meta:     "format"   -> the storage format version, the ASCII string "1"
//             "promised" -> ballot, 8 bytes big-endian, then an 8-byte checksum
//             "snapshot" -> snapshot slot, 8 bytes big-endian, the snapshot's bytes,
//                           then an 8-byte checksum
//   accepted: slot, 8 bytes big-endian -> ballot, 8 bytes big-endian, the value's
//             bytes, then an 8-byte checksum
// Checksums are XXH3-64 (common/hash.h) of what precedes them, seeded with the
// hash of the record's key (so a record moved to another key does not verify).
//
// Changes are buffered in memory; commit() writes them all in one LMDB write
// transaction, whose commit syncs the data file before it returns. The
// environment is never opened with MDB_NOSYNC, MDB_NOMETASYNC or MDB_WRITEMAP.
// One thread uses it at a time.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "quorum/paxos_storage.h"

typedef struct MDB_env MDB_env;

namespace palisade::quorum {

class LmdbPaxosStorage final : public PaxosStorage {
 public:
  struct Options {
    size_t map_size_bytes = size_t{1} << 30;  // the most the data can grow to
  };

  // Opens or creates the storage in directory `dir` (which must exist).
  // StorageError when LMDB cannot open it or it holds another storage format.
  static Result<std::unique_ptr<LmdbPaxosStorage>> open(const std::string& dir, Options options);
  // Closes the environment; changes not committed are lost.
  ~LmdbPaxosStorage() override;
  LmdbPaxosStorage(const LmdbPaxosStorage&) = delete;
  LmdbPaxosStorage& operator=(const LmdbPaxosStorage&) = delete;

  // Reads the committed state; Corrupt (naming the record) when a checksum fails.
  // Accepted entries at or below the snapshot slot are not returned.
  Result<DurableState> load() override;
  void set_promised(Ballot ballot) override;
  // An entry at or below the pending snapshot's slot is dropped (the snapshot holds it).
  void put_accepted(const Entry& entry) override;
  void put_snapshot(Slot slot, const std::string& snapshot) override;
  // One synced write transaction. On failure (StorageError; "map full" when the
  // LMDB map or the disk is full) nothing was written and the pending changes
  // are dropped.
  Status commit() override;
  bool dirty() const override { return pending_.any; }

 private:
  struct Pending {
    bool any = false;
    std::optional<Ballot> promised;
    std::optional<Slot> snapshot_slot;
    std::string snapshot;
    std::map<Slot, Entry> accepted;  // only slots above snapshot_slot when it is set
  };

  LmdbPaxosStorage() = default;
  Status init(const std::string& dir, Options options);
  Status write(Pending& changes);

  std::string dir_;
  MDB_env* env_ = nullptr;
  unsigned meta_ = 0, accepted_ = 0;
  Pending pending_;
};

}  // namespace palisade::quorum
