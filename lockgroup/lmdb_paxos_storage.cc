#include "lockgroup/lmdb_paxos_storage.h"

#include <lmdb.h>

#include <cerrno>
#include <string_view>

#include "base/big_endian.h"
#include "wire/hash.h"

namespace palisade::lockgroup {
namespace {

constexpr std::string_view kFormatKey = "format";
// Format 2 added the journal, format 3 the first members (a journal record
// flag older binaries do not know). Older directories are upgraded when
// opened; older binaries refuse a newer format, so none can miss what the
// journal holds.
constexpr std::string_view kFormat = "3";
constexpr std::string_view kFormatBeforeJournal = "1";
constexpr std::string_view kFormatBeforeFirstMembers = "2";
constexpr std::string_view kPromisedKey = "promised";
constexpr std::string_view kFirstMembersKey = "first_members";
constexpr std::string_view kSnapshotKey = "snapshot";
constexpr size_t kU64Bytes = 8;
constexpr size_t kChecksumBytes = 8;
constexpr size_t kCountBytes = 2;
constexpr size_t kNodeIdBytes = 4;

Status lmdb_error(const std::string& what, int rc) {
  if (rc == MDB_MAP_FULL) {
    return Status(Code::kStorageError, what + ": disk full / map full (the LMDB map is full: raise map_size_bytes)");
  }
  if (rc == ENOSPC) return Status(Code::kStorageError, what + ": disk full / map full (no space left on device)");
  return Status(Code::kStorageError, what + ": " + mdb_strerror(rc));
}

MDB_val val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
std::string_view view(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

std::string slot_key(Slot slot) {
  std::string key;
  append_be(key, slot, kU64Bytes);
  return key;
}

// A record: its body, then a checksum of the body seeded with the hash of its key.
std::string seal(std::string_view key, std::string body) {
  append_be(body, hash64(body, hash64(key)), kChecksumBytes);
  return body;
}

// The body of a record, or nullopt when the body is shorter than `min_body`
// bytes or the checksum fails.
std::optional<std::string_view> unseal(std::string_view key, std::string_view record, size_t min_body) {
  if (record.size() < min_body + kChecksumBytes) return std::nullopt;
  std::string_view body = record.substr(0, record.size() - kChecksumBytes);
  if (read_be(record.data() + body.size(), kChecksumBytes) != hash64(body, hash64(key))) return std::nullopt;
  return body;
}

// A read-only transaction, aborted when it goes.
struct Txn {
  MDB_txn* txn = nullptr;
  Txn() = default;
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  ~Txn() {
    if (txn != nullptr) mdb_txn_abort(txn);
  }
};

struct Cursor {
  MDB_cursor* cursor = nullptr;
  Cursor() = default;
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;
  ~Cursor() {
    if (cursor != nullptr) mdb_cursor_close(cursor);
  }
};

void append_members(std::string& out, const Members& members) {
  append_be(out, members.size(), kCountBytes);
  for (NodeId id : members) append_be(out, id, kNodeIdBytes);
}

// Members from the front of `in`, which loses them; nullopt when it is cut short.
std::optional<Members> take_members(std::string_view& in) {
  if (in.size() < kCountBytes) return std::nullopt;
  const size_t count = read_be(in.data(), kCountBytes);
  if (in.size() < kCountBytes + count * kNodeIdBytes) return std::nullopt;
  Members members;
  for (size_t i = 0; i < count; ++i) {
    members.push_back(static_cast<NodeId>(read_be(in.data() + kCountBytes + i * kNodeIdBytes, kNodeIdBytes)));
  }
  in.remove_prefix(kCountBytes + count * kNodeIdBytes);
  return members;
}

}  // namespace

Result<std::unique_ptr<LmdbPaxosStorage>> LmdbPaxosStorage::open(const std::string& dir, Options options) {
  std::unique_ptr<LmdbPaxosStorage> storage(new LmdbPaxosStorage());
  if (Status s = storage->init(dir, options); !s.is_ok()) return s;
  return storage;
}

LmdbPaxosStorage::LmdbPaxosStorage()
    : journaled_("palisade-lockd", lmdb_error, [this](MDB_txn* txn, std::string_view record) {
        auto changes = decode(record);
        return changes.is_ok() ? write(txn, changes.value()) : changes.status();
      }) {}

Status LmdbPaxosStorage::init(const std::string& dir, Options options) {
  dir_ = dir;
  int rc = mdb_env_create(&env_);
  if (rc != 0) {
    env_ = nullptr;
    return lmdb_error("mdb_env_create", rc);
  }
  if ((rc = mdb_env_set_maxdbs(env_, 2)) != 0) return lmdb_error("mdb_env_set_maxdbs", rc);
  if ((rc = mdb_env_set_mapsize(env_, options.map_size_bytes)) != 0) return lmdb_error("mdb_env_set_mapsize", rc);
  // MDB_NOTLS | MDB_NOLOCK: transactions are tied to this object, not to a
  // thread (see the header). Nothing that weakens durability (MDB_NOSYNC,
  // MDB_NOMETASYNC, MDB_WRITEMAP).
  if ((rc = mdb_env_open(env_, dir.c_str(), MDB_NOTLS | MDB_NOLOCK, 0644)) != 0) {
    return lmdb_error("cannot open the paxos LMDB environment in " + dir, rc);
  }
  if (Status s = journaled_.start(env_, dir, options.checkpoint_bytes); !s.is_ok()) return s;
  MDB_txn* txn = journaled_.base();
  MDB_dbi dbi;
  if ((rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &dbi)) != 0) return lmdb_error("open database meta", rc);
  meta_ = dbi;
  if ((rc = mdb_dbi_open(txn, "accepted", MDB_CREATE, &dbi)) != 0) return lmdb_error("open database accepted", rc);
  accepted_ = dbi;
  MDB_val k = val(kFormatKey), v;
  rc = mdb_get(txn, meta_, &k, &v);
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("read the storage format in " + dir, rc);
  const bool before_journal = rc == 0 && view(v) == kFormatBeforeJournal;
  const bool before_members = rc == 0 && view(v) == kFormatBeforeFirstMembers;
  if (rc == 0 && view(v) != kFormat && !before_journal && !before_members) {
    return Status(Code::kStorageError, "paxos data directory " + dir + " has storage format '" + std::string(view(v)) +
                                           "', this build reads formats " + std::string(kFormatBeforeJournal) + " to " +
                                           std::string(kFormat));
  }
  // A directory of format 2 or later has had its journal since it was created or upgraded.
  const bool create = rc == MDB_NOTFOUND || before_journal;
  if (Status s = journaled_.open_journal(meta_, options.journal_bytes, create); !s.is_ok()) return s;
  if (create || before_members) {
    MDB_val f = val(kFormat);
    if ((rc = mdb_put(txn, meta_, &k, &f, 0)) != 0) return lmdb_error("write the storage format in " + dir, rc);
  }
  return journaled_.finish_open();
}

LmdbPaxosStorage::~LmdbPaxosStorage() {
  journaled_.close();
  if (env_ != nullptr) mdb_env_close(env_);
}

Result<DurableState> LmdbPaxosStorage::load() {
  if (!journaled_.broken().is_ok()) return journaled_.broken();
  // The base, when open, holds what the journal added to the data file.
  Txn read_only;
  MDB_txn* txn = journaled_.base();
  int rc = 0;
  if (txn == nullptr) {
    if ((rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &read_only.txn)) != 0) {
      return lmdb_error("begin read transaction in " + dir_, rc);
    }
    txn = read_only.txn;
  }
  DurableState state;

  MDB_val k = val(kPromisedKey), v;
  rc = mdb_get(txn, meta_, &k, &v);
  if (rc == 0) {
    auto body = unseal(kPromisedKey, view(v), kU64Bytes);
    if (!body || body->size() != kU64Bytes) {
      return Status(Code::kCorrupt, "the promised ballot in " + dir_ + " is corrupt");
    }
    state.promised = read_be(body->data(), kU64Bytes);
  } else if (rc != MDB_NOTFOUND) {
    return lmdb_error("read the promised ballot in " + dir_, rc);
  }

  k = val(kFirstMembersKey);
  rc = mdb_get(txn, meta_, &k, &v);
  if (rc == 0) {
    auto body = unseal(kFirstMembersKey, view(v), kCountBytes);
    std::optional<Members> members = body ? take_members(*body) : std::nullopt;
    if (!members || !body->empty()) return Status(Code::kCorrupt, "the first members in " + dir_ + " are corrupt");
    state.first_members = std::move(members);
  } else if (rc != MDB_NOTFOUND) {
    return lmdb_error("read the first members in " + dir_, rc);
  }

  k = val(kSnapshotKey);
  rc = mdb_get(txn, meta_, &k, &v);
  if (rc == 0) {
    auto body = unseal(kSnapshotKey, view(v), kU64Bytes);
    if (!body) return Status(Code::kCorrupt, "the snapshot in " + dir_ + " is corrupt");
    state.snapshot_slot = read_be(body->data(), kU64Bytes);
    state.snapshot.assign(body->substr(kU64Bytes));
  } else if (rc != MDB_NOTFOUND) {
    return lmdb_error("read the snapshot in " + dir_, rc);
  }

  if (state.snapshot_slot == UINT64_MAX) return state;
  Cursor c;
  if ((rc = mdb_cursor_open(txn, accepted_, &c.cursor)) != 0) return lmdb_error("open a cursor on accepted", rc);
  // Entries at or below the snapshot slot are left over (put after a snapshot
  // covering them, not yet dropped by a later one) and not part of the state.
  std::string first = slot_key(state.snapshot_slot + 1);
  k = val(first);
  for (rc = mdb_cursor_get(c.cursor, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c.cursor, &k, &v, MDB_NEXT)) {
    std::string_view key = view(k);
    if (key.size() != kU64Bytes) {
      return Status(Code::kCorrupt,
                    "the accepted database in " + dir_ + " holds a key of " + std::to_string(key.size()) + " bytes");
    }
    Slot slot = read_be(key.data(), kU64Bytes);
    auto body = unseal(key, view(v), kU64Bytes);
    if (!body) {
      return Status(Code::kCorrupt,
                    "the accepted entry of slot " + std::to_string(slot) + " in " + dir_ + " is corrupt");
    }
    Entry& e = state.accepted[slot];
    e.slot = slot;
    e.ballot = read_be(body->data(), kU64Bytes);
    e.value.assign(body->substr(kU64Bytes));
  }
  if (rc != MDB_NOTFOUND) return lmdb_error("read accepted entries in " + dir_, rc);
  return state;
}

Status LmdbPaxosStorage::commit() {
  if (!dirty()) return Status::ok();
  Pending changes = take_pending();
  Status s = journaled_.write_whole([&](MDB_txn* txn) { return write(txn, changes); }, {});
  return s.is_ok() ? journaled_.commit(encode(changes)) : s;
}

Status LmdbPaxosStorage::write(MDB_txn* txn, const Pending& changes) {
  int rc = 0;
  if (changes.promised) {
    std::string body;
    append_be(body, *changes.promised, kU64Bytes);
    std::string record = seal(kPromisedKey, std::move(body));
    MDB_val k = val(kPromisedKey), v = val(record);
    if ((rc = mdb_put(txn, meta_, &k, &v, 0)) != 0) return lmdb_error("write the promised ballot", rc);
  }

  if (changes.first_members) {
    std::string body;
    append_members(body, *changes.first_members);
    std::string record = seal(kFirstMembersKey, std::move(body));
    MDB_val k = val(kFirstMembersKey), v = val(record);
    if ((rc = mdb_put(txn, meta_, &k, &v, 0)) != 0) return lmdb_error("write the first members", rc);
  }

  if (changes.snapshot_slot) {
    std::string body;
    body.reserve(kU64Bytes + changes.snapshot.size() + kChecksumBytes);
    append_be(body, *changes.snapshot_slot, kU64Bytes);
    body += changes.snapshot;
    std::string record = seal(kSnapshotKey, std::move(body));
    MDB_val k = val(kSnapshotKey), v = val(record);
    if ((rc = mdb_put(txn, meta_, &k, &v, 0)) != 0) {
      return lmdb_error("write the snapshot of " + std::to_string(changes.snapshot.size()) + " bytes", rc);
    }
    // Drop every accepted entry the snapshot covers. Keys sort as LMDB sorts
    // them (bytewise), which for 8-byte big-endian slots is numeric order.
    const std::string last = slot_key(*changes.snapshot_slot);
    Cursor c;
    if ((rc = mdb_cursor_open(txn, accepted_, &c.cursor)) != 0) return lmdb_error("open a cursor on accepted", rc);
    MDB_val ck, cv;
    for (rc = mdb_cursor_get(c.cursor, &ck, &cv, MDB_FIRST); rc == 0 && view(ck) <= last;
         rc = mdb_cursor_get(c.cursor, &ck, &cv, MDB_NEXT)) {
      if ((rc = mdb_cursor_del(c.cursor, 0)) != 0) return lmdb_error("drop accepted entries below the snapshot", rc);
    }
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("read accepted entries", rc);
  }

  for (const auto& [slot, entry] : changes.accepted) {
    std::string key = slot_key(slot);
    std::string body;
    body.reserve(kU64Bytes + entry.value.size() + kChecksumBytes);
    append_be(body, entry.ballot, kU64Bytes);
    body += entry.value;
    std::string record = seal(key, std::move(body));
    MDB_val k = val(key), v = val(record);
    if ((rc = mdb_put(txn, accepted_, &k, &v, 0)) != 0) {
      return lmdb_error("write the accepted entry of slot " + std::to_string(slot), rc);
    }
  }

  return Status::ok();
}

// A journal record: flags(1: bit 0 promised, bit 1 snapshot, bit 2 first
// members), [promised(8)], [snapshot slot(8) length(4) snapshot], [member
// count(2), each id(4)], entry count(4), then per entry slot(8) ballot(8)
// length(4) value; big-endian.
std::string LmdbPaxosStorage::encode(const Pending& changes) {
  std::string out;
  out.push_back(static_cast<char>((changes.promised ? 1 : 0) | (changes.snapshot_slot ? 2 : 0) |
                                  (changes.first_members ? 4 : 0)));
  if (changes.promised) append_be(out, *changes.promised, kU64Bytes);
  if (changes.snapshot_slot) {
    append_be(out, *changes.snapshot_slot, kU64Bytes);
    append_be(out, changes.snapshot.size(), 4);
    out += changes.snapshot;
  }
  if (changes.first_members) append_members(out, *changes.first_members);
  append_be(out, changes.accepted.size(), 4);
  for (const auto& [slot, entry] : changes.accepted) {
    append_be(out, slot, kU64Bytes);
    append_be(out, entry.ballot, kU64Bytes);
    append_be(out, entry.value.size(), 4);
    out += entry.value;
  }
  return out;
}

Result<LmdbPaxosStorage::Pending> LmdbPaxosStorage::decode(std::string_view record) {
  const Status cut(Code::kCorrupt, "a record is cut short");
  auto take = [&record](size_t n, std::string_view* out) {
    if (record.size() < n) return false;
    *out = record.substr(0, n);
    record.remove_prefix(n);
    return true;
  };
  auto number = [&take](size_t n, uint64_t* out) {
    std::string_view bytes;
    if (!take(n, &bytes)) return false;
    *out = read_be(bytes.data(), static_cast<int>(n));
    return true;
  };
  Pending changes;
  changes.any = true;
  uint64_t flags = 0, n = 0, count = 0;
  if (!number(1, &flags)) return cut;
  if ((flags & ~uint64_t{7}) != 0) return Status(Code::kCorrupt, "unknown flags " + std::to_string(flags));
  if ((flags & 1) != 0) {
    if (!number(kU64Bytes, &n)) return cut;
    changes.promised = n;
  }
  if ((flags & 2) != 0) {
    std::string_view snapshot;
    if (!number(kU64Bytes, &n) || !number(4, &count) || !take(count, &snapshot)) return cut;
    changes.snapshot_slot = n;
    changes.snapshot.assign(snapshot);
  }
  if ((flags & 4) != 0) {
    changes.first_members = take_members(record);
    if (!changes.first_members) return cut;
  }
  if (!number(4, &count)) return cut;
  for (uint64_t i = 0; i < count; ++i) {
    Entry e;
    uint64_t length = 0;
    std::string_view value;
    if (!number(kU64Bytes, &e.slot) || !number(kU64Bytes, &e.ballot) || !number(4, &length) || !take(length, &value)) {
      return cut;
    }
    e.value.assign(value);
    changes.accepted[e.slot] = std::move(e);
  }
  if (!record.empty())
    return Status(Code::kCorrupt, "a record has " + std::to_string(record.size()) + " bytes too many");
  return changes;
}

}  // namespace palisade::lockgroup
