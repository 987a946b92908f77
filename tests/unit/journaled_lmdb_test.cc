// JournaledLmdb (storage/journaled_lmdb.h) under a minimal store: what happens
// after a failed checkpoint, which the stores' tests reach only in part, and
// which checkpoints its observer is told of.
#include "storage/journaled_lmdb.h"

#include <lmdb.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "storage/journal.h"
#include "tests/support/sim_disk.h"
#include "tests/support/raw_lmdb.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

Status lmdb_error(const std::string& what, int rc) { return Status(Code::kStorageError, what + ": " + mdb_strerror(rc)); }
MDB_val val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

// A store whose journal records are "key=value", put in database "data".
struct KvStore {
  explicit KvStore(const std::string& dir, size_t map_bytes = size_t{1} << 20) {
    REQUIRE(mdb_env_create(&env) == 0);
    mdb_env_set_maxdbs(env, 2);
    mdb_env_set_mapsize(env, map_bytes);
    REQUIRE(mdb_env_open(env, dir.c_str(), MDB_NOTLS | MDB_NOLOCK, 0644) == 0);
    REQUIRE(journaled.start(env, dir, kCheckpointBytes).is_ok());
    REQUIRE(mdb_dbi_open(journaled.base(), "meta", MDB_CREATE, &meta) == 0);
    REQUIRE(mdb_dbi_open(journaled.base(), "data", MDB_CREATE, &data) == 0);
    MDB_val k = val("journal"), v;
    const bool create = mdb_get(journaled.base(), meta, &k, &v) == MDB_NOTFOUND;
    Status s = journaled.open_journal(meta, size_t{1} << 20, create);
    if (s.is_ok()) s = journaled.finish_open();
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  }
  ~KvStore() {
    journaled.close();
    mdb_env_close(env);
  }

  Status apply(MDB_txn* txn, std::string_view record) {
    const size_t eq = record.find('=');
    MDB_val k = val(record.substr(0, eq)), v = val(record.substr(eq + 1));
    int rc = mdb_put(txn, data, &k, &v, 0);
    return rc == 0 ? Status::ok() : lmdb_error("put", rc);
  }
  Status put(const std::string& key, const std::string& value) {
    const std::string record = key + "=" + value;
    Status s = journaled.write_whole([&](MDB_txn* txn) { return apply(txn, record); }, {});
    return s.is_ok() ? journaled.commit(record) : s;
  }
  std::optional<std::string> get(const std::string& key) {
    REQUIRE(journaled.begin_read().is_ok());
    MDB_val k = val(key), v;
    if (mdb_get(journaled.base(), data, &k, &v) != 0) return std::nullopt;
    return std::string(static_cast<const char*>(v.mv_data), v.mv_size);
  }

  static constexpr size_t kCheckpointBytes = 4096;
  MDB_env* env = nullptr;
  int applied = 0;              // records replayed: at opening and at each rebuild
  bool refuse_records = false;  // replaying fails
  JournaledLmdb journaled{"test-daemon", lmdb_error, [this](MDB_txn* txn, std::string_view record) {
                            ++applied;
                            return refuse_records ? Status(Code::kStorageError, "record refused") : apply(txn, record);
                          }};
  MDB_dbi meta = 0, data = 0;
};

TEST_CASE("journaled lmdb: a failed checkpoint rebuilds the base from LMDB and the journal", "[journal][lmdb]") {
  TempDir dir, image;
  KvStore kv(dir.path());
  REQUIRE(kv.put("a", "1").is_ok());
  REQUIRE(kv.put("b", "2").is_ok());
  kv.applied = 0;
  test::fail_next_syncs(1);
  CHECK(kv.journaled.checkpoint().code() == Code::kStorageError);  // LMDB's sync failed
  CHECK(kv.applied == 2);                                          // both records, read back from the journal
  CHECK(kv.journaled.broken().is_ok());
  CHECK(kv.journaled.unchecked());
  CHECK(kv.get("a") == "1");
  CHECK(kv.get("b") == "2");
  REQUIRE(kv.put("c", "3").is_ok());
  REQUIRE(kv.journaled.checkpoint().is_ok());
  test::copy_crash_image(dir.path(), image.path());
  test::RawLmdb raw(image.path());
  CHECK(raw.get("data", "a") == "1");
  CHECK(raw.get("data", "c") == "3");
}

TEST_CASE("journaled lmdb: a failed write is undone by a rebuild that keeps the batch's earlier changes, "
          "later ones by a nested transaction",
          "[journal][lmdb]") {
  TempDir dir, image;
  KvStore kv(dir.path(), size_t{64} << 10);
  REQUIRE(kv.put("a", "1").is_ok());
  auto write = [&kv](const std::string& record, std::string_view keep) {
    return kv.journaled.write_whole([&](MDB_txn* txn) { return kv.apply(txn, record); }, keep);
  };
  const std::string huge = "d=" + std::string(100 << 10, 'd');  // more than the map holds
  REQUIRE(write("b=2", {}).is_ok());
  REQUIRE(write("c=3", "b=2").is_ok());
  // `keep` is what the caller says the batch held before: here b alone.
  CHECK_THAT(write(huge, "b=2").message(), Catch::Contains("MDB_MAP_FULL"));
  CHECK(kv.journaled.rebuilds() == 1);
  CHECK(kv.get("a") == "1");  // journaled before
  CHECK(kv.get("b") == "2");  // kept
  CHECK_FALSE(kv.get("c"));   // dropped
  CHECK_FALSE(kv.get("d"));
  // A full map stays full, and each rebuild reads back the journal: from now
  // on a failed write is undone by the nested transaction it ran in.
  for (int i = 0; i < 3; ++i) CHECK_THAT(write(huge, "b=2").message(), Catch::Contains("MDB_MAP_FULL"));
  CHECK(kv.journaled.rebuilds() == 1);
  CHECK(kv.get("b") == "2");
  REQUIRE(kv.journaled.commit("b=2").is_ok());
  test::copy_crash_image(dir.path(), image.path());
  KvStore crashed(image.path());
  CHECK(crashed.get("a") == "1");
  CHECK(crashed.get("b") == "2");
  CHECK_FALSE(crashed.get("c"));
}

TEST_CASE("journaled lmdb: a batch whose journal append failed is gone from the base", "[journal][lmdb]") {
  TempDir dir;
  KvStore kv(dir.path());
  REQUIRE(kv.put("a", "1").is_ok());
  test::fail_next_syncs(1);
  CHECK(kv.put("b", "2").code() == Code::kStorageError);
  CHECK_FALSE(kv.get("b"));
  CHECK(kv.get("a") == "1");
  CHECK(kv.journaled.broken().is_ok());
  REQUIRE(kv.put("c", "3").is_ok());
  CHECK(kv.get("c") == "3");
}

TEST_CASE("journaled lmdb: when the rebuild fails too, every call fails until a restart replays the journal",
          "[journal][lmdb]") {
  TempDir dir;
  {
    KvStore kv(dir.path(), size_t{64} << 10);
    REQUIRE(kv.put("a", "1").is_ok());  // journaled, not checkpointed
    kv.refuse_records = true;           // the rebuild's replay fails
    SECTION("after a failed checkpoint") {
      test::fail_next_syncs(1);
      CHECK(kv.journaled.checkpoint().code() == Code::kStorageError);
    }
    SECTION("after a failed write") {
      CHECK_THAT(kv.put("d", std::string(100 << 10, 'd')).message(), Catch::Contains("MDB_MAP_FULL"));
    }
    // A base rebuilt halfway (LMDB without the journal) is never checkpointed.
    const Status broken = kv.journaled.broken();
    REQUIRE(broken.code() == Code::kStorageError);
    CHECK_THAT(broken.message(), Catch::Contains("record refused") && Catch::Contains("restart test-daemon"));
    CHECK(kv.journaled.begin_read().message() == broken.message());
    CHECK(kv.put("b", "2").message() == broken.message());
    CHECK(kv.journaled.checkpoint().message() == broken.message());
  }  // closed without a checkpoint
  {
    test::RawLmdb raw(dir.path());
    CHECK_FALSE(raw.get("data", "a"));
  }
  KvStore restarted(dir.path());
  CHECK(restarted.get("a") == "1");
  CHECK_FALSE(restarted.get("b"));
}

TEST_CASE("journaled lmdb: after a failed checkpoint the next is tried checkpoint_bytes of journal later",
          "[journal][lmdb]") {
  TempDir dir;
  KvStore kv(dir.path(), size_t{64} << 10);
  const std::string x(500, 'x'), y(500, 'y');
  int keys = 0;
  while (kv.put("k" + std::to_string(keys), x).is_ok()) REQUIRE(++keys < 1000);  // until the map is full
  // Rewrites of a key the base holds need no new page, so they fit; the
  // checkpoints they bring fail on the full map, each followed by a rebuild.
  const std::string last = "k" + std::to_string(keys - 1);
  std::vector<int> rebuilt_at;
  for (int i = 0; i < 40; ++i) {
    const int applied = kv.applied;
    REQUIRE(kv.put(last, y).is_ok());
    if (kv.applied > applied) rebuilt_at.push_back(i);
  }
  REQUIRE(rebuilt_at.size() >= 2);
  const size_t record_bytes = Journal::kHeaderBytes + last.size() + 1 + y.size() + Journal::kTrailerBytes;
  for (size_t i = 1; i < rebuilt_at.size(); ++i) {
    CHECK(static_cast<size_t>(rebuilt_at[i] - rebuilt_at[i - 1]) * record_bytes >= KvStore::kCheckpointBytes);
  }
  CHECK(kv.get(last) == y);
}

TEST_CASE("journaled lmdb: the observer hears of each checkpoint that succeeds, not of a failed one or close's",
          "[journal][lmdb]") {
  TempDir dir;
  KvStore kv(dir.path());
  int observed = 0;
  kv.journaled.on_checkpoint([&](std::chrono::steady_clock::duration took) {
    CHECK(took.count() >= 0);
    ++observed;
  });
  REQUIRE(kv.put("a", "1").is_ok());
  CHECK(observed == 0);  // journaled, not checkpointed
  REQUIRE(kv.journaled.checkpoint().is_ok());
  CHECK(observed == 1);

  REQUIRE(kv.put("b", "2").is_ok());
  test::fail_next_syncs(1);
  REQUIRE(kv.journaled.checkpoint().code() == Code::kStorageError);
  CHECK(observed == 1);

  // Past checkpoint_bytes of journal, a commit checkpoints.
  const std::string value(1000, 'v');
  for (int i = 0; observed == 1; ++i) {
    REQUIRE(i < 10);
    REQUIRE(kv.put("k" + std::to_string(i), value).is_ok());
  }
  CHECK(observed == 2);
  REQUIRE(kv.put("c", "3").is_ok());
  kv.journaled.close();  // checkpoints "c" unreported
  CHECK(observed == 2);
  CHECK_FALSE(kv.journaled.unchecked());
}

}  // namespace
}  // namespace palisade
