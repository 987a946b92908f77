// The durable state of one replica, behind an interface so that the request
// handler runs on LMDB in the daemon and on a simulated disk in tests.
//
// Batches: changes applied since the last commit() are visible to get() and
// fence_floor() at once but are durable only when commit() returns ok; abort()
// drops them. One thread uses a store at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wire/replica_protocol.h"
#include "palisade/status.h"
#include "replica/merkle.h"
#include "replica/record.h"

namespace palisade::replica {

// What one request changes: at most one key and one lock's fence floor.
struct Change {
  std::string_view key{};
  const Versions* put = nullptr;  // the key's new versions (none: the key is erased)
  std::string_view lock{};
  uint64_t floor = 0;  // when non-zero: the lock's new fence floor
  std::string_view floor_sequencer{};  // the sequencer that raised it, kept with it
};

class ReplicaStore {
 public:
  virtual ~ReplicaStore() = default;

  // The key's versions, newest first; empty when it has none; Corrupt when its
  // record fails its checksum; StorageError when the disk fails.
  virtual Result<Versions> get(std::string_view key) = 0;
  // The keys that start with `prefix` and sort after `after` (byte order;
  // empty: from the first), at most `max` of them, the batch's changes
  // included. Only names: no record is read.
  virtual Result<std::vector<std::string>> keys_in(std::string_view prefix, std::string_view after, size_t max) = 0;
  // The lock's fence floor, 0 when it has none.
  virtual Result<uint64_t> fence_floor(std::string_view lock) = 0;
  // Applies all of `change` or, on error, none of it.
  virtual Status apply(const Change& change) = 0;
  // Makes the batch durable (synced to disk) before it returns ok.
  virtual Status commit() = 0;
  virtual void abort() = 0;

  // Anti-entropy (replica/merkle.h): a node of the Merkle tree over the store's
  // keys and floors, the batch's changes included.
  virtual Result<wire::TreeNode> tree_node(uint32_t level, uint64_t index) = 0;
  // Appends the entries of `leaf`, by position, to `out`.
  virtual Status list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) = 0;

  // Counts of keys and floors, and the first `max_floors` floors by lock name,
  // the batch's changes included. Cheap: no record is read beyond those floors.
  virtual Result<wire::ReplicaStats> stats(size_t max_floors) = 0;

  // The config certificate the replica keeps (docs/design.md "The replica
  // set"), empty when none. Apart from the batches: saving it is durable when
  // it returns ok, whatever becomes of the open batch.
  virtual Result<std::string> config_certificate() = 0;
  virtual Status save_config_certificate(std::string_view text) = 0;

  // The digest `list_leaf` gives the key's entry, the batch's changes
  // included: for a record that fails its checksum, the digest of its raw
  // bytes (merkle.h corrupt_digest), which a repair must name to replace it.
  // nullopt when the key has no record. By default found in the key's leaf.
  virtual Result<std::optional<uint64_t>> key_digest(std::string_view key) {
    std::vector<wire::LeafEntry> entries;
    const uint64_t leaf = wire::tree_node_of(key_position(key), wire::kTreeLeafLevel);
    if (Status s = list_leaf(leaf, entries); !s.is_ok()) return s;
    for (const wire::LeafEntry& e : entries) {
      if (e.kind == wire::LeafEntry::Kind::kKey && e.name == key) return std::optional<uint64_t>(e.digest);
    }
    return std::optional<uint64_t>();
  }
};

}  // namespace palisade::replica
