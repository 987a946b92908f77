// Direct access to a palisade-replica LMDB data directory, bypassing LmdbStore,
// so that tests can damage what is on disk (flip a stored byte, plant a foreign
// storage format). One write transaction from construction to commit().
//
// The directory must not be open in this process at the same time (LMDB's rule),
// nor used by a running daemon.
#pragma once

#include <optional>
#include <string>
#include <string_view>

typedef struct MDB_env MDB_env;
typedef struct MDB_txn MDB_txn;

namespace palisade::test {

class RawLmdb {
 public:
  // Opens the environment in `dir`; throws std::runtime_error when it cannot.
  explicit RawLmdb(const std::string& dir);
  ~RawLmdb();  // drops what was not committed
  RawLmdb(const RawLmdb&) = delete;
  RawLmdb& operator=(const RawLmdb&) = delete;

  // `db` is a named database ("versions", "floors", "meta"): get needs it to
  // exist, put creates it when missing.
  std::optional<std::string> get(const std::string& db, std::string_view key);
  void put(const std::string& db, std::string_view key, std::string_view value);
  bool exists(const std::string& db);
  void commit();

 private:
  unsigned dbi(const std::string& db, unsigned flags = 0);

  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
};

// Copies the files of data directory `from` (which a process may have open)
// into `to`: what a crash of that process would leave on disk, the writes it
// has not synced included (a process crash keeps them; the kernel has them).
void copy_crash_image(const std::string& from, const std::string& to);

}  // namespace palisade::test
