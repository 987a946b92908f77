// LmdbStore's anti-entropy side: the in-memory Merkle tree, built from every
// record when the store opens, and the leaf listings read through it.
#include <lmdb.h>

#include "replica/lmdb_store.h"
#include "replica/lmdb_util.h"
#include "replica/record.h"

namespace palisade::replica {

using Kind = wire::LeafEntry::Kind;

Status LmdbStore::build_tree() {
  tree_.clear();
  for (auto [dbi, kind] : {std::pair{versions_, Kind::kKey}, std::pair{floors_, Kind::kFloor}}) {
    MDB_cursor* cursor = nullptr;
    int rc = mdb_cursor_open(txn(), dbi, &cursor);
    if (rc != 0) return lmdb_error("open cursor", rc);
    MDB_val k, v;
    for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      // A record that fails its checksum gets a digest of its raw bytes.
      const wire::LeafEntry e = kind == Kind::kKey ? key_entry(view(k), view(v)) : floor_entry(view(k), view(v));
      tree_.load(kind, e.name, e.digest, lone_tombstone(e));
      const bool damaged = kind == Kind::kKey ? e.corrupt : !decode_floor_record(view(k), view(v)).is_ok();
      damaged_at_open_ += damaged ? 1 : 0;
    }
    mdb_cursor_close(cursor);
    if (rc != MDB_NOTFOUND) return lmdb_error("scan", rc);
  }
  return Status::ok();
}

Result<wire::TreeNode> LmdbStore::tree_node(uint32_t level, uint64_t index) {
  if (!broken_.is_ok()) return broken_;
  return tree_.node(level, index);
}

Status LmdbStore::list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) {
  if (Status s = begin(); !s.is_ok()) return s;
  for (const MerkleTree::Entry& e : tree_.leaf_entries(leaf)) {
    MDB_val name = val(e.name), rec;
    int rc = mdb_get(txn(), e.kind == Kind::kKey ? versions_ : floors_, &name, &rec);
    if (rc == MDB_NOTFOUND) continue;
    if (rc != 0) return lmdb_error("read for leaf", rc);
    out.push_back(e.kind == Kind::kKey ? key_entry(e.name, view(rec)) : floor_entry(e.name, view(rec)));
  }
  return Status::ok();
}

}  // namespace palisade::replica
