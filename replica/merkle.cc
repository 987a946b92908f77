#include "replica/merkle.h"

#include <algorithm>
#include <tuple>

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
  leaves_.assign(wire::tree_width(wire::kTreeLeafLevel), {});
  entries_ = 0;
  undo_.clear();
}

void MerkleTree::move_nodes(uint64_t position, uint64_t digest_xor, int tombstones) {
  for (uint32_t l = 0; l <= wire::kTreeLeafLevel; ++l) {
    wire::TreeNode& n = levels_[l][wire::tree_node_of(position, l)];
    n.digest ^= digest_xor;
    n.tombstones = static_cast<uint32_t>(static_cast<int64_t>(n.tombstones) + tombstones);
  }
}

MerkleTree::Entry MerkleTree::replace(Entry e) {
  const uint64_t leaf = wire::tree_node_of(e.position, wire::kTreeLeafLevel);
  std::vector<Entry>& here = leaves_[leaf];
  auto it = std::find_if(here.begin(), here.end(), [&](const Entry& x) {
    return x.position == e.position && x.kind == e.kind && x.name == e.name;
  });
  move_nodes(e.position, (it == here.end() ? 0 : it->digest) ^ e.digest,
             int{e.lone_tombstone} - int{it != here.end() && it->lone_tombstone});
  if (it != here.end()) {
    Entry old = std::move(*it);
    if (e.digest != 0) {
      *it = std::move(e);
    } else {
      here.erase(it);
      --entries_;
    }
    return old;
  }
  Entry none = e;  // digest 0: there was none
  none.digest = 0;
  none.lone_tombstone = false;
  if (e.digest != 0) {
    here.push_back(std::move(e));
    ++entries_;
  }
  return none;
}

void MerkleTree::set(Kind kind, std::string_view name, uint64_t digest, bool lone_tombstone) {
  Entry e;
  e.position = kind == Kind::kKey ? key_position(name) : floor_position(name);
  e.digest = digest;
  e.name = name;
  e.kind = kind;
  e.lone_tombstone = digest != 0 && lone_tombstone;
  Entry old = replace(std::move(e));
  if (old.digest == 0 && digest == 0) return;  // nothing was there, nothing is
  undo_.push_back(std::move(old));
}

std::vector<MerkleTree::Entry> MerkleTree::leaf_entries(uint64_t leaf) const {
  if (leaf >= leaves_.size()) return {};
  std::vector<Entry> out = leaves_[leaf];
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.position, a.kind, a.name) < std::tie(b.position, b.kind, b.name);
  });
  return out;
}

void MerkleTree::abort() {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) replace(std::move(*it));
  undo_.clear();
}

}  // namespace palisade::replica
