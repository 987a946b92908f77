#include "replica/merkle.h"

#include <algorithm>
#include <tuple>

#include "base/big_endian.h"
#include "wire/hash.h"

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
  levels_.assign(wire::kTreeLeafLevel, {});
  for (uint32_t l = 0; l < wire::kTreeLeafLevel; ++l) levels_[l].assign(wire::tree_width(l), {});
  leaves_.clear();
  entries_ = 0;
  undo_.clear();
}

wire::TreeNode MerkleTree::node(uint32_t level, uint64_t index) const {
  if (level < wire::kTreeLeafLevel) return levels_[level][index];
  auto it = leaves_.find(index);
  return it == leaves_.end() ? wire::TreeNode{} : it->second.node;
}

void MerkleTree::move_nodes(uint64_t position, Leaf& leaf, uint64_t digest_xor, int tombstones) {
  auto move = [&](wire::TreeNode& n) {
    n.digest ^= digest_xor;
    n.tombstones = static_cast<uint32_t>(static_cast<int64_t>(n.tombstones) + tombstones);
  };
  for (uint32_t l = 0; l < wire::kTreeLeafLevel; ++l) move(levels_[l][wire::tree_node_of(position, l)]);
  move(leaf.node);
}

// Allocates (what may throw) before it changes anything.
MerkleTree::Entry MerkleTree::replace(Entry e) {
  const uint64_t position = e.position, digest = e.digest;
  const int lone = e.lone_tombstone ? 1 : 0;
  Entry old;  // digest 0: there was none
  old.position = position;
  old.kind = e.kind;
  old.name = e.name;
  const uint64_t index = wire::tree_node_of(position, wire::kTreeLeafLevel);
  auto slot = leaves_.find(index);
  if (slot == leaves_.end()) {
    if (digest == 0) return old;
    slot = leaves_.try_emplace(index).first;
  }
  Leaf& leaf = slot->second;
  std::vector<Entry>& here = leaf.entries;
  auto it = std::find_if(here.begin(), here.end(), [&](const Entry& x) {
    return x.position == position && x.kind == e.kind && x.name == e.name;
  });
  if (it == here.end()) {
    if (digest != 0) {
      try {
        here.push_back(std::move(e));
      } catch (...) {
        if (here.empty()) leaves_.erase(slot);
        throw;
      }
      ++entries_;
    }
  } else {
    old = std::move(*it);
    if (digest != 0) {
      *it = std::move(e);
    } else {
      here.erase(it);
      --entries_;
    }
  }
  move_nodes(position, leaf, old.digest ^ digest, lone - (old.lone_tombstone ? 1 : 0));
  if (here.empty()) leaves_.erase(slot);
  return old;
}

MerkleTree::Entry MerkleTree::entry(Kind kind, std::string_view name, uint64_t digest, bool lone_tombstone) {
  Entry e;
  e.position = kind == Kind::kKey ? key_position(name) : floor_position(name);
  e.digest = digest;
  e.name = name;
  e.kind = kind;
  e.lone_tombstone = digest != 0 && lone_tombstone;
  return e;
}

void MerkleTree::set(Kind kind, std::string_view name, uint64_t digest, bool lone_tombstone) {
  Entry e = entry(kind, name, digest, lone_tombstone);
  if (undo_.size() == undo_.capacity()) undo_.reserve(std::max<size_t>(64, 2 * undo_.size()));  // no throw after
  Entry old = replace(std::move(e));
  if (old.digest == 0 && digest == 0) return;  // nothing was there, nothing is
  undo_.push_back(std::move(old));
}

void MerkleTree::load(Kind kind, std::string_view name, uint64_t digest, bool lone_tombstone) {
  replace(entry(kind, name, digest, lone_tombstone));
}

void MerkleTree::drop_undo() {
  // A large batch (a copy_many, say) gives its undo list's memory back.
  if (undo_.capacity() > kKeptUndo) {
    std::vector<Entry>().swap(undo_);
  } else {
    undo_.clear();
  }
}

std::vector<MerkleTree::Entry> MerkleTree::leaf_entries(uint64_t leaf) const {
  auto it = leaves_.find(leaf);
  if (it == leaves_.end()) return {};
  std::vector<Entry> out = it->second.entries;
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.position, a.kind, a.name) < std::tie(b.position, b.kind, b.name);
  });
  return out;
}

void MerkleTree::abort() {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) replace(std::move(*it));
  drop_undo();
}

}  // namespace palisade::replica
