// The ReplicaStore contract (replica/store.h), run against both stores: the
// in-memory one the simulator uses and the LMDB one the daemon uses. Then the
// LMDB-only promises (format check, on-disk corruption) and the record codec.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "wire/hash.h"
#include "storage/journal.h"
#include "replica/lmdb_store.h"
#include "wire/config_certificate.h"
#include "replica/memory_store.h"
#include "replica/merkle.h"
#include "replica/record.h"
#include "tests/support/sim_disk.h"
#include "tests/support/raw_lmdb.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using replica::Change;
using replica::LmdbStore;
using replica::MemoryStore;
using replica::ReplicaStore;
using replica::Versions;
using wire::Version;
using wire::VersionState;

using namespace std::string_literals;

Version with_seq(Version v, std::string sequencer) {
  v.sequencer = std::move(sequencer);
  return v;
}

Version version(std::string value, uint64_t token = 1, std::string lock = "L",
                VersionState state = VersionState::kPending, bool tombstone = false) {
  return Version{FencedTimestamp{token, hlc::make(1'700'000'000'000, token)}, std::move(lock), state, tombstone,
                 std::move(value)};
}

// Stores `v` as the key's one version.
Status put(ReplicaStore& s, std::string_view key, const Version& v, uint64_t floor = 0) {
  const Versions versions{v};
  return s.apply(Change{.key = key, .put = &versions, .lock = v.lock, .floor = floor});
}
Status put_all(ReplicaStore& s, std::string_view key, const Versions& versions) {
  return s.apply(Change{.key = key, .put = &versions});
}
Status erase(ReplicaStore& s, std::string_view key) {
  const Versions none;
  return s.apply(Change{.key = key, .put = &none});
}
Status raise_floor(ReplicaStore& s, std::string_view lock, uint64_t floor) {
  return s.apply(Change{.lock = lock, .floor = floor});
}

// The stored versions of `key`, which must be readable.
Versions stored(ReplicaStore& s, std::string_view key) {
  auto r = s.get(key);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return r.value();
}

uint64_t floor_of(ReplicaStore& s, std::string_view lock) {
  auto r = s.fence_floor(lock);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return r.value();
}

// A store "small" enough that a 100 KiB value does not fit, yet a few small ones do.
constexpr size_t kHugeValueBytes = 100 * 1024;

// Each fixture owns a store and can "reopen" it as after a crash: the in-memory
// one keeps its committed state; the LMDB one is opened from a copy of its
// files taken while it was open (its journal replayed), then the copy is used.
struct MemoryFixture {
  explicit MemoryFixture(bool tight = false) {
    if (tight) mem.set_capacity_bytes(16 * 1024);
  }
  ReplicaStore& store() { return mem; }
  void reopen() { mem.crash(); }
  // Damages the committed record of `key` (one bit of it).
  void corrupt(std::string_view key) { REQUIRE(mem.corrupt(key)); }

  MemoryStore mem;
};

struct LmdbFixture {
  explicit LmdbFixture(bool tight = false) : options{tight ? size_t{64} << 10 : size_t{64} << 20} { open(); }
  ReplicaStore& store() { return *lmdb; }
  void open() {
    auto r = LmdbStore::open(dir->path(), options);
    INFO(r.status().to_string());
    REQUIRE(r.is_ok());
    lmdb = std::move(r).value();
  }
  void reopen() {
    auto image = std::make_unique<TempDir>();
    test::copy_crash_image(dir->path(), image->path());
    lmdb.reset();
    dir = std::move(image);
    open();
  }
  // Flips one byte inside the stored value, on disk, behind the store's back.
  void corrupt(std::string_view key) {
    lmdb.reset();  // a clean close: checkpointed into LMDB
    {
      test::RawLmdb raw(dir->path());
      auto rec = raw.get("versions", key);
      REQUIRE(rec);
      REQUIRE(rec->size() > 8);
      std::string damaged = *rec;
      damaged[damaged.size() - 9] ^= 0x01;  // the last value byte, just before the checksum
      raw.put("versions", key, damaged);
      raw.commit();
    }
    open();
  }

  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>();
  LmdbStore::Options options;
  std::unique_ptr<LmdbStore> lmdb;
};

#define STORE_TEST(name) TEMPLATE_TEST_CASE(name, "[replica][store]", MemoryFixture, LmdbFixture)

STORE_TEST("store: an empty store has no versions and zero floors") {
  TestType f;
  CHECK(stored(f.store(), "k").empty());
  CHECK(floor_of(f.store(), "L") == 0);
  CHECK(f.store().commit().is_ok());  // an empty batch commits
  f.store().abort();                  // and aborts
  CHECK(stored(f.store(), "k").empty());
}

STORE_TEST("store: put, get, overwrite and erase") {
  TestType f;
  ReplicaStore& s = f.store();
  const Version a = version("alpha", 1);
  const Version b = version("beta", 2, "M", VersionState::kCommitted);
  const Version tomb = version("", 3, "", VersionState::kCommitted, /*tombstone=*/true);
  const std::string binary_key = "k\0ey\xff"s;
  const Version binary = version("v\0al\x80ue"s, 4);

  REQUIRE(put(s, "a", a).is_ok());
  REQUIRE(put(s, "t", tomb).is_ok());
  REQUIRE(put(s, binary_key, binary).is_ok());
  REQUIRE(s.commit().is_ok());
  CHECK(stored(s, "a") == Versions{a});
  CHECK(stored(s, "t") == Versions{tomb});
  CHECK(stored(s, binary_key) == Versions{binary});
  CHECK(stored(s, "k\0ey"s).empty());  // keys are bytes, not C strings

  REQUIRE(put(s, "a", b).is_ok());  // the store keeps one version per key: the last put
  CHECK(stored(s, "a") == Versions{b});
  REQUIRE(erase(s, "t").is_ok());
  REQUIRE(erase(s, "never-stored").is_ok());
  CHECK(stored(s, "t").empty());
  REQUIRE(s.commit().is_ok());

  f.reopen();
  CHECK(stored(f.store(), "a") == Versions{b});
  CHECK(stored(f.store(), "t").empty());
  CHECK(stored(f.store(), binary_key) == Versions{binary});
}

STORE_TEST("store: keys_in lists a prefix's keys in byte order, after a key, the batch's changes included") {
  TestType f;
  ReplicaStore& s = f.store();  // until the reopen below
  auto keys = [&](std::string_view prefix, std::string_view after = "", size_t max = 100) {
    auto got = f.store().keys_in(prefix, after, max);
    REQUIRE(got.is_ok());
    return got.value();
  };
  using Keys = std::vector<std::string>;
  for (const std::string& k : {"b"s, "a/2"s, "a/1"s, "a"s, "a/\xff"s, "a0"s, "a/1/x"s}) {
    REQUIRE(put(s, k, version(k, 1)).is_ok());
  }
  REQUIRE(s.commit().is_ok());
  CHECK(keys("a/") == Keys{"a/1", "a/1/x", "a/2", "a/\xff"});  // bytes, not signed chars: 0xff last
  CHECK(keys("a/", "a/1") == Keys{"a/1/x", "a/2", "a/\xff"});
  CHECK(keys("a/", "a/1/x", 1) == Keys{"a/2"});
  CHECK(keys("a/", "a/\xff").empty());
  CHECK(keys("a/", "a") == Keys{"a/1", "a/1/x", "a/2", "a/\xff"});  // `after` before the prefix
  CHECK(keys("a/", "zzz").empty());
  CHECK(keys("") == Keys{"a", "a/1", "a/1/x", "a/2", "a/\xff", "a0", "b"});
  CHECK(keys("", "a0") == Keys{"b"});
  CHECK(keys("c").empty());
  CHECK(keys("a/", "", 0).empty());
  // An open batch: a new key, an erased one.
  REQUIRE(put(s, "a/15", version("new", 2)).is_ok());
  REQUIRE(erase(s, "a/2").is_ok());
  CHECK(keys("a/") == Keys{"a/1", "a/1/x", "a/15", "a/\xff"});
  CHECK(keys("a/", "a/1/x", 2) == Keys{"a/15", "a/\xff"});
  s.abort();
  CHECK(keys("a/") == Keys{"a/1", "a/1/x", "a/2", "a/\xff"});
  f.reopen();
  CHECK(keys("a/1") == Keys{"a/1", "a/1/x"});
}

STORE_TEST("store: a key's versions are stored together, in order") {
  TestType f;
  const Versions versions{version("newest", 9, "L"), version("", 8, "L", VersionState::kPending, true),
                          version("committed", 7, "M", VersionState::kCommitted)};
  REQUIRE(put_all(f.store(), "k", versions).is_ok());
  CHECK(stored(f.store(), "k") == versions);
  REQUIRE(f.store().commit().is_ok());
  f.reopen();
  CHECK(stored(f.store(), "k") == versions);
  const Versions fewer{versions[2]};
  REQUIRE(put_all(f.store(), "k", fewer).is_ok());  // a put replaces all of them
  REQUIRE(f.store().commit().is_ok());
  f.reopen();
  CHECK(stored(f.store(), "k") == fewer);
}

STORE_TEST("store: fence floors") {
  TestType f;
  ReplicaStore& s = f.store();
  REQUIRE(raise_floor(s, "L", 5).is_ok());
  REQUIRE(raise_floor(s, "max", UINT64_MAX).is_ok());
  const Version v = version("x", 7, "M");
  REQUIRE(put(s, "k", v, /*floor=*/7).is_ok());  // one change: a version and its lock's floor
  CHECK(floor_of(s, "L") == 5);
  CHECK(floor_of(s, "M") == 7);
  CHECK(floor_of(s, "N") == 0);
  REQUIRE(s.commit().is_ok());
  REQUIRE(raise_floor(s, "L", 9).is_ok());
  REQUIRE(put(s, "k2", version("y", 0, ""), /*floor=*/0).is_ok());  // floor 0: the floor is not touched
  REQUIRE(s.commit().is_ok());

  f.reopen();
  CHECK(floor_of(f.store(), "L") == 9);
  CHECK(floor_of(f.store(), "M") == 7);
  CHECK(floor_of(f.store(), "max") == UINT64_MAX);
  CHECK(floor_of(f.store(), "") == 0);
}

STORE_TEST("store: a batch is visible before commit and abort drops it") {
  TestType f;
  const Version committed = version("committed", 1);
  REQUIRE(put(f.store(), "k", committed, 1).is_ok());
  REQUIRE(f.store().commit().is_ok());

  const Version pending = version("in batch", 2);
  REQUIRE(put(f.store(), "k", pending, 2).is_ok());
  REQUIRE(put(f.store(), "new", pending).is_ok());
  REQUIRE(erase(f.store(), "k").is_ok());
  REQUIRE(put(f.store(), "k", pending).is_ok());
  REQUIRE(raise_floor(f.store(), "other", 3).is_ok());
  CHECK(stored(f.store(), "k") == Versions{pending});
  CHECK(stored(f.store(), "new") == Versions{pending});
  CHECK(floor_of(f.store(), "L") == 2);
  CHECK(floor_of(f.store(), "other") == 3);

  f.store().abort();
  CHECK(stored(f.store(), "k") == Versions{committed});
  CHECK(stored(f.store(), "new").empty());
  CHECK(floor_of(f.store(), "L") == 1);
  CHECK(floor_of(f.store(), "other") == 0);
  f.reopen();
  CHECK(stored(f.store(), "k") == Versions{committed});
  CHECK(stored(f.store(), "new").empty());
  CHECK(floor_of(f.store(), "L") == 1);
}

STORE_TEST("store: commit persists, the open batch is lost when the store goes away") {
  TestType f;
  std::vector<Version> versions;
  for (int i = 0; i < 50; ++i) versions.push_back(version("value " + std::to_string(i), uint64_t(i) + 1));
  for (int i = 0; i < 50; ++i) REQUIRE(put(f.store(), "key" + std::to_string(i), versions[i], uint64_t(i) + 1).is_ok());
  REQUIRE(f.store().commit().is_ok());
  REQUIRE(put(f.store(), "uncommitted", versions[0]).is_ok());
  REQUIRE(raise_floor(f.store(), "L", 1000).is_ok());

  f.reopen();
  for (int i = 0; i < 50; ++i) CHECK(stored(f.store(), "key" + std::to_string(i)) == Versions{versions[i]});
  CHECK(stored(f.store(), "uncommitted").empty());
  CHECK(floor_of(f.store(), "L") == 50);
}

STORE_TEST("store: a failed apply leaves the earlier changes of its batch intact and committable") {
  TestType f(/*tight=*/true);
  ReplicaStore& s = f.store();
  const Version small = version("small", 1);
  REQUIRE(put(s, "before", small, 1).is_ok());
  REQUIRE(s.commit().is_ok());

  const Version also_small = version("also small", 2);
  REQUIRE(put(s, "in-batch", also_small, 2).is_ok());
  const Version huge = version(std::string(kHugeValueBytes, 'h'), 9, "H");
  Status failed = put(s, "huge", huge, 9);
  INFO(failed.to_string());
  REQUIRE(failed.code() == Code::kStorageError);
  // All or nothing: neither the version nor the floor of the failed change.
  CHECK(stored(s, "huge").empty());
  CHECK(floor_of(s, "H") == 0);
  // The rest of the batch is untouched and the store still takes small changes.
  CHECK(stored(s, "in-batch") == Versions{also_small});
  CHECK(floor_of(s, "L") == 2);
  REQUIRE(raise_floor(s, "after", 4).is_ok());
  Status committed = s.commit();
  INFO(committed.to_string());
  REQUIRE(committed.is_ok());

  f.reopen();
  CHECK(stored(f.store(), "before") == Versions{small});
  CHECK(stored(f.store(), "in-batch") == Versions{also_small});
  CHECK(stored(f.store(), "huge").empty());
  CHECK(floor_of(f.store(), "L") == 2);
  CHECK(floor_of(f.store(), "after") == 4);
  CHECK(floor_of(f.store(), "H") == 0);
}

STORE_TEST("store: a corrupt record is reported, never returned, and can be overwritten") {
  TestType f;
  const Version a = version("the value of a", 1);
  const Version b = version("the value of b", 1);
  REQUIRE(put(f.store(), "a", a).is_ok());
  REQUIRE(put(f.store(), "b", b).is_ok());
  REQUIRE(f.store().commit().is_ok());
  f.corrupt("a");

  auto r = f.store().get("a");
  REQUIRE(r.code() == Code::kCorrupt);
  CHECK_THAT(r.status().message(), Catch::Contains("'a'"));
  CHECK(stored(f.store(), "b") == Versions{b});
  // Repair: a new version replaces the damaged record.
  const Version repaired = version("repaired", 2);
  REQUIRE(put(f.store(), "a", repaired).is_ok());
  REQUIRE(f.store().commit().is_ok());
  f.reopen();
  CHECK(stored(f.store(), "a") == Versions{repaired});
}

// What a repair must name to replace a corrupt record (handler.cc): the digest
// the key's leaf lists, of the raw bytes when the record is damaged.
STORE_TEST("store: key_digest is the digest the key's leaf lists, damaged or not") {
  TestType f;
  auto listed = [&](std::string_view key) {
    std::vector<wire::LeafEntry> leaf;
    REQUIRE(f.store().list_leaf(wire::tree_node_of(replica::key_position(key), wire::kTreeLeafLevel), leaf).is_ok());
    for (const wire::LeafEntry& e : leaf) {
      if (e.kind == wire::LeafEntry::Kind::kKey && e.name == key) return std::optional<wire::LeafEntry>(e);
    }
    return std::optional<wire::LeafEntry>();
  };
  auto digest = [&](std::string_view key) {
    auto d = f.store().key_digest(key);
    INFO(d.status().to_string());
    REQUIRE(d.is_ok());
    return d.value();
  };
  CHECK_FALSE(digest("a"));
  const Version a = version("the value of a", 1);
  REQUIRE(put(f.store(), "a", a).is_ok());
  CHECK(digest("a") == replica::versions_digest("a", Versions{a}));  // the batch's change, before it commits
  REQUIRE(f.store().commit().is_ok());
  const std::optional<uint64_t> healthy = digest("a");
  CHECK(healthy == replica::versions_digest("a", Versions{a}));
  f.corrupt("a");
  const std::optional<uint64_t> damaged = digest("a");
  REQUIRE(damaged);
  CHECK(damaged != healthy);
  auto entry = listed("a");
  REQUIRE(entry);
  CHECK(entry->corrupt);
  CHECK(entry->digest == *damaged);
  CHECK(digest("a") == damaged);  // the same damage, the same digest
  REQUIRE(erase(f.store(), "a").is_ok());
  CHECK_FALSE(digest("a"));
}

// ---- LMDB only ----

TEST_CASE("LmdbStore: a data dir of another storage format is refused and left alone", "[replica][store]") {
  TempDir dir;
  {
    auto s = LmdbStore::open(dir.path(), {});
    REQUIRE(s.is_ok());
    const Version v = version("kept");
    REQUIRE(put(*s.value(), "k", v).is_ok());
    REQUIRE(s.value()->commit().is_ok());
  }
  {
    test::RawLmdb raw(dir.path());
    REQUIRE(raw.get("meta", "format") == "4");
    raw.put("meta", "format", "5");
    raw.commit();
  }
  auto refused = LmdbStore::open(dir.path(), {});
  REQUIRE(refused.code() == Code::kStorageError);
  CHECK_THAT(refused.status().message(),
             Catch::Contains(dir.path()) && Catch::Contains("format '5'") && Catch::Contains("reads formats 1 to 4"));
  test::RawLmdb raw(dir.path());
  CHECK(raw.get("meta", "format") == "5");
  CHECK(raw.get("versions", "k").has_value());
}

TEST_CASE("LmdbStore: what a replica dropped survives the journal's replay and a checkpoint", "[replica][store]") {
  TempDir dir;
  Versions v{version("c", 9, "L", VersionState::kCommitted)};
  v.dropped = {FencedTimestamp{0, 4}, FencedTimestamp{7, 8}};
  v.dropped_older = FencedTimestamp{6, 2};
  {
    auto s = LmdbStore::open(dir.path(), {});
    REQUIRE(s.is_ok());
    REQUIRE(s.value()->apply(Change{.key = "k", .put = &v}).is_ok());
    REQUIRE(s.value()->commit().is_ok());  // in the journal only: no checkpoint
  }
  for (int pass = 0; pass < 2; ++pass) {
    INFO((pass == 0 ? "replayed from the journal" : "after a checkpoint"));
    auto s = LmdbStore::open(dir.path(), {});
    REQUIRE(s.is_ok());
    auto got = s.value()->get("k");
    REQUIRE(got.is_ok());
    CHECK(got.value() == v);
    CHECK(got.value().dropped_up_to(7) == FencedTimestamp{7, 8});
    s.value()->abort();
    REQUIRE(s.value()->checkpoint().is_ok());
  }
}

TEST_CASE("LmdbStore: a batch that reads first, then writes, then reads sees its own change", "[replica][store]") {
  TempDir dir;
  const replica::Versions one = {version("v")};
  {
    auto s = LmdbStore::open(dir.path(), {});
    REQUIRE(s.is_ok());
    REQUIRE(s.value()->get("k").value().empty());                                 // a read-only transaction
    REQUIRE(s.value()->apply(replica::Change{.key = "k", .put = &one}).is_ok());  // now a write transaction
    CHECK(s.value()->get("k").value() == one);
    REQUIRE(s.value()->commit().is_ok());
    CHECK(s.value()->get("k").value() == one);
    s.value()->abort();
  }
  auto s = LmdbStore::open(dir.path(), {});
  CHECK(s.value()->get("k").value() == one);
}

// The journal (docs/storage.md): a commit is durable in DIR/journal; LMDB's data
// file catches up at checkpoints.
TEST_CASE("LmdbStore: committed batches live in the journal until a checkpoint", "[replica][store][journal]") {
  TempDir dir, image;
  const replica::Versions one = {version("v")};
  auto s = LmdbStore::open(dir.path(), {});
  REQUIRE(s.is_ok());
  REQUIRE(s.value()->apply(replica::Change{.key = "k", .put = &one, .lock = "L", .floor = 4}).is_ok());
  REQUIRE(s.value()->commit().is_ok());
  test::copy_crash_image(dir.path(), image.path());
  {
    test::RawLmdb raw(image.path());
    CHECK_FALSE(raw.get("versions", "k"));  // not in the data file yet...
  }
  {
    auto crashed = LmdbStore::open(image.path(), {});  // ...but replayed from the journal
    REQUIRE(crashed.is_ok());
    CHECK(crashed.value()->get("k").value() == one);
    CHECK(crashed.value()->fence_floor("L").value() == 4);
  }
  {
    test::RawLmdb raw(image.path());  // opening checkpointed it
    CHECK(raw.get("versions", "k"));
    CHECK(raw.get("floors", "L"));
  }
  REQUIRE(s.value()->checkpoint().is_ok());
  test::copy_crash_image(dir.path(), image.path());
  test::RawLmdb raw(image.path());
  CHECK(raw.get("versions", "k"));
}

TEST_CASE("LmdbStore: a checkpoint comes every checkpoint_bytes of journal", "[replica][store][journal]") {
  TempDir dir;
  LmdbStore::Options options;
  options.checkpoint_bytes = 4096;
  auto s = LmdbStore::open(dir.path(), options);
  REQUIRE(s.is_ok());
  const replica::Versions v = {version(std::string(500, 'x'))};
  int checkpointed_at = -1;
  for (int i = 0; i < 20 && checkpointed_at < 0; ++i) {
    REQUIRE(s.value()->apply(replica::Change{.key = "k" + std::to_string(i), .put = &v}).is_ok());
    REQUIRE(s.value()->commit().is_ok());
    TempDir image;
    test::copy_crash_image(dir.path(), image.path());
    test::RawLmdb raw(image.path());
    if (raw.get("versions", "k0")) checkpointed_at = i;
  }
  // About 570 bytes of journal per batch: the 8th passes 4096, and its commit
  // checkpoints after appending it.
  CHECK(checkpointed_at == 7);
}

TEST_CASE("LmdbStore: a checkpoint that fails (map full) loses no committed batch", "[replica][store][journal]") {
  TempDir dir, image;
  LmdbStore::Options options{.map_size_bytes = size_t{64} << 10, .checkpoint_bytes = 4096};
  auto s = LmdbStore::open(dir.path(), options);
  REQUIRE(s.is_ok());
  const replica::Versions v = {version(std::string(500, 'x'))};
  int committed = 0;
  for (;; ++committed) {
    REQUIRE(committed < 1000);
    Status applied = s.value()->apply(replica::Change{.key = "k" + std::to_string(committed), .put = &v});
    Status c = s.value()->commit();
    INFO(c.to_string());
    REQUIRE(c.is_ok());  // the journal holds it, whatever the checkpoint did
    if (!applied.is_ok()) {
      CHECK_THAT(applied.message(), Catch::Contains("MDB_MAP_FULL"));
      break;
    }
  }
  // Rewrites of a key the open transaction holds need no new page, so they
  // fit; the checkpoints they bring fail on the full map and are undone.
  const replica::Versions y = {version(std::string(500, 'y'))};
  const std::string last = "k" + std::to_string(committed - 1);
  for (int i = 0; i < 20; ++i) {
    REQUIRE(s.value()->apply(replica::Change{.key = last, .put = &y}).is_ok());
    REQUIRE(s.value()->commit().is_ok());
  }
  // Every batch the store committed is still read, from the transaction
  // rebuilt from the journal.
  REQUIRE(committed > 8);
  for (int i = 0; i < committed - 1; ++i) CHECK(s.value()->get("k" + std::to_string(i)).value() == v);
  CHECK(s.value()->get(last).value() == y);
  test::copy_crash_image(dir.path(), image.path());
  options.map_size_bytes = size_t{64} << 20;  // the operator raises the map and restarts
  auto reopened = LmdbStore::open(image.path(), options);
  REQUIRE(reopened.is_ok());
  for (int i = 0; i < committed - 1; ++i) CHECK(reopened.value()->get("k" + std::to_string(i)).value() == v);
  CHECK(reopened.value()->get(last).value() == y);
}

TEST_CASE("LmdbStore: after a write fails, later ones run nested and fail without a rebuild each",
          "[replica][store][journal]") {
  LmdbFixture f(/*tight=*/true);
  LmdbStore& s = *f.lmdb;
  const Version small = version("small", 1);
  REQUIRE(put(s, "before", small, 1).is_ok());
  REQUIRE(put(s, "in-batch", version("in batch", 2), 2).is_ok());
  const Version huge = version(std::string(kHugeValueBytes, 'h'), 9, "H");
  CHECK_THAT(put(s, "huge", huge, 9).message(), Catch::Contains("MDB_MAP_FULL"));
  CHECK(s.rebuilds() == 1);  // the open transaction, rebuilt with the batch's two changes
  // A full map stays full: each later failure would cost a rebuild that reads
  // back the whole journal. They are undone by a nested transaction instead.
  for (int i = 0; i < 3; ++i) {
    CHECK_THAT(put(s, "huge" + std::to_string(i), huge, 9).message(), Catch::Contains("MDB_MAP_FULL"));
  }
  CHECK(s.rebuilds() == 1);
  REQUIRE(put(s, "after", version("after", 3), 3).is_ok());
  REQUIRE(s.commit().is_ok());
  CHECK(stored(s, "in-batch") == Versions{version("in batch", 2)});
  CHECK(stored(s, "after") == Versions{version("after", 3)});
  CHECK(stored(s, "huge1").empty());
  f.reopen();
  CHECK(stored(f.store(), "before") == Versions{small});
  CHECK(stored(f.store(), "in-batch") == Versions{version("in batch", 2)});
  CHECK(stored(f.store(), "after") == Versions{version("after", 3)});
  CHECK(stored(f.store(), "huge").empty());
}

TEST_CASE("LmdbStore: a failed journal sync fails its batch alone, and no later batch is lost",
          "[replica][store][journal]") {
  TempDir dir, image;
  auto opened = LmdbStore::open(dir.path(), {});
  REQUIRE(opened.is_ok());
  LmdbStore& s = *opened.value();
  auto commit_one = [&s](const std::string& key) {
    const replica::Versions v = {version(key)};
    REQUIRE(s.apply(replica::Change{.key = key, .put = &v}).is_ok());
    return s.commit();
  };
  REQUIRE(commit_one("a").is_ok());
  test::fail_next_syncs(1);
  CHECK(commit_one("b").code() == Code::kStorageError);  // the journal's sync failed
  CHECK(stored(s, "b").empty());
  SECTION("the next batches ride in checkpoints") {
    REQUIRE(commit_one("c").is_ok());
    REQUIRE(commit_one("d").is_ok());
  }
  SECTION("a checkpoint that fails too leaves what was acknowledged") {
    test::fail_next_syncs(1);
    CHECK(commit_one("c").code() == Code::kStorageError);  // LMDB's sync failed
    CHECK(stored(s, "a") == replica::Versions{version("a")});
    CHECK(stored(s, "c").empty());
    REQUIRE(commit_one("d").is_ok());
  }
  test::copy_crash_image(dir.path(), image.path());
  auto crashed = LmdbStore::open(image.path(), {});
  REQUIRE(crashed.is_ok());
  CHECK(stored(*crashed.value(), "a") == replica::Versions{version("a")});
  CHECK(stored(*crashed.value(), "b").empty());
  CHECK(stored(*crashed.value(), "d") == replica::Versions{version("d")});
}

TEST_CASE("LmdbStore: a batch whose journal sync failed never comes back, even with nothing else pending",
          "[replica][store][journal]") {
  TempDir dir, image;
  auto s = LmdbStore::open(dir.path(), {});
  REQUIRE(s.is_ok());
  const replica::Versions b = {version("b")};
  REQUIRE(s.value()->apply(replica::Change{.key = "b", .put = &b}).is_ok());
  test::fail_next_syncs(1);  // the record is written, its sync fails
  CHECK(s.value()->commit().code() == Code::kStorageError);
  test::copy_crash_image(dir.path(), image.path());
  auto crashed = LmdbStore::open(image.path(), {});
  REQUIRE(crashed.is_ok());
  CHECK(stored(*crashed.value(), "b").empty());  // answered storage_error, so never applied
}

TEST_CASE("LmdbStore: a change of nothing, and checkpoint() waits for the batch's end", "[replica][store][journal]") {
  TempDir dir, image;
  auto s = LmdbStore::open(dir.path(), {});
  REQUIRE(s.is_ok());
  REQUIRE(s.value()->apply(replica::Change{.key = "k"}).is_ok());  // neither versions nor a floor
  REQUIRE(s.value()->commit().is_ok());
  const replica::Versions one = {version("v")};
  REQUIRE(s.value()->apply(replica::Change{.key = "k", .put = &one}).is_ok());
  CHECK(s.value()->checkpoint().code() == Code::kBadRequest);
  REQUIRE(s.value()->commit().is_ok());
  REQUIRE(s.value()->checkpoint().is_ok());
  test::copy_crash_image(dir.path(), image.path());
  auto reopened = LmdbStore::open(image.path(), {});
  REQUIRE(reopened.is_ok());
  CHECK(stored(*reopened.value(), "k") == one);
}

TEST_CASE("LmdbStore: a batch too large for the journal is committed to LMDB at once", "[replica][store][journal]") {
  TempDir dir, image;
  LmdbStore::Options options;
  options.journal_bytes = Journal::kMinFileBytes;
  auto s = LmdbStore::open(dir.path(), options);
  REQUIRE(s.is_ok());
  const replica::Versions big = {version(std::string(8000, 'b'))};
  REQUIRE(s.value()->apply(replica::Change{.key = "big", .put = &big}).is_ok());
  REQUIRE(s.value()->commit().is_ok());
  test::copy_crash_image(dir.path(), image.path());
  test::RawLmdb raw(image.path());
  CHECK(raw.get("versions", "big"));
}

TEST_CASE("LmdbStore: a data dir whose journal is missing is refused", "[replica][store][journal]") {
  TempDir dir;
  const replica::Versions one = {version("v")};
  {
    auto s = LmdbStore::open(dir.path(), {});
    REQUIRE(s.is_ok());
    REQUIRE(s.value()->apply(replica::Change{.key = "k", .put = &one}).is_ok());
    REQUIRE(s.value()->commit().is_ok());
  }
  std::filesystem::remove(dir.sub("journal"));
  auto refused = LmdbStore::open(dir.path(), {});
  REQUIRE(refused.code() == Code::kStorageError);
  CHECK_THAT(refused.status().message(), Catch::Contains("journal") && Catch::Contains("missing"));
  CHECK_FALSE(std::filesystem::exists(dir.sub("journal")));  // not replaced by an empty one
}

TEST_CASE("LmdbStore: a directory that does not exist is a StorageError", "[replica][store]") {
  TempDir dir;
  auto r = LmdbStore::open(dir.sub("missing"), {});
  REQUIRE(r.code() == Code::kStorageError);
  CHECK_THAT(r.status().message(), Catch::Contains(dir.sub("missing")));
}

TEST_CASE("LmdbStore: a fence floor of the wrong size is corrupt", "[replica][store]") {
  TempDir dir;
  {
    auto s = LmdbStore::open(dir.path(), {});
    REQUIRE(s.is_ok());
  }
  {
    test::RawLmdb raw(dir.path());
    raw.put("floors", "L", "\x01\x02\x03");
    raw.commit();
  }
  auto s = LmdbStore::open(dir.path(), {});
  REQUIRE(s.is_ok());
  CHECK(s.value()->fence_floor("L").code() == Code::kCorrupt);
  CHECK(floor_of(*s.value(), "M") == 0);
}

TEST_CASE("LmdbStore: a bit flip in a stored fence floor is detected", "[replica][store]") {
  TempDir dir;
  {
    auto s = LmdbStore::open(dir.path(), {});
    REQUIRE(s.is_ok());
    replica::Change c{.lock = "L", .floor = 7};
    REQUIRE(s.value()->apply(c).is_ok());
    REQUIRE(s.value()->commit().is_ok());
  }
  for (size_t byte = 0; byte < 16; ++byte) {
    std::string original;
    {
      test::RawLmdb raw(dir.path());
      original = raw.get("floors", "L").value();
      REQUIRE(original.size() == 16);
      std::string flipped = original;
      flipped[byte] = static_cast<char>(flipped[byte] ^ 0x01);
      raw.put("floors", "L", flipped);
      raw.commit();
    }
    {
      auto s = LmdbStore::open(dir.path(), {});
      REQUIRE(s.is_ok());
      CHECK(s.value()->fence_floor("L").code() == Code::kCorrupt);
    }
    test::RawLmdb raw(dir.path());
    raw.put("floors", "L", original);
    raw.commit();
  }
  auto s = LmdbStore::open(dir.path(), {});
  CHECK(floor_of(*s.value(), "L") == 7);
}

TEST_CASE("LmdbStore: every byte of a record on disk is covered by its checksum", "[replica][store]") {
  TempDir dir;
  const Version v = version("value", 3, "lock", VersionState::kCommitted);
  std::string rec;
  {
    auto s = LmdbStore::open(dir.path(), {});
    REQUIRE(s.is_ok());
    REQUIRE(put(*s.value(), "k", v).is_ok());
    REQUIRE(s.value()->commit().is_ok());
  }
  {
    test::RawLmdb raw(dir.path());
    auto r = raw.get("versions", "k");
    REQUIRE(r);
    rec = *r;
  }
  REQUIRE(rec == replica::encode_record("k", Versions{v}));  // the layout record.h documents
  for (size_t i = 0; i < rec.size(); ++i) {
    {
      test::RawLmdb raw(dir.path());
      std::string damaged = rec;
      damaged[i] = static_cast<char>(damaged[i] ^ 0x80);
      raw.put("versions", "k", damaged);
      raw.commit();
    }
    auto s = LmdbStore::open(dir.path(), {});
    REQUIRE(s.is_ok());
    INFO("byte " << i);
    CHECK(s.value()->get("k").code() == Code::kCorrupt);
  }
}

TEST_CASE("LmdbStore: key_count counts committed keys and the open batch", "[replica][store]") {
  TempDir dir;
  auto s = LmdbStore::open(dir.path(), {});
  REQUIRE(s.is_ok());
  LmdbStore& store = *s.value();
  CHECK(store.key_count().value() == 0);
  const Version v = version("v");
  REQUIRE(put(store, "a", v).is_ok());
  REQUIRE(put(store, "b", v).is_ok());
  CHECK(store.key_count().value() == 2);
  REQUIRE(store.commit().is_ok());
  REQUIRE(erase(store, "a").is_ok());
  CHECK(store.key_count().value() == 1);
  store.abort();
  CHECK(store.key_count().value() == 2);
}

TEST_CASE("LmdbStore: keys up to kMaxKeyBytes are stored, longer and empty ones refused", "[replica][store]") {
  TempDir dir;
  auto s = LmdbStore::open(dir.path(), {});
  REQUIRE(s.is_ok());
  LmdbStore& store = *s.value();
  const std::string longest(LmdbStore::kMaxKeyBytes, 'k');
  const std::string too_long(LmdbStore::kMaxKeyBytes + 1, 'k');
  const Version v = version("v");
  CHECK(stored(store, longest).empty());
  Status put_status = put(store, longest, v);
  INFO(put_status.to_string());
  REQUIRE(put_status.is_ok());
  REQUIRE(store.commit().is_ok());
  CHECK(stored(store, longest) == Versions{v});

  // Keys LMDB cannot hold are simply never found, and writing one is the
  // caller's mistake, not a storage failure.
  CHECK(stored(store, too_long).empty());
  CHECK(stored(store, "").empty());
  CHECK(put(store, too_long, v).code() == Code::kTooLarge);
  CHECK(put(store, "", v).code() == Code::kBadRequest);
  CHECK(erase(store, too_long).code() == Code::kTooLarge);
  CHECK(raise_floor(store, too_long, 3).code() == Code::kTooLarge);
  CHECK(raise_floor(store, "", 3).code() == Code::kBadRequest);
  CHECK(floor_of(store, too_long) == 0);
  CHECK(floor_of(store, "") == 0);
  // The refusals left the batch usable.
  REQUIRE(put(store, "after", v).is_ok());
  REQUIRE(store.commit().is_ok());
  CHECK(stored(store, "after") == Versions{v});
}

// ---- the record codec ----

Versions with_dropped(Versions v, std::vector<FencedTimestamp> dropped, FencedTimestamp older) {
  v.dropped = std::move(dropped);
  v.dropped_older = older;
  return v;
}

std::vector<std::pair<std::string, Versions>> sample_records() {
  return {
      {"k", {version("value", 3, "lock", VersionState::kCommitted)}},
      {"k", {version("", 0, "")}},
      {"none", {}},
      {"tomb", {version("", 5, "L", VersionState::kCommitted, /*tombstone=*/true)}},
      {"bin\0key"s, {version("\0\xff\x01 binary"s, UINT64_MAX, std::string(256, 'l'))}},
      {"several",
       {version("newest", 9, "L"), version("", 8, "L", VersionState::kPending, true),
        version("committed", 7, "M", VersionState::kCommitted)}},
      {"dropped", with_dropped({version("c", 9, "L", VersionState::kCommitted)}, {{0, 4}, {7, 8}}, {})},
      {"dropped older", with_dropped({version("c", 9, "L", VersionState::kCommitted)}, {{8, 1}}, {6, 2})},
      {"dropped all", with_dropped({version("c", 9, "L", VersionState::kCommitted)}, {}, {UINT64_MAX, UINT64_MAX})},
      {std::string(511, 'K'), {version(std::string(70000, 'v'), 2, "L")}},
      {"with sequencers",
       {with_seq(version("b", 5, "L"), "ps2.b"), with_seq(version("a", 4, "L", VersionState::kCommitted), "ps2.a")}},
  };
}

TEST_CASE("record: a record written before versions kept sequencers still reads", "[replica][record]") {
  // format 1, one version: flags 1 (committed), ts {3, 0}, lock "L", value "v", then the checksum.
  std::string body("\x01\x01\x01", 3);
  body += std::string("\0\0\0\0\0\0\0\x03", 8) + std::string(8, '\0');
  body += std::string("\0\x01L", 3) + std::string("\0\0\0\x01v", 5);
  std::string rec = body;
  uint64_t sum = hash64(body, hash64("k"));
  for (int i = 7; i >= 0; --i) rec.push_back(static_cast<char>(sum >> (8 * i)));
  auto decoded = replica::decode_record("k", rec);
  REQUIRE(decoded.is_ok());
  REQUIRE(decoded.value().size() == 1);
  CHECK(decoded.value()[0].value == "v");
  CHECK(decoded.value()[0].lock == "L");
  CHECK(decoded.value()[0].sequencer.empty());
  CHECK(replica::encode_record("k", decoded.value()) == rec);
}

STORE_TEST("store: the config certificate is kept across a crash, apart from the batch") {
  TestType f;
  CHECK(f.store().config_certificate().value().empty());  // none yet
  REQUIRE(put(f.store(), "k", version("v", 1)).is_ok());  // a batch left open
  REQUIRE(f.store().save_config_certificate("pcc1.first.x").is_ok());
  REQUIRE(f.store().save_config_certificate("pcc1.second.y").is_ok());
  f.reopen();
  CHECK(f.store().config_certificate().value() == "pcc1.second.y");
  CHECK(stored(f.store(), "k").empty());  // the batch was never committed
}

TEST_CASE("LmdbStore: a config certificate file that cannot be read is an error, not none", "[replica][store]") {
  LmdbFixture f;
  const std::string path = f.dir->path() + "/config-certificate";
  REQUIRE(f.store().save_config_certificate("pcc1.a.b").is_ok());
  CHECK(!std::filesystem::exists(path + ".new"));  // written through it, then renamed
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);  // not a file
  auto read = f.store().config_certificate();
  CHECK(read.status().code() == Code::kStorageError);
  CHECK_THAT(read.status().message(), Catch::Contains("config-certificate"));
  std::filesystem::remove(path);
  {
    std::ofstream big(path);
    big << std::string(wire::kMaxConfigCertificateBytes + 1, 'x');
  }
  CHECK(f.store().config_certificate().status().code() == Code::kStorageError);
}

TEST_CASE("record: encode and decode round trip", "[replica][record]") {
  for (const auto& [key, versions] : sample_records()) {
    auto decoded = replica::decode_record(key, replica::encode_record(key, versions));
    INFO(decoded.status().to_string());
    REQUIRE(decoded.is_ok());
    CHECK(decoded.value() == versions);
  }
  // Timestamps keep all 128 bits.
  Version v = version("x");
  v.ts = FencedTimestamp{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  CHECK(replica::decode_record("k", replica::encode_record("k", {v})).value() == Versions{v});
}

TEST_CASE("record: every single-bit flip is detected", "[replica][record]") {
  auto samples = sample_records();
  samples.pop_back();  // the big one adds nothing but time
  for (const auto& [key, versions] : samples) {
    const std::string rec = replica::encode_record(key, versions);
    for (size_t bit = 0; bit < rec.size() * 8; ++bit) {
      std::string damaged = rec;
      damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
      auto decoded = replica::decode_record(key, damaged);
      if (decoded.code() != Code::kCorrupt) {
        FAIL("flip of bit " << bit << " of the " << rec.size() << "-byte record of key " << key);
      }
    }
  }
}

// Re-seals a record's body with a valid checksum (the layout in record.cc), to
// reach the checks behind the checksum.
std::string reseal(std::string_view key, std::string body) {
  uint64_t sum = hash64(body, hash64(key));
  for (int i = 7; i >= 0; --i) body.push_back(static_cast<char>((sum >> (8 * i)) & 0xff));
  return body;
}

TEST_CASE("record: what a replica dropped is kept in format 2, nothing dropped keeps format 1", "[replica][record]") {
  Versions v{version("c", 9, "L", VersionState::kCommitted)};
  CHECK(replica::encode_record("k", v)[0] == 1);
  v.drop_from(v.end());
  CHECK(replica::encode_record("k", v)[0] == 1);  // dropping nothing notes nothing
  v.push_back(version("old", 8, "L", VersionState::kCommitted));
  v.drop_from(v.begin() + 1);
  REQUIRE(v.size() == 1);
  const std::string rec = replica::encode_record("k", v);
  CHECK(rec[0] == 2);
  auto decoded = replica::decode_record("k", rec);
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value().dropped_up_to(8) == version("old", 8, "L").ts);
  // A bad count of dropped versions, behind a valid checksum, is corrupt.
  std::string body = rec.substr(0, rec.size() - 8);
  body[2] = static_cast<char>(replica::Versions::kDroppedTokensKept + 1);
  CHECK(replica::decode_record("k", reseal("k", body)).code() == Code::kCorrupt);
  body[2] = 0;  // format 2 with nothing dropped is never written
  CHECK(replica::decode_record("k", reseal("k", body)).code() == Code::kCorrupt);
  body[2] = static_cast<char>(1 | 0x80);  // a bound that is not there: the versions do not fit
  CHECK(replica::decode_record("k", reseal("k", body)).code() == Code::kCorrupt);
  // Tokens must ascend, each once.
  for (std::vector<FencedTimestamp> bad : {std::vector<FencedTimestamp>{{7, 8}, {0, 4}},
                                           std::vector<FencedTimestamp>{{7, 8}, {7, 9}}}) {
    Versions out_of_order{version("c", 9, "L", VersionState::kCommitted)};
    out_of_order.dropped = bad;
    CHECK(replica::decode_record("k", replica::encode_record("k", out_of_order)).code() == Code::kCorrupt);
  }
}

TEST_CASE("record: truncated, extended or misplaced records are detected", "[replica][record]") {
  Versions versions{version("value", 3, "lock"), version("old", 2, "lock")};
  SECTION("format 1") {}
  SECTION("format 2") {
    versions.dropped = {FencedTimestamp{0, 4}, FencedTimestamp{1, 2}};
    versions.dropped_older = FencedTimestamp{0, 9};
  }
  const std::string rec = replica::encode_record("k", versions);
  for (size_t n = 0; n < rec.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    CHECK(replica::decode_record("k", rec.substr(0, n)).code() == Code::kCorrupt);
  }
  CHECK(replica::decode_record("k", rec + "x").code() == Code::kCorrupt);
  // The key is part of the checksum: a record found under another key is corrupt.
  auto moved = replica::decode_record("other", rec);
  REQUIRE(moved.code() == Code::kCorrupt);
  CHECK_THAT(moved.status().message(), Catch::Contains("'other'"));
}


TEST_CASE("record: a valid checksum over a bad format byte, count or lengths is still corrupt", "[replica][record]") {
  const Version v = version("value", 3, "lock");
  const std::string rec = replica::encode_record("k", {v});
  // format(1) count(1), then per version flags(1) ts(16) lock_len(2) lock value_len(4) value; checksum(8)
  const std::string body = rec.substr(0, rec.size() - 8);
  REQUIRE(reseal("k", body) == rec);  // the layout assumed here is the real one
  constexpr size_t kLockLenAt = 2 + 1 + 16;
  const size_t value_len_at = kLockLenAt + 2 + v.lock.size();
  REQUIRE(static_cast<uint8_t>(body[value_len_at + 3]) == v.value.size());

  auto corrupt_after = [&](size_t at, char byte) {
    std::string damaged = body;
    damaged[at] = byte;
    return replica::decode_record("k", reseal("k", damaged)).code() == Code::kCorrupt;
  };
  CHECK(corrupt_after(0, 3));                                                     // format
  CHECK(corrupt_after(1, 2));                                                     // more versions than there are
  CHECK(corrupt_after(1, 0));                                                     // fewer: trailing bytes
  CHECK(corrupt_after(kLockLenAt, '\x7f'));                                       // lock runs past the end
  CHECK(corrupt_after(value_len_at + 3, static_cast<char>(v.value.size() + 1)));  // value runs past the end
  CHECK(corrupt_after(value_len_at + 3, static_cast<char>(v.value.size() - 1)));  // value stops short
}

}  // namespace
}  // namespace palisade
