#include "tests/support/raw_lmdb.h"

#include <lmdb.h>

#include <filesystem>
#include <stdexcept>

namespace palisade::test {
namespace {

void check(int rc, const std::string& what) {
  if (rc != 0) throw std::runtime_error(what + ": " + mdb_strerror(rc));
}

MDB_val val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

}  // namespace

RawLmdb::RawLmdb(const std::string& dir) {
  try {
    check(mdb_env_create(&env_), "mdb_env_create");
    check(mdb_env_set_maxdbs(env_, 4), "mdb_env_set_maxdbs");
    check(mdb_env_open(env_, dir.c_str(), MDB_NOTLS, 0644), "mdb_env_open " + dir);
    check(mdb_txn_begin(env_, nullptr, 0, &txn_), "mdb_txn_begin");
  } catch (...) {
    if (env_ != nullptr) mdb_env_close(env_);
    throw;
  }
}

RawLmdb::~RawLmdb() {
  if (txn_ != nullptr) mdb_txn_abort(txn_);
  mdb_env_close(env_);
}

unsigned RawLmdb::dbi(const std::string& db, unsigned flags) {
  if (txn_ == nullptr) throw std::runtime_error("RawLmdb used after commit");
  MDB_dbi d = 0;
  check(mdb_dbi_open(txn_, db.c_str(), flags, &d), "mdb_dbi_open " + db);
  return d;
}

bool RawLmdb::exists(const std::string& db) {
  if (txn_ == nullptr) throw std::runtime_error("RawLmdb used after commit");
  MDB_dbi d = 0;
  int rc = mdb_dbi_open(txn_, db.c_str(), 0, &d);
  if (rc == MDB_NOTFOUND) return false;
  check(rc, "mdb_dbi_open " + db);
  return true;
}

std::optional<std::string> RawLmdb::get(const std::string& db, std::string_view key) {
  MDB_val k = val(key), v;
  int rc = mdb_get(txn_, dbi(db), &k, &v);
  if (rc == MDB_NOTFOUND) return std::nullopt;
  check(rc, "mdb_get");
  return std::string(static_cast<const char*>(v.mv_data), v.mv_size);
}

void RawLmdb::put(const std::string& db, std::string_view key, std::string_view value) {
  MDB_val k = val(key), v = val(value);
  check(mdb_put(txn_, dbi(db, MDB_CREATE), &k, &v, 0), "mdb_put");
}

void RawLmdb::commit() {
  if (txn_ == nullptr) throw std::runtime_error("RawLmdb committed twice");
  int rc = mdb_txn_commit(txn_);
  txn_ = nullptr;
  check(rc, "mdb_txn_commit");
}

void copy_crash_image(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  fs::create_directories(to);
  for (const fs::directory_entry& e : fs::directory_iterator(from)) {
    const std::string name = e.path().filename();
    if (e.is_regular_file() && name != "LOCK" && name != "lock.mdb") {
      fs::copy_file(e.path(), fs::path(to) / name, fs::copy_options::overwrite_existing);
    }
  }
}

}  // namespace palisade::test
