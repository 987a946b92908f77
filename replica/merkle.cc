#include "replica/merkle.h"

#include "common/big_endian.h"
#include "common/hash.h"

namespace palisade::replica {
namespace {

// Fixed seeds (part of the protocol: every replica must place entries alike).
constexpr uint64_t kKeySeed = 0x6b6579;        // "key"
constexpr uint64_t kFloorSeed = 0x666c6f6f72;  // "floor"
constexpr uint64_t kCorruptSeed = 0xbad;

}  // namespace

uint64_t key_position(std::string_view key) { return hash64(key, kKeySeed); }
uint64_t floor_position(std::string_view lock) { return hash64(lock, kFloorSeed); }

uint64_t versions_digest(std::string_view key, const Versions& versions) {
  std::string summary;
  summary.reserve(versions.size() * 25);
  for (const wire::Version& v : versions) {
    append_be(summary, v.ts.token, 8);
    append_be(summary, v.ts.hlc, 8);
    append_be(summary, wire::content_hash(v), 8);
    summary.push_back(v.state == wire::VersionState::kCommitted ? 'c' : 'p');
  }
  return hash64(summary, key_position(key));
}

uint64_t corrupt_digest(std::string_view key, std::string_view record) {
  return hash64(record, key_position(key) ^ kCorruptSeed);
}

uint64_t floor_digest(std::string_view lock, uint64_t floor) {
  std::string bytes;
  append_be(bytes, floor, 8);
  return hash64(bytes, floor_position(lock));
}

bool lone_tombstone(const Versions& versions) {
  return versions.size() == 1 && versions[0].tombstone && versions[0].state == wire::VersionState::kCommitted;
}

wire::LeafEntry key_entry(std::string_view key, std::string_view record) {
  wire::LeafEntry e;
  e.name = key;
  auto versions = decode_record(key, record);
  if (!versions.is_ok()) {
    e.corrupt = true;
    e.digest = corrupt_digest(key, record);
    return e;
  }
  e.digest = versions_digest(key, versions.value());
  for (const wire::Version& v : versions.value()) e.heads.push_back(wire::head_of(v));
  return e;
}

wire::LeafEntry floor_entry(std::string_view lock, std::string_view record) {
  wire::LeafEntry e;
  e.kind = wire::LeafEntry::Kind::kFloor;
  e.name = lock;
  auto floor = decode_floor_record(lock, record);
  // A corrupt floor is listed as floor 0 with a digest of its bytes: it differs
  // from its peers' (fences of it answer `corrupt`, as they do without anti-entropy).
  if (!floor.is_ok()) {
    e.digest = corrupt_digest(lock, record);
    return e;
  }
  e.floor = floor.value().floor;
  e.sequencer = floor.value().sequencer;
  e.digest = floor_digest(lock, e.floor);
  return e;
}

bool lone_tombstone(const wire::LeafEntry& e) {
  return e.heads.size() == 1 && e.heads[0].tombstone && e.heads[0].state == wire::VersionState::kCommitted;
}

MerkleTree::MerkleTree() { clear(); }

void MerkleTree::clear() {
  levels_.assign(wire::kTreeLeafLevel + 1, {});
  for (uint32_t l = 0; l <= wire::kTreeLeafLevel; ++l) levels_[l].assign(wire::tree_width(l), {});
  undo_.clear();
}

void MerkleTree::apply(const TreeDelta& d, int sign) {
  for (uint32_t l = 0; l <= wire::kTreeLeafLevel; ++l) {
    wire::TreeNode& n = levels_[l][wire::tree_node_of(d.position, l)];
    n.digest ^= d.digest;
    n.tombstones = static_cast<uint32_t>(static_cast<int64_t>(n.tombstones) + sign * d.tombstones);
  }
}

void MerkleTree::update(const TreeDelta& d) {
  if (d.digest == 0 && d.tombstones == 0) return;
  apply(d, 1);
  undo_.push_back(d);
}

void MerkleTree::abort() {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) apply(*it, -1);
  undo_.clear();
}

}  // namespace palisade::replica
