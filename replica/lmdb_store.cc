#include "replica/lmdb_store.h"

#include <lmdb.h>
#include <sodium.h>

#include <algorithm>
#include <array>
#include <utility>

#include "base/big_endian.h"
#include "replica/lmdb_util.h"
#include "replica/record.h"
#include "storage/durable_file.h"
#include "wire/config_certificate.h"

namespace palisade::replica {
namespace {

constexpr std::string_view kFormatKey = "format";
// The config certificate, beside the LMDB files: it changes seldom, and apart
// from the batches and their journal.
constexpr std::string_view kConfigFile = "config-certificate";
// Format 2 added sequencers in floor records (and a digests database, dropped
// since), format 3 the journal, format 4 records of format 2 (what a replica
// dropped). Older directories are upgraded when opened; older binaries refuse
// newer formats, so none can open a directory and miss what its journal holds
// or take a record it cannot read for a corrupt one.
constexpr std::string_view kFormat = "4";
constexpr std::string_view kReplicaIdKey = "replica_id";
constexpr std::array<std::string_view, 2> kFormatsBeforeJournal = {"1", "2"};
constexpr std::string_view kFormatWithJournal = "3";

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

LmdbStore::LmdbStore()
    : journaled_("palisade-replica", lmdb_error,
                 [this](MDB_txn* txn, std::string_view record) { return replay_record(txn, record); }) {}

Status LmdbStore::init(const std::string& dir, Options options) {
  dir_ = dir;
  int rc = mdb_env_create(&env_);
  if (rc != 0) return lmdb_error("mdb_env_create", rc);
  if (mdb_env_get_maxkeysize(env_) < static_cast<int>(kMaxKeyBytes)) {
    return Status(Code::kStorageError,
                  "this LMDB stores keys of at most " + std::to_string(mdb_env_get_maxkeysize(env_)) + " bytes");
  }
  mdb_env_set_maxdbs(env_, 4);
  mdb_env_set_mapsize(env_, options.map_size_bytes);
  rc = mdb_env_open(env_, dir.c_str(), MDB_NOTLS | MDB_NOLOCK, 0644);
  if (rc != 0) return lmdb_error("cannot open LMDB environment in " + dir, rc);
  if (Status s = journaled_.start(env_, dir, options.checkpoint_bytes); !s.is_ok()) return s;
  MDB_txn* txn = journaled_.base();
  MDB_dbi dbi;
  if ((rc = mdb_dbi_open(txn, "versions", MDB_CREATE, &dbi)) != 0) return lmdb_error("open versions", rc);
  versions_ = dbi;
  if ((rc = mdb_dbi_open(txn, "floors", MDB_CREATE, &dbi)) != 0) return lmdb_error("open floors", rc);
  floors_ = dbi;
  if ((rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &dbi)) != 0) return lmdb_error("open meta", rc);
  meta_ = dbi;
  // Formats 2 and 3 kept an index of the tree's entries here; it lives in
  // memory now. An older binary that opens the directory builds it again.
  rc = mdb_dbi_open(txn, "digests", 0, &dbi);
  if (rc == 0) rc = mdb_drop(txn, dbi, 1);
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("drop the digests database", rc);
  MDB_val k = val(kFormatKey), v;
  rc = mdb_get(txn, meta_, &k, &v);
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("read format", rc);
  const bool before_journal = rc == 0 && std::find(kFormatsBeforeJournal.begin(), kFormatsBeforeJournal.end(),
                                                   view(v)) != kFormatsBeforeJournal.end();
  const bool older = before_journal || (rc == 0 && view(v) == kFormatWithJournal);
  if (rc == 0 && view(v) != kFormat && !older) {
    return Status(Code::kStorageError, "data directory " + dir + " has storage format '" + std::string(view(v)) +
                                           "', this palisade-replica reads formats 1 to " + std::string(kFormat));
  }
  // A directory of format 3 or 4 has had its journal since it was created or upgraded.
  const bool create = rc == MDB_NOTFOUND || before_journal;
  if (Status s = journaled_.open_journal(meta_, options.journal_bytes, create); !s.is_ok()) return s;
  if (create || older) {
    MDB_val f = val(kFormat);
    if ((rc = mdb_put(txn, meta_, &k, &f, 0)) != 0) return lmdb_error("write format", rc);
  }
  if (Status s = load_replica_id(); !s.is_ok()) return s;
  if (Status s = build_tree(); !s.is_ok()) return s;
  return journaled_.finish_open();
}

Status LmdbStore::load_replica_id() {
  MDB_txn* txn = journaled_.base();
  MDB_val k = val(kReplicaIdKey), v;
  int rc = mdb_get(txn, meta_, &k, &v);
  if (rc == 0 && v.mv_size == 8) {
    replica_id_ = load_be64(static_cast<const uint8_t*>(v.mv_data));
    return Status::ok();
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("read the replica id", rc);
  // Made once, with the directory (or on the first start of an older one).
  uint8_t id[8];
  do {
    randombytes_buf(id, sizeof id);
    replica_id_ = load_be64(id);
  } while (replica_id_ == 0);
  MDB_val put{sizeof id, id};
  if ((rc = mdb_put(txn, meta_, &k, &put, 0)) != 0) return lmdb_error("write the replica id", rc);
  return Status::ok();
}

Result<std::string> LmdbStore::config_certificate() {
  auto text = read_small_file(dir_ + "/" + std::string(kConfigFile), wire::kMaxConfigCertificateBytes);
  if (!text.is_ok()) return text.status();
  return text.value().value_or("");
}

Status LmdbStore::save_config_certificate(std::string_view text) {
  return write_file_durably(dir_ + "/" + std::string(kConfigFile), text);
}

LmdbStore::~LmdbStore() {
  drop_batch();
  tree_.abort();
  journaled_.close();
  if (env_ != nullptr) mdb_env_close(env_);
}

Result<Versions> LmdbStore::get(std::string_view key) {
  if (Status s = begin(); !s.is_ok()) return s;
  if (!storable(key)) return Versions();
  MDB_val k = val(key), v;
  int rc = mdb_get(txn(), versions_, &k, &v);
  if (rc == MDB_NOTFOUND) return Versions();
  if (rc != 0) return lmdb_error("read versions", rc);
  return decode_record(key, view(v));
}

Result<std::vector<std::string>> LmdbStore::keys_in(std::string_view prefix, std::string_view after, size_t max) {
  if (Status s = begin(); !s.is_ok()) return s;
  std::vector<std::string> out;
  MDB_cursor* cursor = nullptr;
  int rc = mdb_cursor_open(txn(), versions_, &cursor);
  if (rc != 0) return lmdb_error("open cursor", rc);
  // LMDB orders keys by their bytes, as std::string does: the first key at
  // or after the start, then on while the prefix holds.
  const std::string_view from = std::max(prefix, after);
  MDB_val k = val(from), v;
  for (rc = from.empty() ? mdb_cursor_get(cursor, &k, &v, MDB_FIRST) : mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
       rc == 0 && out.size() < max; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    const std::string_view key = view(k);
    if (!key.starts_with(prefix)) break;
    if (key == after) continue;
    out.emplace_back(key);
  }
  mdb_cursor_close(cursor);
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("list keys", rc);
  return out;
}

Result<uint64_t> LmdbStore::fence_floor(std::string_view lock) {
  if (Status s = begin(); !s.is_ok()) return s;
  if (!storable(lock)) return uint64_t{0};
  MDB_val k = val(lock), v;
  int rc = mdb_get(txn(), floors_, &k, &v);
  if (rc == MDB_NOTFOUND) return uint64_t{0};
  if (rc != 0) return lmdb_error("read fence floor", rc);
  auto floor = decode_floor_record(lock, view(v));
  if (!floor.is_ok()) return floor.status();
  return floor.value().floor;
}

Status LmdbStore::apply_in(MDB_txn* txn, const Change& c, std::string_view record) {
  MDB_val k = val(c.key);
  int rc = 0;
  if (c.put != nullptr) {
    if (!record.empty()) {
      MDB_val v = val(record);
      if ((rc = mdb_put(txn, versions_, &k, &v, 0)) != 0) return lmdb_error("write versions", rc);
    } else {
      rc = mdb_del(txn, versions_, &k, nullptr);
      if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("erase versions", rc);
    }
  }
  if (c.floor != 0) {
    std::string f = encode_floor_record(c.lock, {c.floor, std::string(c.floor_sequencer)});
    MDB_val lk = val(c.lock), fv = val(f);
    if ((rc = mdb_put(txn, floors_, &lk, &fv, 0)) != 0) return lmdb_error("write fence floor", rc);
  }
  return Status::ok();
}

Status LmdbStore::apply(const Change& c) {
  if (c.put == nullptr && c.floor == 0) return Status::ok();  // changes nothing
  if (c.put != nullptr && !storable(c.key)) return unstorable("key", c.key);
  if (c.floor != 0 && !storable(c.lock)) return unstorable("lock name", c.lock);
  const std::string record = c.put != nullptr && !c.put->empty() ? encode_record(c.key, *c.put) : std::string();
  Status s = journaled_.write_whole([&](MDB_txn* txn) { return apply_in(txn, c, record); }, batch_log_);
  if (!s.is_ok()) return s;
  if (c.put != nullptr) {
    tree_.set(wire::LeafEntry::Kind::kKey, c.key, c.put->empty() ? 0 : versions_digest(c.key, *c.put),
              lone_tombstone(*c.put));
  }
  if (c.floor != 0) tree_.set(wire::LeafEntry::Kind::kFloor, c.lock, floor_digest(c.lock, c.floor), false);
  log_change(batch_log_, c, record);
  return Status::ok();
}

Status LmdbStore::commit() {
  if (!broken_.is_ok() || batch_log_.empty()) {
    abort();
    return broken_;
  }
  const std::string log = std::exchange(batch_log_, std::string());
  Status s = journaled_.commit(log);
  if (s.is_ok()) {
    tree_.commit();
  } else {
    tree_.abort();
  }
  return s;
}

Status LmdbStore::checkpoint() {
  if (!broken_.is_ok()) return broken_;
  if (!batch_log_.empty()) return Status(Code::kBadRequest, "checkpoint() while a batch holds changes");
  return journaled_.unchecked() ? journaled_.checkpoint() : Status::ok();
}

void LmdbStore::drop_batch() {
  // A failed rebuild breaks the store: broken_ answers every later call.
  if (!batch_log_.empty()) (void)journaled_.drop_batch({});
  batch_log_.clear();
}

void LmdbStore::abort() {
  tree_.abort();
  drop_batch();
  journaled_.release();
}

Result<wire::ReplicaStats> LmdbStore::stats(size_t max_floors) {
  auto keys = key_count();
  if (!keys.is_ok()) return keys.status();
  wire::ReplicaStats out;
  out.keys = keys.value();
  out.format = static_cast<uint32_t>(kFormat[0] - '0');
  MDB_stat st;
  int rc = mdb_stat(txn(), floors_, &st);
  if (rc != 0) return lmdb_error("stat floors", rc);
  out.floor_count = st.ms_entries;
  MDB_envinfo info;
  if ((rc = mdb_env_info(env_, &info)) != 0 || (rc = mdb_env_stat(env_, &st)) != 0) return lmdb_error("env info", rc);
  out.data_bytes = (uint64_t{info.me_last_pgno} + 1) * st.ms_psize;
  MDB_cursor* cursor = nullptr;
  if ((rc = mdb_cursor_open(txn(), floors_, &cursor)) != 0) return lmdb_error("open cursor", rc);
  MDB_val k, v;
  Status status;
  for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == 0 && out.floors.size() < max_floors;
       rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    auto floor = decode_floor_record(view(k), view(v));
    if (!floor.is_ok()) {
      status = floor.status();
      break;
    }
    out.floors.emplace_back(std::string(view(k)), floor.value().floor);
  }
  mdb_cursor_close(cursor);
  if (status.is_ok() && rc != 0 && rc != MDB_NOTFOUND) status = lmdb_error("scan floors", rc);
  if (!status.is_ok()) return status;
  return out;
}

Result<uint64_t> LmdbStore::key_count() {
  if (Status s = begin(); !s.is_ok()) return s;
  MDB_stat st;
  int rc = mdb_stat(txn(), versions_, &st);
  if (rc != 0) return lmdb_error("stat", rc);
  return uint64_t{st.ms_entries};
}

}  // namespace palisade::replica
