// PaxosStorage on LMDB: the durable state of a palisade-lockd acceptor.
// Databases of the environment in its directory:
//   meta:     "format"   -> the storage format version, the ASCII string "3"
//             "promised" -> ballot, 8 bytes big-endian, then an 8-byte checksum
//             "first_members" -> their count (2), each id (4), then an 8-byte checksum
//             "snapshot" -> snapshot slot, 8 bytes big-endian, the snapshot's bytes,
//                           then an 8-byte checksum
//             "journal"  -> the journal position the last checkpoint covers
//   accepted: slot, 8 bytes big-endian -> ballot, 8 bytes big-endian, the value's
//             bytes, then an 8-byte checksum
// Checksums are XXH3-64 (wire/hash.h) of what precedes them, seeded with the
// hash of the record's key (so a record moved to another key does not verify).
//
// Changes are buffered in memory; commit() appends them to the journal in
// DIR/journal and syncs it, one device flush, then keeps them in an LMDB write
// transaction that stays open until a checkpoint commits it (synced) with the
// journal position it covers: every checkpoint_bytes of journal, or with
// changes too large for the journal (storage/journaled_lmdb.h). Opening replays
// the journal. The environment is never opened with MDB_NOSYNC, MDB_NOMETASYNC or
// MDB_WRITEMAP; MDB_NOLOCK, because the daemon's DirLock keeps other processes
// out and only one transaction (and a nested one of it) is ever open. One
// thread at a time.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "storage/journaled_lmdb.h"
#include "lockgroup/paxos_storage.h"

typedef struct MDB_env MDB_env;
typedef struct MDB_txn MDB_txn;

namespace palisade::lockgroup {

class LmdbPaxosStorage final : public PaxosStorage {
 public:
  struct Options {
    size_t map_size_bytes = size_t{1} << 30;      // the most the data can grow to
    size_t journal_bytes = size_t{8} << 20;       // the journal file's size when it is created
    size_t checkpoint_bytes = size_t{256} << 10;  // journal bytes that make a commit checkpoint
  };

  // Opens or creates the storage in directory `dir` (which must exist).
  // StorageError when LMDB cannot open it or it holds another storage format.
  static Result<std::unique_ptr<LmdbPaxosStorage>> open(const std::string& dir, Options options);
  // Checkpoints what the journal holds, then closes the environment; changes
  // not committed are lost.
  ~LmdbPaxosStorage() override;
  LmdbPaxosStorage(const LmdbPaxosStorage&) = delete;
  LmdbPaxosStorage& operator=(const LmdbPaxosStorage&) = delete;

  // Reads the committed state; Corrupt (naming the record) when a checksum fails.
  // Accepted entries at or below the snapshot slot are not returned.
  Result<DurableState> load() override;
  // One synced journal record (or, too large for the journal, one synced LMDB
  // commit). On failure (StorageError; "map full" when the LMDB map or the
  // disk is full) the pending changes are dropped, and are not loaded again
  // unless the disk failed so badly that not even the checkpoint that follows
  // a failed journal append could be made.
  Status commit() override;
  // Reports how long each checkpoint from now on takes (JournaledLmdb::on_checkpoint).
  void on_checkpoint(JournaledLmdb::CheckpointObserver observer) { journaled_.on_checkpoint(std::move(observer)); }

 private:
  LmdbPaxosStorage();
  Status init(const std::string& dir, Options options);
  // Writes `changes` in `txn`.
  Status write(MDB_txn* txn, const Pending& changes);
  static std::string encode(const Pending& changes);
  static Result<Pending> decode(std::string_view record);

  std::string dir_;
  MDB_env* env_ = nullptr;
  unsigned meta_ = 0, accepted_ = 0;
  JournaledLmdb journaled_;  // the base transaction and the journal
};

}  // namespace palisade::lockgroup
