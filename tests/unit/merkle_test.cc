// The anti-entropy Merkle tree of a replica (replica/merkle.h): what both
// stores report through tree_node and list_leaf, how LmdbStore keeps it with
// each change, and how it builds it when it opens.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>

#include "base/big_endian.h"
#include "replica/lmdb_store.h"
#include "replica/memory_store.h"
#include "replica/merkle.h"
#include "tests/support/sim_disk.h"
#include "tests/support/raw_lmdb.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using replica::Change;
using replica::LmdbStore;
using replica::ReplicaStore;
using replica::Versions;
using wire::Version;
using wire::VersionState;

Version version(std::string value, uint64_t token, VersionState state = VersionState::kCommitted,
                bool tombstone = false) {
  return Version{FencedTimestamp{token, hlc::make(1'700'000'000'000, 1)}, token ? "L" : "", state, tombstone,
                 std::move(value)};
}

void put(ReplicaStore& s, std::string_view key, const Versions& versions) {
  REQUIRE(s.apply(Change{.key = key, .put = &versions}).is_ok());
}

wire::TreeNode root(ReplicaStore& s) { return s.tree_node(0, 0).value(); }

std::unique_ptr<LmdbStore> open(const TempDir& dir) {
  auto s = LmdbStore::open(dir.path(), {.map_size_bytes = size_t{64} << 20});
  INFO(s.status().to_string());
  REQUIRE(s.is_ok());
  return std::move(s).value();
}

uint64_t leaf_of_key(std::string_view key) { return wire::tree_node_of(replica::key_position(key), wire::kTreeLeafLevel); }

TEST_CASE("merkle: the same contents give the same digests, in whatever order they were written",
          "[anti_entropy][replica]") {
  TempDir d1, d2;
  auto a = open(d1);
  replica::MemoryStore b;
  CHECK(root(*a) == root(b));
  CHECK(root(*a).digest == 0);
  for (int i = 0; i < 50; ++i) put(*a, "k" + std::to_string(i), {version("v", 1)});
  for (int i = 49; i >= 0; --i) put(b, "k" + std::to_string(i), {version("v", 1)});
  REQUIRE(a->commit().is_ok());
  REQUIRE(b.commit().is_ok());
  CHECK(root(*a) == root(b));
  CHECK(root(*a).digest != 0);
}

TEST_CASE("merkle: one changed key changes exactly the nodes on its path", "[anti_entropy][replica]") {
  TempDir d1, d2;
  auto a = open(d1);
  auto b = open(d2);
  for (int i = 0; i < 200; ++i) {
    put(*a, "k" + std::to_string(i), {version("v", 1)});
    put(*b, "k" + std::to_string(i), {version("v", 1)});
  }
  put(*b, "k7", {version("v", 1, VersionState::kPending), version("old", 0)});  // a pending version more
  const uint64_t position = replica::key_position("k7");
  for (uint32_t level = 0; level <= wire::kTreeLeafLevel; ++level) {
    const uint64_t on_path = wire::tree_node_of(position, level);
    INFO("level " << level);
    CHECK(a->tree_node(level, on_path).value() != b->tree_node(level, on_path).value());
    if (level > 0) {
      const uint64_t beside = on_path ^ 1;  // a sibling
      CHECK(a->tree_node(level, beside).value() == b->tree_node(level, beside).value());
    }
  }
}

TEST_CASE("merkle: an aborted batch leaves the tree as it was, and a committed one survives reopening",
          "[anti_entropy][replica]") {
  TempDir dir;
  auto s = open(dir);
  put(*s, "a", {version("1", 1)});
  REQUIRE(s->commit().is_ok());
  const wire::TreeNode before = root(*s);
  put(*s, "b", {version("2", 1)});
  CHECK(root(*s) != before);  // the batch's changes are visible within it
  s->abort();
  CHECK(root(*s) == before);
  put(*s, "c", {version("3", 2)});
  REQUIRE(s->commit().is_ok());
  const wire::TreeNode after = root(*s);
  s.reset();
  s = open(dir);
  CHECK(root(*s) == after);
  CHECK(s->damaged_at_open() == 0);
}

TEST_CASE("merkle: a key's only committed tombstone is counted up the tree", "[anti_entropy][replica]") {
  TempDir dir;
  auto s = open(dir);
  put(*s, "gone", {version("", 3, VersionState::kCommitted, true)});
  put(*s, "pending-gone", {version("", 4, VersionState::kPending, true)});
  put(*s, "kept", {version("v", 3)});
  CHECK(root(*s).tombstones == 1);
  CHECK(s->tree_node(wire::kTreeLeafLevel, leaf_of_key("gone")).value().tombstones == 1);
  put(*s, "gone", {});
  CHECK(root(*s).tombstones == 0);
}

TEST_CASE("merkle: a leaf lists its keys with their version heads, and floors with their sequencer",
          "[anti_entropy][replica]") {
  TempDir dir;
  auto s = open(dir);
  const Version pending = version("new", 5, VersionState::kPending);
  const Version committed = version("old", 4);
  put(*s, "k", {pending, committed});
  REQUIRE(s->apply(Change{.lock = "L", .floor = 5, .floor_sequencer = "ps2.seq"}).is_ok());
  std::vector<wire::LeafEntry> entries;
  REQUIRE(s->list_leaf(leaf_of_key("k"), entries).is_ok());
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].name == "k");
  CHECK(entries[0].heads == std::vector<wire::VersionHead>{wire::head_of(pending), wire::head_of(committed)});
  CHECK(entries[0].digest == replica::versions_digest("k", {pending, committed}));
  entries.clear();
  REQUIRE(s->list_leaf(wire::tree_node_of(replica::floor_position("L"), wire::kTreeLeafLevel), entries).is_ok());
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].kind == wire::LeafEntry::Kind::kFloor);
  CHECK(entries[0].floor == 5);
  CHECK(entries[0].sequencer == "ps2.seq");
}

TEST_CASE("merkle: opening finds a record damaged on disk and lists it as corrupt", "[anti_entropy][replica]") {
  TempDir dir;
  wire::TreeNode healthy;
  {
    auto s = open(dir);
    put(*s, "k", {version("value", 1)});
    put(*s, "other", {version("x", 1)});
    REQUIRE(s->commit().is_ok());
    healthy = root(*s);
  }
  {
    test::RawLmdb raw(dir.path());
    std::string rec = raw.get("versions", "k").value();
    rec[rec.size() - 9] ^= 0x01;
    raw.put("versions", "k", rec);
    raw.commit();
  }
  auto s = open(dir);
  CHECK(s->damaged_at_open() == 1);
  CHECK(root(*s) != healthy);
  std::vector<wire::LeafEntry> entries;
  REQUIRE(s->list_leaf(leaf_of_key("k"), entries).is_ok());
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].corrupt);
  CHECK(entries[0].heads.empty());
  // A repair replaces it: the tree matches the healthy one again.
  put(*s, "k", {version("value", 1)});
  CHECK(root(*s) == healthy);
}

TEST_CASE("merkle: an aborted batch lists what it listed before, erased keys included", "[anti_entropy][replica]") {
  TempDir dir;
  auto s = open(dir);
  put(*s, "kept", {version("1", 1)});
  put(*s, "erased", {version("1", 1)});
  REQUIRE(s->commit().is_ok());
  const wire::TreeNode before = root(*s);
  put(*s, "erased", {});
  put(*s, "kept", {version("2", 2, VersionState::kPending), version("1", 1)});
  put(*s, "added", {version("3", 3)});
  std::vector<wire::LeafEntry> entries;
  REQUIRE(s->list_leaf(leaf_of_key("erased"), entries).is_ok());
  CHECK(entries.empty());
  s->abort();
  CHECK(root(*s) == before);
  for (std::string key : {"kept", "erased"}) {
    entries.clear();
    REQUIRE(s->list_leaf(leaf_of_key(key), entries).is_ok());
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].name == key);
    CHECK(entries[0].digest == replica::versions_digest(key, {version("1", 1)}));
  }
  entries.clear();
  REQUIRE(s->list_leaf(leaf_of_key("added"), entries).is_ok());
  CHECK(entries.empty());
}

TEST_CASE("merkle: an aborted batch undoes each entry's changes newest first", "[anti_entropy][replica]") {
  TempDir dir;
  auto s = open(dir);
  put(*s, "gone", {version("", 3, VersionState::kCommitted, true)});  // a lone tombstone
  REQUIRE(s->commit().is_ok());
  const wire::TreeNode before = root(*s);
  REQUIRE(before.tombstones == 1);
  put(*s, "k", {version("1", 1)});  // added, changed, erased: undone, it was never there
  put(*s, "k", {version("2", 2, VersionState::kPending), version("1", 1)});
  put(*s, "k", {});
  put(*s, "gone", {});  // tombstone collection
  REQUIRE(s->apply(Change{.key = "both", .put = nullptr, .lock = "L", .floor = 7}).is_ok());
  const Versions v = {version("x", 7)};
  REQUIRE(s->apply(Change{.key = "both", .put = &v, .lock = "L", .floor = 8}).is_ok());
  CHECK(root(*s).tombstones == 0);
  s->abort();
  CHECK(root(*s) == before);
  std::vector<wire::LeafEntry> entries;
  REQUIRE(s->list_leaf(leaf_of_key("gone"), entries).is_ok());
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].name == "gone");
  for (const auto& [leaf, name] : {std::pair{leaf_of_key("k"), "k"}, std::pair{leaf_of_key("both"), "both"},
                                   std::pair{wire::tree_node_of(replica::floor_position("L"), wire::kTreeLeafLevel), "L"}}) {
    entries.clear();
    REQUIRE(s->list_leaf(leaf, entries).is_ok());
    for (const auto& e : entries) CHECK(e.name != name);
  }
}

// Every node of every level, and every listed leaf entry, of a store.
std::pair<std::vector<wire::TreeNode>, std::vector<wire::LeafEntry>> whole_tree(ReplicaStore& s) {
  std::vector<wire::TreeNode> nodes;
  std::vector<wire::LeafEntry> entries;
  for (uint32_t level = 0; level <= wire::kTreeLeafLevel; ++level) {
    for (uint64_t i = 0; i < wire::tree_width(level); ++i) {
      nodes.push_back(s.tree_node(level, i).value());
      if (level == wire::kTreeLeafLevel && nodes.back().digest != 0) REQUIRE(s.list_leaf(i, entries).is_ok());
    }
  }
  return {nodes, entries};
}

// Makes the data directory `dir` one of storage format `format` that kept its
// index of entries in LMDB (formats 2 and 3 did), as a stale `digests` database.
void plant_digests_database(const std::string& dir, const std::string& format) {
  test::RawLmdb raw(dir);
  raw.put("meta", "format", format);
  std::string position;
  append_be(position, replica::key_position("k1"), 8);
  raw.put("digests", position, "stale");
  raw.commit();
}

TEST_CASE("merkle: the tree a store builds from its data file and journal is the one it kept, failed batches aside",
          "[anti_entropy][replica]") {
  TempDir dir, image;
  auto s = open(dir);
  for (int i = 0; i < 20; ++i) put(*s, "k" + std::to_string(i), {version("v", 1)});
  REQUIRE(s->apply(Change{.lock = "L", .floor = 3, .floor_sequencer = "ps2.seq"}).is_ok());
  REQUIRE(s->commit().is_ok());
  REQUIRE(s->checkpoint().is_ok());  // the batches below are only in the journal
  put(*s, "k1", {version("w", 2, VersionState::kPending), version("v", 1)});
  put(*s, "k2", {});
  put(*s, "t", {version("", 2, VersionState::kCommitted, true)});
  REQUIRE(s->commit().is_ok());
  put(*s, "k3", {});
  put(*s, "lost", {version("x", 3)});
  test::fail_next_syncs(1);
  REQUIRE_FALSE(s->commit().is_ok());  // the journal's sync failed: the batch is gone
  const auto kept = whole_tree(*s);
  CHECK(kept.second.size() == 21);  // 20 keys, one erased, one tombstone added, and the floor
  test::copy_crash_image(dir.path(), image.path());
  plant_digests_database(image.path(), "3");  // a format-3 directory of before the index moved to memory
  auto reopened = open(image);
  CHECK(whole_tree(*reopened) == kept);
  CHECK(reopened->damaged_at_open() == 0);
  reopened->abort();  // what the daemon does after opening: the tree built from the records stays
  CHECK(whole_tree(*reopened) == kept);
  reopened.reset();
  test::RawLmdb raw(image.path());
  CHECK_FALSE(raw.exists("digests"));
  CHECK(raw.get("meta", "format") == "4");  // upgraded in place: the journal's batches above were kept
}

TEST_CASE("merkle: a leaf lists all its entries, in position order", "[anti_entropy][replica]") {
  TempDir dir;
  auto s = open(dir);
  // Keys until one leaf holds three of them (of 2^20 leaves: some 20,000 names).
  std::map<uint64_t, std::vector<std::string>> by_leaf;
  std::vector<std::string> same_leaf;
  for (int i = 0; same_leaf.empty(); ++i) {
    std::string key = "k" + std::to_string(i);
    auto& here = by_leaf[leaf_of_key(key)];
    here.push_back(key);
    if (here.size() == 3) same_leaf = here;
  }
  std::sort(same_leaf.begin(), same_leaf.end(),
            [](const std::string& a, const std::string& b) { return replica::key_position(a) < replica::key_position(b); });
  for (auto it = same_leaf.rbegin(); it != same_leaf.rend(); ++it) put(*s, *it, {version(*it, 1)});  // last first
  REQUIRE(s->commit().is_ok());
  std::vector<wire::LeafEntry> entries;
  REQUIRE(s->list_leaf(leaf_of_key(same_leaf[0]), entries).is_ok());
  REQUIRE(entries.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(entries[i].name == same_leaf[i]);
}

TEST_CASE("merkle: a leaf beyond the tree lists nothing", "[anti_entropy][replica]") {
  replica::MerkleTree tree;
  tree.set(wire::LeafEntry::Kind::kKey, "k", 1, false);
  CHECK(tree.leaf_entries(leaf_of_key("k")).size() == 1);
  CHECK(tree.leaf_entries(wire::tree_width(wire::kTreeLeafLevel)).empty());
}

TEST_CASE("merkle: a data dir of an older format is upgraded: its digests database dropped, the tree built",
          "[anti_entropy][replica]") {
  TempDir dir;
  wire::TreeNode expected;
  {
    auto s = open(dir);
    put(*s, "k", {version("value", 1)});
    REQUIRE(s->apply(Change{.lock = "L", .floor = 3}).is_ok());
    REQUIRE(s->commit().is_ok());
    expected = root(*s);
  }
  plant_digests_database(dir.path(), "2");  // format 2 had no journal
  auto s = open(dir);
  CHECK(root(*s) == expected);
  std::vector<wire::LeafEntry> entries;
  REQUIRE(s->list_leaf(leaf_of_key("k"), entries).is_ok());
  CHECK(entries.size() == 1);
  s.reset();
  test::RawLmdb raw(dir.path());
  CHECK(raw.get("meta", "format") == "4");
  CHECK_FALSE(raw.exists("digests"));
}

}  // namespace
}  // namespace palisade
