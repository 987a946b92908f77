// The anti-entropy Merkle tree of one replica (docs/anti-entropy.md): where each
// entry (a key, or a lock's fence floor) sits in the 64-bit position space, what
// its digest is, and the in-memory tree of XOR digests over all entries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wire/replica_protocol.h"
#include "replica/record.h"

namespace palisade::replica {

// Positions: keys and lock names hash with different seeds, so a key and a lock
// of the same name are different entries.
uint64_t key_position(std::string_view key);
uint64_t floor_position(std::string_view lock);

// Digest of a key's versions: every version's timestamp, content hash and state.
uint64_t versions_digest(std::string_view key, const Versions& versions);
// Digest of a record that failed its checksum: of its raw bytes, so that it
// matches no healthy replica's digest.
uint64_t corrupt_digest(std::string_view key, std::string_view record);
uint64_t floor_digest(std::string_view lock, uint64_t floor);
// The key's only version is a committed tombstone: tombstone collection may drop it.
bool lone_tombstone(const Versions& versions);

// The leaf entry of a stored key record (corrupt when it fails its checksum),
// and of a lock's floor record.
wire::LeafEntry key_entry(std::string_view key, std::string_view record);
wire::LeafEntry floor_entry(std::string_view lock, std::string_view record);
bool lone_tombstone(const wire::LeafEntry& entry);

// The levels 0 (root) to wire::kTreeLeafLevel of XOR digests and tombstone
// counts, and every entry with its digest, by leaf: what a leaf lists. It is
// all in memory (built from the records when the store opens) so that a change
// touches no page of the data file beyond the record's own: an index kept in
// LMDB by position dirtied a random page per change, which every checkpoint
// wrote again (docs/storage.md, "Digests"). The levels above the leaves are
// arrays (70,000 nodes); the 16^5 leaves are kept only where there are
// entries, so that an empty or small store does not allocate and clear 40 MB
// each time it opens.
class MerkleTree {
 public:
  using Kind = wire::LeafEntry::Kind;
  struct Entry {
    uint64_t position = 0;
    uint64_t digest = 0;
    std::string name;
    Kind kind = Kind::kKey;
    bool lone_tombstone = false;
  };

  MerkleTree();

  // Sets entry (kind, name) to `digest` and its lone-tombstone flag; digest 0
  // removes it. When it throws (out of memory), nothing changed.
  void set(Kind kind, std::string_view name, uint64_t digest, bool lone_tombstone);
  // As set(), for building the tree from the records: abort() does not undo it.
  void load(Kind kind, std::string_view name, uint64_t digest, bool lone_tombstone);
  wire::TreeNode node(uint32_t level, uint64_t index) const;
  // The entries of leaf `leaf`, by position then kind then name.
  std::vector<Entry> leaf_entries(uint64_t leaf) const;
  size_t entries() const { return entries_; }
  // The changes since the last commit() are kept, or undone.
  void commit() { drop_undo(); }
  void abort();
  void clear();

 private:
  static constexpr size_t kKeptUndo = 4096;  // entries of undo list kept between batches

  struct Leaf {
    wire::TreeNode node;
    std::vector<Entry> entries;  // unordered
  };

  static Entry entry(Kind kind, std::string_view name, uint64_t digest, bool lone_tombstone);
  // Puts `e` in place of the entry of the same kind and name (digest 0:
  // removes it) and returns what was there (digest 0: nothing).
  Entry replace(Entry e);
  void drop_undo();
  // Changes the nodes above `leaf` and the leaf's node.
  void move_nodes(uint64_t position, Leaf& leaf, uint64_t digest_xor, int tombstones);

  std::vector<std::vector<wire::TreeNode>> levels_;  // levels 0 to kTreeLeafLevel - 1
  std::unordered_map<uint64_t, Leaf> leaves_;  // the leaves with entries
  size_t entries_ = 0;
  std::vector<Entry> undo_;  // what each change replaced, oldest first
};

}  // namespace palisade::replica
