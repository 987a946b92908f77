// LmdbStore's anti-entropy side: the "digests" database, which lists every
// entry (key or lock floor) under its 8-byte big-endian position so that a
// leaf is one cursor range, and the in-memory Merkle tree built from it.
#include <lmdb.h>

#include "common/big_endian.h"
#include "replica/lmdb_store.h"
#include "replica/lmdb_util.h"

namespace palisade::replica {
namespace {

using Kind = wire::LeafEntry::Kind;

// One value of "digests": the entries at one position (more than one only when
// 64-bit positions collide), each kind(1) flags(1) name_len(2) name digest(8).
struct IndexEntry {
  Kind kind;
  bool lone_tombstone;
  std::string name;
  uint64_t digest;
};
constexpr uint8_t kLoneTombstoneFlag = 1;

std::vector<IndexEntry> decode_index(std::string_view raw) {
  std::vector<IndexEntry> out;
  size_t pos = 0;
  while (pos + 12 <= raw.size()) {
    size_t name_len = read_be(raw.data() + pos + 2, 2);
    if (pos + 12 + name_len > raw.size()) break;  // damaged: check_digests rebuilds it
    out.push_back({static_cast<Kind>(raw[pos]), (raw[pos + 1] & kLoneTombstoneFlag) != 0,
                   std::string(raw.substr(pos + 4, name_len)), read_be(raw.data() + pos + 4 + name_len, 8)});
    pos += 12 + name_len;
  }
  return out;
}

std::string encode_index(const std::vector<IndexEntry>& entries) {
  std::string out;
  for (const IndexEntry& e : entries) {
    out.push_back(static_cast<char>(e.kind));
    out.push_back(static_cast<char>(e.lone_tombstone ? kLoneTombstoneFlag : 0));
    append_be(out, e.name.size(), 2);
    out.append(e.name);
    append_be(out, e.digest, 8);
  }
  return out;
}

std::string position_key(uint64_t position) {
  std::string k;
  append_be(k, position, 8);
  return k;
}

uint64_t position_of(Kind kind, std::string_view name) {
  return kind == Kind::kKey ? key_position(name) : floor_position(name);
}

}  // namespace

Result<TreeDelta> LmdbStore::index_entry(MDB_txn* txn, Kind kind, std::string_view name, uint64_t digest, bool lone) {
  const uint64_t position = position_of(kind, name);
  std::string pk = position_key(position);
  MDB_val k = val(pk), v;
  int rc = mdb_get(txn, digests_, &k, &v);
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("read digests", rc);
  std::vector<IndexEntry> entries = rc == 0 ? decode_index(view(v)) : std::vector<IndexEntry>{};
  TreeDelta delta{position, digest, lone ? 1 : 0};
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (it->kind != kind || it->name != name) continue;
    delta.digest ^= it->digest;
    delta.tombstones -= it->lone_tombstone ? 1 : 0;
    entries.erase(it);
    break;
  }
  if (digest != 0) entries.push_back({kind, lone, std::string(name), digest});
  if (entries.empty()) {
    rc = mdb_del(txn, digests_, &k, nullptr);
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error("erase digests", rc);
  } else {
    std::string rec = encode_index(entries);
    MDB_val nv = val(rec);
    if ((rc = mdb_put(txn, digests_, &k, &nv, 0)) != 0) return lmdb_error("write digests", rc);
  }
  return delta;
}

template <typename Visit>
Status LmdbStore::scan_entries(Visit visit) {
  for (auto [dbi, kind] : {std::pair{versions_, Kind::kKey}, std::pair{floors_, Kind::kFloor}}) {
    MDB_cursor* cursor = nullptr;
    int rc = mdb_cursor_open(txn(), dbi, &cursor);
    if (rc != 0) return lmdb_error("open cursor", rc);
    MDB_val k, v;
    for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      std::string_view name = view(k);
      visit(kind == Kind::kKey ? key_entry(name, view(v)) : floor_entry(name, view(v)));
    }
    mdb_cursor_close(cursor);
    if (rc != MDB_NOTFOUND) return lmdb_error("scan", rc);
  }
  return Status::ok();
}

Status LmdbStore::check_digests() {
  // What the records say...
  tree_.clear();
  uint64_t entries = 0;
  Status s = scan_entries([&](const wire::LeafEntry& e) {
    tree_.update({position_of(e.kind, e.name), e.digest, lone_tombstone(e) ? 1 : 0});
    ++entries;
  });
  if (!s.is_ok()) return s;
  tree_.commit();
  // ...and what the digests database says.
  MDB_cursor* cursor = nullptr;
  int rc = mdb_cursor_open(txn(), digests_, &cursor);
  if (rc != 0) return lmdb_error("open cursor", rc);
  uint64_t indexed = 0, root = 0;
  uint32_t tombstones = 0;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    for (const IndexEntry& e : decode_index(view(v))) {
      ++indexed;
      root ^= e.digest;
      tombstones += e.lone_tombstone ? 1 : 0;
    }
  }
  mdb_cursor_close(cursor);
  if (rc != MDB_NOTFOUND) return lmdb_error("scan digests", rc);
  wire::TreeNode expected = tree_.node(0, 0);
  if (indexed == entries && root == expected.digest && tombstones == expected.tombstones) return Status::ok();
  // A damaged record, or a directory of format 1: rebuild the database.
  if ((rc = mdb_drop(txn(), digests_, 0)) != 0) return lmdb_error("clear digests", rc);
  Status failed;
  s = scan_entries([&](const wire::LeafEntry& e) {
    auto d = index_entry(txn(), e.kind, e.name, e.digest, lone_tombstone(e));
    if (!d.is_ok() && failed.is_ok()) failed = d.status();
  });
  digests_rebuilt_ = entries;
  return s.is_ok() ? failed : s;
}

Result<wire::TreeNode> LmdbStore::tree_node(uint32_t level, uint64_t index) {
  if (!broken_.is_ok()) return broken_;
  return tree_.node(level, index);
}

Status LmdbStore::list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) {
  if (Status s = begin(); !s.is_ok()) return s;
  MDB_cursor* cursor = nullptr;
  int rc = mdb_cursor_open(txn(), digests_, &cursor);
  if (rc != 0) return lmdb_error("open cursor", rc);
  const uint32_t shift = 64 - wire::kTreeFanoutBits * wire::kTreeLeafLevel;
  std::string first = position_key(leaf << shift);
  MDB_val k = val(first), v;
  Status status;
  for (rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE); rc == 0 && status.is_ok();
       rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    if (k.mv_size != 8 || (read_be(static_cast<const char*>(k.mv_data), 8) >> shift) != leaf) break;
    for (const IndexEntry& e : decode_index(view(v))) {
      MDB_val name = val(e.name), rec;
      int got = mdb_get(txn(), e.kind == Kind::kKey ? versions_ : floors_, &name, &rec);
      if (got == MDB_NOTFOUND) continue;
      if (got != 0) {
        status = lmdb_error("read for leaf", got);
        break;
      }
      out.push_back(e.kind == Kind::kKey ? key_entry(e.name, view(rec)) : floor_entry(e.name, view(rec)));
    }
  }
  mdb_cursor_close(cursor);
  if (status.is_ok() && rc != 0 && rc != MDB_NOTFOUND) status = lmdb_error("scan leaf", rc);
  return status;
}

}  // namespace palisade::replica
