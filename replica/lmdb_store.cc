#include "replica/lmdb_store.h"

#include <lmdb.h>

#include "common/big_endian.h"
#include "common/hash.h"
#include "replica/record.h"

namespace palisade::replica {
namespace {

constexpr std::string_view kFormatKey = "format";
constexpr std::string_view kFormat = "1";

Status lmdb_error(const char* what, int rc) {
  return Status(Code::kStorageError, std::string(what) + ": " + mdb_strerror(rc));
}

MDB_val val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
std::string_view view(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }


// A floor is stored as 8 bytes big-endian and a checksum of them and the lock name.
uint64_t floor_checksum(std::string_view lock, std::string_view floor_bytes) {
  return hash64(floor_bytes, hash64(lock));
}

// Whether LMDB can hold `key` as a key at all.
bool storable(std::string_view key) { return !key.empty() && key.size() <= LmdbStore::kMaxKeyBytes; }

Status unstorable(const char* what, std::string_view key) {
  if (key.empty()) return Status(Code::kBadRequest, std::string(what) + " must not be empty");
  return Status(Code::kTooLarge, std::string(what) + " of " + std::to_string(key.size()) + " bytes (limit " +
                                     std::to_string(LmdbStore::kMaxKeyBytes) + ")");
}

}  // namespace

Result<std::unique_ptr<LmdbStore>> LmdbStore::open(const std::string& dir, Options options) {
  std::unique_ptr<LmdbStore> store(new LmdbStore());
  Status s = store->init(dir, options);
  if (!s.is_ok()) return s;
  return store;
}

Status LmdbStore::init(const std::string& dir, Options options) {
  int rc = mdb_env_create(&env_);
  if (rc != 0) return lmdb_error("mdb_env_create", rc);
  if (mdb_env_get_maxkeysize(env_) < static_cast<int>(kMaxKeyBytes)) {
    return Status(Code::kStorageError, "this LMDB stores keys of at most " +
                                           std::to_string(mdb_env_get_maxkeysize(env_)) + " bytes");
  }
  mdb_env_set_maxdbs(env_, 4);
  mdb_env_set_mapsize(env_, options.map_size_bytes);
  // MDB_NOTLS: transactions are tied to this object, not to a thread.
  rc = mdb_env_open(env_, dir.c_str(), MDB_NOTLS, 0644);
  if (rc != 0) return lmdb_error(("cannot open LMDB environment in " + dir).c_str(), rc);
  if (Status s = begin(/*write=*/true); !s.is_ok()) return s;
  MDB_dbi dbi;
  if ((rc = mdb_dbi_open(txn_, "versions", MDB_CREATE, &dbi)) != 0) return lmdb_error("open versions", rc);
  versions_ = dbi;
  if ((rc = mdb_dbi_open(txn_, "floors", MDB_CREATE, &dbi)) != 0) return lmdb_error("open floors", rc);
  floors_ = dbi;
  if ((rc = mdb_dbi_open(txn_, "meta", MDB_CREATE, &dbi)) != 0) return lmdb_error("open meta", rc);
  meta_ = dbi;
  MDB_val k = val(kFormatKey), v;
  rc = mdb_get(txn_, meta_, &k, &v);
  if (rc == MDB_NOTFOUND) {
    MDB_val f = val(kFormat);
    if ((rc = mdb_put(txn_, meta_, &k, &f, 0)) != 0) return lmdb_error("write format", rc);
    dirty_ = true;
  } else if (rc != 0) {
    return lmdb_error("read format", rc);
  } else if (view(v) != kFormat) {
    return Status(Code::kStorageError, "data directory " + dir + " has storage format '" + std::string(view(v)) +
                                           "', this palisade-replica reads format " + std::string(kFormat));
  }
  // Committed even when nothing was written: aborting the transaction that
  // opened the database handles would close them again.
  dirty_ = true;
  return commit();
}

LmdbStore::~LmdbStore() {
  abort();
  if (env_ != nullptr) mdb_env_close(env_);
}

Status LmdbStore::begin(bool write) {
  if (txn_ != nullptr && (writable_ || !write)) return Status::ok();
  // Reads run in a read-only transaction (no writer lock); the first change of
  // the batch swaps it for a write transaction. This object is the only writer,
  // so the swap sees the same data.
  if (txn_ != nullptr) abort();
  int rc = mdb_txn_begin(env_, nullptr, write ? 0 : MDB_RDONLY, &txn_);
  if (rc != 0) {
    txn_ = nullptr;
    return lmdb_error("begin transaction", rc);
  }
  writable_ = write;
  return Status::ok();
}

Result<Versions> LmdbStore::get(std::string_view key) {
  if (Status s = begin(); !s.is_ok()) return s;
  if (!storable(key)) return Versions();
  MDB_val k = val(key), v;
  int rc = mdb_get(txn_, versions_, &k, &v);
  if (rc == MDB_NOTFOUND) return Versions();
  if (rc != 0) return lmdb_error("read versions", rc);
  return decode_record(key, view(v));
}

Result<uint64_t> LmdbStore::fence_floor(std::string_view lock) {
  if (Status s = begin(); !s.is_ok()) return s;
  if (!storable(lock)) return uint64_t{0};
  MDB_val k = val(lock), v;
  int rc = mdb_get(txn_, floors_, &k, &v);
  if (rc == MDB_NOTFOUND) return uint64_t{0};
  if (rc != 0) return lmdb_error("read fence floor", rc);
  std::string_view stored = view(v);
  if (stored.size() != 16 || read_be(stored.data() + 8, 8) != floor_checksum(lock, stored.substr(0, 8))) {
    return Status(Code::kCorrupt, "fence floor of lock '" + std::string(lock) + "' is corrupt");
  }
  return read_be(stored.data(), 8);
}

Status LmdbStore::apply_in(MDB_txn* txn, const Change& c) {
  MDB_val k = val(c.key);
  int rc = 0;
  if (c.put != nullptr && !c.put->empty()) {
    std::string rec = encode_record(c.key, *c.put);
    MDB_val v = val(rec);
    if ((rc = mdb_put(txn, versions_, &k, &v, 0)) != 0) return lmdb_error("write versions", rc);
  } else if (c.put != nullptr) {
    rc = mdb_del(txn, versions_, &k, nullptr);
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("erase versions", rc);
  }
  if (c.floor != 0) {
    std::string f;
    append_be(f, c.floor, 8);
    append_be(f, floor_checksum(c.lock, f), 8);
    MDB_val lk = val(c.lock), fv = val(f);
    if ((rc = mdb_put(txn, floors_, &lk, &fv, 0)) != 0) return lmdb_error("write fence floor", rc);
  }
  return Status::ok();
}

Status LmdbStore::apply(const Change& c) {
  if (c.put != nullptr && !storable(c.key)) return unstorable("key", c.key);
  if (c.floor != 0 && !storable(c.lock)) return unstorable("lock name", c.lock);
  if (Status s = begin(/*write=*/true); !s.is_ok()) return s;
  // A nested transaction makes the change all-or-nothing: a full map fails this
  // request alone, not the whole batch.
  MDB_txn* child = nullptr;
  int rc = mdb_txn_begin(env_, txn_, 0, &child);
  if (rc != 0) return lmdb_error("begin nested transaction", rc);
  Status s = apply_in(child, c);
  if (!s.is_ok()) {
    mdb_txn_abort(child);
    return s;
  }
  if ((rc = mdb_txn_commit(child)) != 0) return lmdb_error("commit nested transaction", rc);
  dirty_ = true;
  return Status::ok();
}

Status LmdbStore::commit() {
  if (txn_ == nullptr) return Status::ok();
  if (!dirty_) {
    abort();
    return Status::ok();
  }
  int rc = mdb_txn_commit(txn_);
  txn_ = nullptr;
  dirty_ = false;
  writable_ = false;
  if (rc != 0) return lmdb_error("commit", rc);
  return Status::ok();
}

void LmdbStore::abort() {
  if (txn_ != nullptr) mdb_txn_abort(txn_);
  txn_ = nullptr;
  dirty_ = false;
  writable_ = false;
}

Result<uint64_t> LmdbStore::key_count() {
  if (Status s = begin(); !s.is_ok()) return s;
  MDB_stat st;
  int rc = mdb_stat(txn_, versions_, &st);
  if (rc != 0) return lmdb_error("stat", rc);
  return uint64_t{st.ms_entries};
}

}  // namespace palisade::replica
