// The anti-entropy Merkle tree of one replica (docs/anti-entropy.md): where each
// entry (a key, or a lock's fence floor) sits in the 64-bit position space, what
// its digest is, and the in-memory tree of XOR digests over all entries.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/replica_protocol.h"
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

// How one change moves the tree: see MerkleTree::update.
struct TreeDelta {
  uint64_t position = 0;
  uint64_t digest = 0;  // old digest XOR new digest
  int tombstones = 0;   // new lone tombstone minus old
};

// The levels 0 (root) to wire::kTreeLeafLevel of XOR digests and tombstone
// counts. Changes are XOR deltas, so undoing a batch applies them again.
class MerkleTree {
 public:
  MerkleTree();

  // Moves an entry from its old digest and lone-tombstone flag to the new ones.
  void update(const TreeDelta& delta);
  wire::TreeNode node(uint32_t level, uint64_t index) const { return levels_[level][index]; }
  // The changes since the last commit() are kept, or undone.
  void commit() { undo_.clear(); }
  void abort();
  void clear();

 private:
  void apply(const TreeDelta& delta, int sign);

  std::vector<std::vector<wire::TreeNode>> levels_;
  std::vector<TreeDelta> undo_;
};

}  // namespace palisade::replica
