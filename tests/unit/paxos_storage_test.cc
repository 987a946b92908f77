// The acceptor's durable state (lockgroup/paxos_storage.h): the same contract for
// the simulator's MemoryPaxosStorage and palisade-lockd's LmdbPaxosStorage, then
// what only one of them does (a refused commit; damage found on disk).
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/big_endian.h"
#include "storage/journal.h"
#include "lockgroup/lmdb_paxos_storage.h"
#include "lockgroup/memory_paxos_storage.h"
#include "tests/support/sim_disk.h"
#include "tests/support/printers.h"
#include "tests/support/raw_lmdb.h"
#include "base/temp_dir.h"

namespace palisade::lockgroup {
namespace {

using namespace std::string_literals;

DurableState loaded(PaxosStorage& s) {
  auto r = s.load();
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return std::move(r).value();
}

void commit(PaxosStorage& s) {
  Status st = s.commit();
  INFO(st.to_string());
  REQUIRE(st.is_ok());
  CHECK_FALSE(s.dirty());
}

std::vector<Entry> entries_of(const DurableState& st) {
  std::vector<Entry> out;
  for (const auto& [slot, e] : st.accepted) {
    CHECK(slot == e.slot);  // the map's key is the entry's slot
    out.push_back(e);
  }
  return out;
}

void check_empty(const DurableState& st) {
  CHECK(st.promised == 0);
  CHECK(st.snapshot_slot == 0);
  CHECK(st.snapshot.empty());
  CHECK(st.accepted.empty());
  CHECK_FALSE(st.first_members);
}

std::string be_key(Slot slot) {
  std::string k;
  append_be(k, slot, 8);
  return k;
}

// Each fixture owns a storage and can restart it as after a crash: the
// in-memory one keeps what was committed, like a disk; the LMDB one is opened
// from a copy of its files taken while it was open (its journal replayed).
struct MemoryFixture {
  PaxosStorage& storage() { return mem; }
  void restart() { mem.crash(); }
  MemoryPaxosStorage mem;
};

struct LmdbFixture {
  LmdbFixture() { open(); }
  PaxosStorage& storage() { return *lmdb; }
  void open() {
    auto r = LmdbPaxosStorage::open(dir->path(), options);
    INFO(r.status().to_string());
    REQUIRE(r.is_ok());
    lmdb = std::move(r).value();
  }
  void restart() {
    auto image = std::make_unique<TempDir>();
    test::copy_crash_image(dir->path(), image->path());
    lmdb.reset();
    dir = std::move(image);
    open();
  }
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>();
  LmdbPaxosStorage::Options options{size_t{64} << 20};
  std::unique_ptr<LmdbPaxosStorage> lmdb;
};

#define STORAGE_TEST(name) TEMPLATE_TEST_CASE(name, "[lockgroup][paxos_storage]", MemoryFixture, LmdbFixture)

const Entry kE1{1, make_ballot(1, 1), "one"};
const Entry kE2{2, make_ballot(1, 1), "two\0\xff"s};
const Entry kE3{3, make_ballot(2, 3), ""};  // a no-op

STORAGE_TEST("paxos storage: an empty store loads the initial state") {
  TestType f;
  CHECK_FALSE(f.storage().dirty());
  check_empty(loaded(f.storage()));
  commit(f.storage());  // nothing to commit is fine
  f.restart();
  check_empty(loaded(f.storage()));
}

STORAGE_TEST("paxos storage: promised, accepted and snapshot persist across commit and restart") {
  TestType f;
  PaxosStorage& s = f.storage();
  s.set_promised(make_ballot(7, 2));
  s.put_accepted(kE1);
  s.put_accepted(kE2);
  s.put_accepted(kE3);
  CHECK(s.dirty());
  commit(s);
  f.restart();
  DurableState st = loaded(f.storage());
  CHECK(st.promised == make_ballot(7, 2));
  CHECK(st.snapshot_slot == 0);
  CHECK(st.snapshot.empty());
  CHECK(entries_of(st) == std::vector<Entry>{kE1, kE2, kE3});

  // A second batch adds to the first; a snapshot with binary content.
  const std::string snap = "state\0machine\xfe"s;
  f.storage().set_promised(make_ballot(8, 1));
  f.storage().put_snapshot(1, snap);
  f.storage().put_accepted(Entry{4, make_ballot(8, 1), "four"});
  commit(f.storage());
  f.restart();
  st = loaded(f.storage());
  CHECK(st.promised == make_ballot(8, 1));
  CHECK(st.snapshot_slot == 1);
  CHECK(st.snapshot == snap);
  CHECK(entries_of(st) == std::vector<Entry>{kE2, kE3, Entry{4, make_ballot(8, 1), "four"}});
}

STORAGE_TEST("paxos storage: the first members persist, an empty list too") {
  TestType f;
  f.storage().set_first_members({1, 2, 300});
  CHECK(f.storage().dirty());
  commit(f.storage());
  f.restart();
  CHECK(loaded(f.storage()).first_members == Members{1, 2, 300});
  f.storage().set_first_members({});  // a node that joined knows none
  f.storage().set_promised(3);
  commit(f.storage());
  f.restart();
  DurableState st = loaded(f.storage());
  REQUIRE(st.first_members);
  CHECK(st.first_members->empty());
  CHECK(st.promised == 3);
  f.storage().set_first_members({4});
  f.restart();  // not committed
  CHECK(loaded(f.storage()).first_members == Members{});
}

STORAGE_TEST("paxos storage: load shows only what was committed") {
  TestType f;
  PaxosStorage& s = f.storage();
  s.set_promised(5);
  s.put_accepted(kE1);
  commit(s);
  s.set_promised(9);
  s.put_accepted(kE2);
  s.put_snapshot(1, "snap");
  CHECK(s.dirty());
  DurableState st = loaded(s);
  CHECK(st.promised == 5);
  CHECK(st.snapshot_slot == 0);
  CHECK(entries_of(st) == std::vector<Entry>{kE1});
  CHECK(s.dirty());  // loading does not commit
}

STORAGE_TEST("paxos storage: changes not committed are lost on restart") {
  TestType f;
  f.storage().set_promised(5);
  f.storage().put_accepted(kE1);
  commit(f.storage());
  f.storage().set_promised(9);
  f.storage().put_accepted(kE2);
  f.storage().put_accepted(Entry{1, 9, "replaced"});
  f.storage().put_snapshot(1, "snap");
  REQUIRE(f.storage().dirty());
  f.restart();
  CHECK_FALSE(f.storage().dirty());
  DurableState st = loaded(f.storage());
  CHECK(st.promised == 5);
  CHECK(st.snapshot_slot == 0);
  CHECK(st.snapshot.empty());
  CHECK(entries_of(st) == std::vector<Entry>{kE1});
  // What was dropped does not come back with the next commit either.
  f.storage().put_accepted(kE3);
  commit(f.storage());
  f.restart();
  st = loaded(f.storage());
  CHECK(st.promised == 5);
  CHECK(entries_of(st) == std::vector<Entry>{kE1, kE3});
}

STORAGE_TEST("paxos storage: put_accepted replaces what the slot held") {
  TestType f;
  PaxosStorage& s = f.storage();
  s.put_accepted(Entry{2, 10, "first"});
  s.put_accepted(Entry{2, 11, "second, same batch"});
  commit(s);
  CHECK(entries_of(loaded(s)) == std::vector<Entry>{Entry{2, 11, "second, same batch"}});
  s.put_accepted(Entry{2, 12, ""});  // replaced by a no-op in a later batch
  commit(s);
  f.restart();
  CHECK(entries_of(loaded(f.storage())) == std::vector<Entry>{Entry{2, 12, ""}});
}

STORAGE_TEST("paxos storage: a snapshot drops the accepted entries it covers") {
  TestType f;
  PaxosStorage& s = f.storage();
  // Slots whose big-endian bytes differ in several positions: the LMDB keys
  // must sort numerically for the drop to take the right ones.
  const std::vector<Slot> slots = {1, 255, 256, 257, 65'536, uint64_t{1} << 32, (uint64_t{1} << 32) + 1};
  for (Slot slot : slots) s.put_accepted(Entry{slot, 3, "v" + std::to_string(slot)});
  commit(s);
  REQUIRE(loaded(s).accepted.size() == slots.size());

  s.put_snapshot(256, "through 256");
  commit(s);
  f.restart();
  DurableState st = loaded(f.storage());
  CHECK(st.snapshot_slot == 256);
  CHECK(st.snapshot == "through 256");
  std::vector<Slot> left;
  for (const auto& [slot, e] : st.accepted) left.push_back(slot);
  CHECK(left == std::vector<Slot>{257, 65'536, uint64_t{1} << 32, (uint64_t{1} << 32) + 1});

  f.storage().put_snapshot(uint64_t{1} << 32, "through 2^32");
  commit(f.storage());
  f.restart();
  st = loaded(f.storage());
  CHECK(st.snapshot_slot == uint64_t{1} << 32);
  CHECK(entries_of(st) == std::vector<Entry>{Entry{(uint64_t{1} << 32) + 1, 3, "v4294967297"}});
}

STORAGE_TEST("paxos storage: a snapshot and accepted entries in one batch") {
  TestType f;
  PaxosStorage& s = f.storage();
  s.put_accepted(Entry{5, 1, "before the snapshot, covered"});
  s.put_accepted(Entry{6, 1, "before the snapshot, above it"});
  s.put_snapshot(5, "s5");
  s.put_accepted(Entry{4, 1, "after the snapshot, covered"});
  s.put_accepted(Entry{7, 1, "after the snapshot, above it"});
  commit(s);
  f.restart();
  DurableState st = loaded(f.storage());
  CHECK(st.snapshot_slot == 5);
  CHECK(st.snapshot == "s5");
  CHECK(entries_of(st) ==
        std::vector<Entry>{Entry{6, 1, "before the snapshot, above it"}, Entry{7, 1, "after the snapshot, above it"}});
  // An entry at or below a committed snapshot, put in a later batch, is not part of the state.
  f.storage().put_accepted(Entry{3, 2, "stale"});
  f.storage().put_accepted(Entry{5, 2, "stale"});
  commit(f.storage());
  f.restart();
  st = loaded(f.storage());
  CHECK(entries_of(st) ==
        std::vector<Entry>{Entry{6, 1, "before the snapshot, above it"}, Entry{7, 1, "after the snapshot, above it"}});
}

STORAGE_TEST("paxos storage: a later snapshot replaces the earlier one") {
  TestType f;
  f.storage().put_snapshot(3, std::string(100'000, 'a'));
  commit(f.storage());
  f.storage().put_snapshot(9, "small");
  commit(f.storage());
  f.restart();
  DurableState st = loaded(f.storage());
  CHECK(st.snapshot_slot == 9);
  CHECK(st.snapshot == "small");
}

STORAGE_TEST("paxos storage: large values and the largest numbers") {
  TestType f;
  const std::string big(1 << 20, '\xab');
  const Entry high{UINT64_MAX, UINT64_MAX, big};
  f.storage().set_promised(UINT64_MAX);
  f.storage().put_accepted(high);
  commit(f.storage());
  f.restart();
  DurableState st = loaded(f.storage());
  CHECK(st.promised == UINT64_MAX);
  CHECK(entries_of(st) == std::vector<Entry>{high});
  f.storage().put_snapshot(UINT64_MAX, "everything");
  commit(f.storage());
  f.restart();
  st = loaded(f.storage());
  CHECK(st.snapshot_slot == UINT64_MAX);
  CHECK(st.accepted.empty());
}

STORAGE_TEST("paxos storage: dirty follows the pending changes") {
  TestType f;
  PaxosStorage& s = f.storage();
  CHECK_FALSE(s.dirty());
  s.set_promised(1);
  CHECK(s.dirty());
  commit(s);
  s.put_accepted(kE1);
  CHECK(s.dirty());
  commit(s);
  s.put_snapshot(1, "");
  CHECK(s.dirty());
  commit(s);
  CHECK_FALSE(s.dirty());
}

// ---- MemoryPaxosStorage only.

TEST_CASE("memory paxos storage: fail_next_commit refuses one commit and drops its changes",
          "[lockgroup][paxos_storage]") {
  MemoryPaxosStorage s;
  s.set_promised(4);
  s.put_accepted(kE1);
  commit(s);
  REQUIRE(s.sync_count() == 1);

  s.set_promised(6);
  s.put_accepted(kE2);
  s.put_snapshot(1, "snap");
  s.fail_next_commit();
  CHECK(s.dirty());  // arming the failure changes nothing yet
  Status st = s.commit();
  CHECK(st.code() == Code::kStorageError);
  CHECK_FALSE(st.message().empty());
  CHECK_FALSE(s.dirty());
  CHECK(s.sync_count() == 1);
  DurableState state = loaded(s);
  CHECK(state.promised == 4);
  CHECK(state.snapshot_slot == 0);
  CHECK(entries_of(state) == std::vector<Entry>{kE1});

  // Only the next commit fails; the dropped changes stay dropped.
  s.put_accepted(kE3);
  commit(s);
  CHECK(s.sync_count() == 2);
  state = loaded(s);
  CHECK(state.promised == 4);
  CHECK(entries_of(state) == std::vector<Entry>{kE1, kE3});
}

TEST_CASE("memory paxos storage: crash keeps the committed state", "[lockgroup][paxos_storage]") {
  MemoryPaxosStorage s;
  s.set_promised(4);
  s.put_snapshot(2, "snap");
  s.put_accepted(kE3);
  commit(s);
  s.put_accepted(Entry{4, 1, "lost"});
  s.crash();
  CHECK_FALSE(s.dirty());
  DurableState state = loaded(s);
  CHECK(state.promised == 4);
  CHECK(state.snapshot_slot == 2);
  CHECK(state.snapshot == "snap");
  CHECK(entries_of(state) == std::vector<Entry>{kE3});
  CHECK(s.committed().accepted.size() == 1);
  CHECK(s.sync_count() == 1);
}

// ---- LmdbPaxosStorage only.

std::unique_ptr<LmdbPaxosStorage> open_lmdb(const std::string& dir, size_t map_size = size_t{64} << 20) {
  auto r = LmdbPaxosStorage::open(dir, LmdbPaxosStorage::Options{map_size});
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return std::move(r).value();
}

// A directory holding promised 5, first members 1, 2, 3, snapshot "snap" through slot 1 and the entries of slots 2 and 3.
void fill(const std::string& dir) {
  auto s = open_lmdb(dir);
  s->set_promised(5);
  s->set_first_members({1, 2, 3});
  s->put_snapshot(1, "snap");
  s->put_accepted(kE2);
  s->put_accepted(kE3);
  commit(*s);
}

// Replaces a stored record behind the storage's back (none may be open on `dir`).
void rewrite(const std::string& dir, const std::string& db, const std::string& key,
             const std::function<std::string(std::string)>& edit) {
  test::RawLmdb raw(dir);
  auto rec = raw.get(db, key);
  REQUIRE(rec);
  raw.put(db, key, edit(*rec));
  raw.commit();
}

Status load_status(const std::string& dir) {
  auto s = open_lmdb(dir);
  return s->load().status();
}

TEST_CASE("lmdb paxos storage: a damaged record is Corrupt", "[lockgroup][paxos_storage]") {
  TempDir dir;
  fill(dir.path());
  REQUIRE(load_status(dir.path()).is_ok());
  auto flip = [](size_t pos_from_end) {
    return [pos_from_end](std::string rec) {
      REQUIRE(rec.size() >= pos_from_end);
      rec[rec.size() - pos_from_end] ^= 0x01;
      return rec;
    };
  };
  struct Case {
    const char* name;
    std::string db, key;
    std::function<std::string(std::string)> edit;
    std::string named;  // what the error message must name
  };
  const std::vector<Case> cases = {
      {"accepted: a value byte", "accepted", be_key(2), flip(9), "slot 2"},
      {"accepted: a ballot byte", "accepted", be_key(3),
       [](std::string r) {
         r[7] ^= 0x40;
         return r;
       },
       "slot 3"},
      {"accepted: the checksum", "accepted", be_key(2), flip(1), "slot 2"},
      {"accepted: truncated", "accepted", be_key(2), [](std::string r) { return r.substr(0, 10); }, "slot 2"},
      {"promised: the ballot", "meta", "promised",
       [](std::string r) {
         r[7] ^= 0x01;
         return r;
       },
       "promised"},
      {"promised: one byte longer", "meta", "promised", [](std::string r) { return r + "x"; }, "promised"},
      {"first members: an id", "meta", "first_members", flip(9), "first members"},
      {"first members: one byte longer", "meta", "first_members", [](std::string r) { return r + "x"; },
       "first members"},
      {"snapshot: a content byte", "meta", "snapshot", flip(9), "snapshot"},
      {"snapshot: the slot", "meta", "snapshot",
       [](std::string r) {
         r[7] ^= 0x01;
         return r;
       },
       "snapshot"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      rewrite(dir.path(), c.db, c.key, c.edit);
      Status st = load_status(dir.path());
      INFO(st.to_string());
      CHECK(st.code() == Code::kCorrupt);
      CHECK(st.message().find(c.named) != std::string::npos);
    }
  }
}

TEST_CASE("lmdb paxos storage: a record moved to another slot is Corrupt", "[lockgroup][paxos_storage]") {
  TempDir dir;
  fill(dir.path());
  {
    test::RawLmdb raw(dir.path());
    auto rec = raw.get("accepted", be_key(2));
    REQUIRE(rec);
    raw.put("accepted", be_key(4), *rec);  // intact bytes, wrong key
    raw.commit();
  }
  Status st = load_status(dir.path());
  INFO(st.to_string());
  CHECK(st.code() == Code::kCorrupt);
  CHECK(st.message().find("slot 4") != std::string::npos);
}

TEST_CASE("lmdb paxos storage: records are laid out as documented", "[lockgroup][paxos_storage]") {
  TempDir dir;
  fill(dir.path());
  test::RawLmdb raw(dir.path());
  CHECK(raw.get("meta", "format") == "3");
  auto members = raw.get("meta", "first_members");
  REQUIRE(members);
  REQUIRE(members->size() == 2 + 3 * 4 + 8);
  CHECK(read_be(members->data(), 2) == 3);
  CHECK(read_be(members->data() + 2 + 2 * 4, 4) == 3);
  auto promised = raw.get("meta", "promised");
  REQUIRE(promised);
  REQUIRE(promised->size() == 16);
  CHECK(read_be(promised->data(), 8) == 5);
  auto snapshot = raw.get("meta", "snapshot");
  REQUIRE(snapshot);
  CHECK(read_be(snapshot->data(), 8) == 1);
  CHECK(snapshot->substr(8, snapshot->size() - 16) == "snap");
  auto e2 = raw.get("accepted", be_key(2));
  REQUIRE(e2);
  CHECK(read_be(e2->data(), 8) == kE2.ballot);
  CHECK(e2->substr(8, e2->size() - 16) == kE2.value);
  CHECK_FALSE(raw.get("accepted", be_key(1)));
}

TEST_CASE("lmdb paxos storage: a snapshot deletes the entries it covers from disk", "[lockgroup][paxos_storage]") {
  TempDir dir;
  const std::vector<Slot> slots = {1, 255, 256, 257, 65'536};
  {
    auto s = open_lmdb(dir.path());
    for (Slot slot : slots) s->put_accepted(Entry{slot, 2, "v"});
    commit(*s);
    s->put_snapshot(256, "snap");
    commit(*s);
  }
  test::RawLmdb raw(dir.path());
  for (Slot slot : slots) {
    INFO("slot " << slot);
    CHECK(raw.get("accepted", be_key(slot)).has_value() == (slot > 256));
  }
}

TEST_CASE("lmdb paxos storage: another storage format is refused", "[lockgroup][paxos_storage]") {
  TempDir dir;
  fill(dir.path());
  {
    test::RawLmdb raw(dir.path());
    raw.put("meta", "format", "4");
    raw.commit();
  }
  auto r = LmdbPaxosStorage::open(dir.path(), {});
  INFO(r.status().to_string());
  CHECK(r.code() == Code::kStorageError);
  CHECK(r.status().message().find("format '4'") != std::string::npos);
}

TEST_CASE("lmdb paxos storage: a directory that does not exist is a StorageError", "[lockgroup][paxos_storage]") {
  TempDir dir;
  auto r = LmdbPaxosStorage::open(dir.sub("missing"), {});
  INFO(r.status().to_string());
  CHECK(r.code() == Code::kStorageError);
  CHECK(r.status().message().find(dir.sub("missing")) != std::string::npos);
}

TEST_CASE("lmdb paxos storage: a full map fails the commit and drops it, nothing else", "[lockgroup][paxos_storage]") {
  TempDir dir;
  auto s = open_lmdb(dir.path(), size_t{256} << 10);
  s->set_promised(3);
  s->put_accepted(kE2);
  commit(*s);

  s->set_promised(4);
  s->put_accepted(kE3);
  s->put_snapshot(1, std::string(1 << 20, 's'));  // does not fit a 256 KiB map
  Status st = s->commit();
  INFO(st.to_string());
  CHECK(st.code() == Code::kStorageError);
  CHECK(st.message().find("map full") != std::string::npos);
  CHECK_FALSE(s->dirty());
  DurableState state = loaded(*s);
  CHECK(state.promised == 3);
  CHECK(state.snapshot_slot == 0);
  CHECK(entries_of(state) == std::vector<Entry>{kE2});

  // Small changes still commit afterwards.
  s->put_accepted(kE3);
  commit(*s);
  s.reset();
  s = open_lmdb(dir.path(), size_t{256} << 10);
  state = loaded(*s);
  CHECK(state.promised == 3);
  CHECK(entries_of(state) == std::vector<Entry>{kE2, kE3});
}

// The journal (docs/storage.md): a commit is durable in DIR/journal; the data
// file catches up at checkpoints.
TEST_CASE("lmdb paxos storage: commits live in the journal until a checkpoint", "[lockgroup][paxos_storage][journal]") {
  TempDir dir, image;
  auto s = open_lmdb(dir.path());
  s->set_promised(5);
  s->put_accepted(kE2);
  commit(*s);
  test::copy_crash_image(dir.path(), image.path());
  {
    test::RawLmdb raw(image.path());
    CHECK_FALSE(raw.get("accepted", be_key(2)));  // not in the data file yet...
  }
  {
    auto crashed = open_lmdb(image.path());  // ...but replayed from the journal
    DurableState state = loaded(*crashed);
    CHECK(state.promised == 5);
    CHECK(entries_of(state) == std::vector<Entry>{kE2});
  }
  test::RawLmdb raw(image.path());  // opening checkpointed it
  CHECK(raw.get("accepted", be_key(2)));
}

TEST_CASE("lmdb paxos storage: a checkpoint comes every checkpoint_bytes of journal",
          "[lockgroup][paxos_storage][journal]") {
  TempDir dir;
  auto r = LmdbPaxosStorage::open(dir.path(), {.checkpoint_bytes = 4096});
  REQUIRE(r.is_ok());
  auto& s = *r.value();
  int checkpointed_at = -1;
  for (int i = 1; i <= 20 && checkpointed_at < 0; ++i) {
    s.put_accepted(Entry{static_cast<Slot>(i), 1, std::string(500, 'v')});
    commit(s);
    TempDir image;
    test::copy_crash_image(dir.path(), image.path());
    test::RawLmdb raw(image.path());
    if (raw.get("accepted", be_key(1))) checkpointed_at = i;
  }
  // About 550 bytes of journal per commit: the 8th passes 4096.
  CHECK(checkpointed_at == 8);
}

TEST_CASE("lmdb paxos storage: a snapshot too large for the journal is committed to LMDB at once",
          "[lockgroup][paxos_storage][journal]") {
  TempDir dir, image;
  auto r = LmdbPaxosStorage::open(dir.path(), {.journal_bytes = Journal::kMinFileBytes});
  REQUIRE(r.is_ok());
  r.value()->put_snapshot(7, std::string(10'000, 's'));
  commit(*r.value());
  test::copy_crash_image(dir.path(), image.path());
  test::RawLmdb raw(image.path());
  CHECK(raw.get("meta", "snapshot"));
}

TEST_CASE("lmdb paxos storage: a checkpoint that fails (map full) loses no commit",
          "[lockgroup][paxos_storage][journal]") {
  TempDir dir, image;
  auto r = LmdbPaxosStorage::open(dir.path(), {.map_size_bytes = size_t{64} << 10, .checkpoint_bytes = 4096});
  REQUIRE(r.is_ok());
  auto& s = *r.value();
  // Commits until one does not fit the map; each that returned ok is kept.
  std::vector<Entry> committed;
  for (Slot slot = 1;; ++slot) {
    REQUIRE(slot < 1000);
    const Entry e{slot, 1, std::string(500, 'a')};
    s.put_accepted(e);
    if (!s.commit().is_ok()) break;
    committed.push_back(e);
  }
  // Rewrites of a slot the open transaction holds need no new page, so they
  // fit; the checkpoints they bring fail on the full map and are undone.
  REQUIRE(committed.size() > 8);
  for (int i = 0; i < 20; ++i) {
    committed.back().ballot = 2 + static_cast<Ballot>(i);
    s.put_accepted(committed.back());
    commit(s);
  }
  CHECK(entries_of(loaded(s)) == committed);
  test::copy_crash_image(dir.path(), image.path());
  auto reopened = LmdbPaxosStorage::open(image.path(), {.map_size_bytes = size_t{64} << 20});
  REQUIRE(reopened.is_ok());
  CHECK(entries_of(loaded(*reopened.value())) == committed);
}

TEST_CASE("lmdb paxos storage: a failed journal sync fails that commit alone, and no later one is lost",
          "[lockgroup][paxos_storage][journal]") {
  TempDir dir, image;
  auto s = open_lmdb(dir.path());
  s->put_accepted(kE1);
  commit(*s);
  test::fail_next_syncs(1);
  s->put_accepted(kE2);
  CHECK(s->commit().code() == Code::kStorageError);
  CHECK(entries_of(loaded(*s)) == std::vector<Entry>{kE1});  // what a restarted node would start from
  s->put_accepted(kE3);  // rides in a checkpoint: the journal waits for one after a failure
  commit(*s);
  test::copy_crash_image(dir.path(), image.path());
  auto crashed = open_lmdb(image.path());
  CHECK(entries_of(loaded(*crashed)) == std::vector<Entry>{kE1, kE3});
}

TEST_CASE("lmdb paxos storage: a commit whose journal sync failed never comes back",
          "[lockgroup][paxos_storage][journal]") {
  TempDir dir, image;
  auto s = open_lmdb(dir.path());
  s->set_promised(9);
  test::fail_next_syncs(1);  // the record is written, its sync fails
  CHECK(s->commit().code() == Code::kStorageError);
  test::copy_crash_image(dir.path(), image.path());
  auto crashed = open_lmdb(image.path());
  CHECK(loaded(*crashed).promised == 0);
}

TEST_CASE("lmdb paxos storage: a format 1 directory is upgraded, and a missing journal is refused",
          "[lockgroup][paxos_storage][journal]") {
  TempDir dir;
  fill(dir.path());
  {
    test::RawLmdb raw(dir.path());
    raw.put("meta", "format", "1");
    raw.commit();
  }
  std::filesystem::remove(dir.sub("journal"));  // format 1 had none
  {
    auto s = open_lmdb(dir.path());
    DurableState state = loaded(*s);
    CHECK(state.promised == 5);
    CHECK(entries_of(state) == std::vector<Entry>{kE2, kE3});
  }
  {
    test::RawLmdb raw(dir.path());
    CHECK(raw.get("meta", "format") == "3");
  }
  REQUIRE(std::filesystem::exists(dir.sub("journal")));
  std::filesystem::remove(dir.sub("journal"));
  auto refused = LmdbPaxosStorage::open(dir.path(), {});
  REQUIRE(refused.code() == Code::kStorageError);
  CHECK_THAT(refused.status().message(), Catch::Contains("journal") && Catch::Contains("missing"));
}

TEST_CASE("lmdb paxos storage: a format 2 directory is upgraded to 3 and keeps its journal",
          "[lockgroup][paxos_storage][journal]") {
  TempDir dir;
  {
    auto s = open_lmdb(dir.path());
    s->set_promised(5);
    s->put_accepted(kE2);
    commit(*s);
  }
  {
    test::RawLmdb raw(dir.path());
    raw.put("meta", "format", "2");
    raw.commit();
  }
  {
    auto s = open_lmdb(dir.path());
    DurableState state = loaded(*s);
    CHECK(state.promised == 5);
    CHECK(entries_of(state) == std::vector<Entry>{kE2});
    CHECK_FALSE(state.first_members);  // a format 2 directory never recorded them
  }
  test::RawLmdb raw(dir.path());
  CHECK(raw.get("meta", "format") == "3");
}

}  // namespace
}  // namespace palisade::lockgroup
