// The simulated disk (tests/support/sim_disk.h) on its own, then under the
// journal and a real LmdbStore: unsynced writes lost at a crash, torn writes,
// failed syncs, a full disk, and a disk that lies about fsync (the negative
// control the durability checks must catch).
#include "tests/support/sim_disk.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/random.h"
#include "base/temp_dir.h"
#include "replica/lmdb_store.h"
#include "storage/journal.h"

namespace palisade {
namespace {

using test::SimDisk;
using test::SimDiskScope;

std::string contents(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

struct RawFile {
  explicit RawFile(const std::string& path) : fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    REQUIRE(fd >= 0);
  }
  ~RawFile() { ::close(fd); }
  ssize_t put(std::string_view s, off_t at) { return ::pwrite(fd, s.data(), s.size(), at); }
  int fd;
};

TEST_CASE("sim disk: a crash loses unsynced writes and keeps synced ones", "[sim_disk]") {
  TempDir dir;
  SimDiskScope disk(dir.path());
  const std::string path = dir.sub("f");
  {
    RawFile f(path);
    REQUIRE(f.put("aaaa", 0) == 4);
    REQUIRE(::fdatasync(f.fd) == 0);
    REQUIRE(f.put("bb", 1) == 2);  // overwrites
    REQUIRE(f.put("cccc", 4) == 4);  // grows the file
    CHECK(SimDisk::unsynced_writes() == 2);
    SimDisk::crash_losing_everything();
    CHECK(f.put("dddd", 0) == 4);  // swallowed
    CHECK(::fdatasync(f.fd) == 0);
    CHECK(contents(path) == "abbacccc");
  }
  SimDisk::revive();
  CHECK(contents(path) == "aaaa");
  const SimDisk::Counters c = SimDisk::counters();
  CHECK(c.crashes == 1);
  CHECK(c.writes_lost == 2);
  CHECK(c.swallowed == 2);
}

TEST_CASE("sim disk: write and writev at the descriptor's offset are logged too", "[sim_disk]") {
  TempDir dir;
  SimDiskScope disk(dir.path());
  const std::string path = dir.sub("f");
  {
    RawFile f(path);
    REQUIRE(::write(f.fd, "ab", 2) == 2);
    REQUIRE(::fsync(f.fd) == 0);
    REQUIRE(::write(f.fd, "cd", 2) == 2);
    char x[] = "xy", z[] = "z";
    const struct iovec iov[] = {{x, 2}, {z, 1}};
    REQUIRE(::lseek(f.fd, 1, SEEK_SET) == 1);
    REQUIRE(::writev(f.fd, iov, 2) == 3);
    CHECK(::lseek(f.fd, 0, SEEK_CUR) == 4);
    CHECK(contents(path) == "axyz");
    CHECK(SimDisk::unsynced_writes() == 2);
    SimDisk::crash_losing_everything();
  }
  SimDisk::revive();
  CHECK(contents(path) == "ab");
}

TEST_CASE("sim disk: writes on an untracked file, and durable ones, pass straight through", "[sim_disk]") {
  TempDir tracked, other;
  SimDiskScope disk(tracked.path());
  {
    RawFile f(other.sub("f"));
    REQUIRE(f.put("x", 0) == 1);
    int fd = ::open(tracked.sub("meta").c_str(), O_WRONLY | O_CREAT | O_DSYNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, "m", 1, 0) == 1);
    ::close(fd);
    CHECK(SimDisk::unsynced_writes() == 0);
    SimDisk::crash_losing_everything();
    REQUIRE(f.put("y", 1) == 1);
  }
  SimDisk::revive();
  CHECK(contents(other.sub("f")) == "xy");
  CHECK(contents(tracked.sub("meta")) == "m");
}

// Two machines' directories, a/ and b/, on one simulated disk.
struct TwoMachines {
  TwoMachines() {
    std::filesystem::create_directories(dir.sub("a"));
    std::filesystem::create_directories(dir.sub("b"));
  }
  TempDir dir;
  SimDiskScope disk{dir.path()};
  Random rng{7};
};

TEST_CASE("sim disk: one directory's crash leaves the other tracked files running", "[sim_disk]") {
  TwoMachines m;
  {
    RawFile a(m.dir.sub("a/f")), b(m.dir.sub("b/f"));
    REQUIRE(a.put("a1", 0) == 2);
    REQUIRE(b.put("b1", 0) == 2);  // unsynced, and not a's machine: the crash keeps it
    SimDisk::crash_dir(m.dir.sub("a"), m.rng, /*keep=*/0, /*cut=*/0);
    CHECK(SimDisk::crashed());
    REQUIRE(a.put("a2", 2) == 2);  // swallowed
    REQUIRE(b.put("b2", 2) == 2);  // written
    CHECK(contents(m.dir.sub("b/f")) == "b1b2");
  }
  SimDisk::revive();
  CHECK_FALSE(SimDisk::crashed());
  CHECK(contents(m.dir.sub("a/f")).empty());
  CHECK(contents(m.dir.sub("b/f")) == "b1b2");
  CHECK(SimDisk::unsynced_writes() == 2);  // b's, still undoable by a crash of its own
  SimDisk::crash_losing_everything();
  SimDisk::revive();
  CHECK(contents(m.dir.sub("b/f")).empty());
}

TEST_CASE("sim disk: a crash armed in one directory counts and stops only its writes", "[sim_disk]") {
  TwoMachines m;
  {
    RawFile a(m.dir.sub("a/f")), b(m.dir.sub("b/f"));
    SimDisk::crash_dir_after(m.dir.sub("a"), 2, m.rng, /*keep=*/0, /*cut=*/0);
    REQUIRE(b.put("b1", 0) == 2);  // not counted
    REQUIRE(b.put("b2", 2) == 2);
    REQUIRE(a.put("a1", 0) == 2);  // the first of a's
    CHECK_FALSE(SimDisk::crashed());
    REQUIRE(a.put("a2", 2) == 2);  // the second: the crash, just before it
    CHECK(SimDisk::crashed());
    REQUIRE(b.put("b3", 4) == 2);
  }
  SimDisk::revive();
  CHECK(contents(m.dir.sub("a/f")).empty());
  CHECK(contents(m.dir.sub("b/f")) == "b1b2b3");
}

TEST_CASE("sim disk: a random crash leaves, on each byte, the latest write that persisted", "[sim_disk]") {
  // Each unsynced write is kept, lost or cut; whatever the draw, every byte
  // holds what some write (or the synced state) put there, never an undo of
  // an older write over a newer one that persisted.
  bool saw_mixed = false;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    TempDir dir;
    SimDiskScope disk(dir.path());
    const std::string path = dir.sub("f");
    Random rng(seed);
    std::vector<std::string> writes = {"0000000000000000", "1111111111", "22222", "333333333333333333"};
    std::vector<size_t> offsets = {0, 4, 2, 10};
    {
      RawFile f(path);
      REQUIRE(f.put(writes[0], 0) == 16);
      REQUIRE(::fsync(f.fd) == 0);
      for (size_t i = 1; i < writes.size(); ++i) REQUIRE(f.put(writes[i], static_cast<off_t>(offsets[i])) > 0);
      SimDisk::crash(rng);
    }
    SimDisk::revive();
    const std::string after = contents(path);
    INFO("seed " << seed << ": " << after);
    REQUIRE(after.size() >= 16);
    for (size_t b = 0; b < after.size(); ++b) {
      // Every byte shows the synced state or a write that covered it.
      const char c = after[b];
      REQUIRE((c >= '0' && c <= '3'));
      const size_t i = static_cast<size_t>(c - '0');
      REQUIRE(b >= offsets[i]);
      REQUIRE(b < offsets[i] + writes[i].size());
    }
    // A write whose last byte persisted persisted whole (a cut keeps a
    // prefix): no undo of an older write shows through it, only later writes.
    for (size_t i = 1; i < writes.size(); ++i) {
      const size_t last = offsets[i] + writes[i].size() - 1;
      if (last >= after.size() || after[last] != static_cast<char>('0' + i)) continue;
      for (size_t b = offsets[i]; b <= last; ++b) {
        bool later = false;
        for (size_t j = i + 1; j < writes.size(); ++j) later |= b >= offsets[j] && b < offsets[j] + writes[j].size();
        if (!later) CHECK(after[b] == static_cast<char>('0' + i));
      }
    }
    saw_mixed = saw_mixed || (after.find('3') != std::string::npos && after.find('1') == std::string::npos);
  }
  CHECK(saw_mixed);
}

TEST_CASE("sim disk: a failed sync leaves its writes unsynced for good", "[sim_disk]") {
  TempDir dir;
  SimDiskScope disk(dir.path());
  const std::string path = dir.sub("f");
  {
    RawFile f(path);
    REQUIRE(f.put("aa", 0) == 2);
    SimDisk::fail_syncs(1);
    CHECK(::fdatasync(f.fd) == -1);
    CHECK(errno == EIO);
    REQUIRE(f.put("b", 2) == 1);
    REQUIRE(::fdatasync(f.fd) == 0);  // vouches for "b" alone
    CHECK(SimDisk::unsynced_writes() == 1);
    SimDisk::crash_losing_everything();
  }
  SimDisk::revive();
  CHECK(contents(path) == std::string("\0\0b", 3));
  CHECK(SimDisk::counters().syncs_failed == 1);
}

TEST_CASE("sim disk: a full disk refuses writes that grow a file, or every write", "[sim_disk]") {
  TempDir dir;
  SimDiskScope disk(dir.path());
  RawFile f(dir.sub("f"));
  REQUIRE(f.put("aaaa", 0) == 4);
  SimDisk::fill(SimDisk::Full::kGrowth);
  CHECK(f.put("bb", 1) == 2);
  CHECK(f.put("cc", 3) == -1);
  CHECK(errno == ENOSPC);
  SimDisk::fill(SimDisk::Full::kEverything);
  CHECK(f.put("d", 0) == -1);
  CHECK(errno == ENOSPC);
  SimDisk::fill(SimDisk::Full::kNo);
  CHECK(f.put("ee", 3) == 2);
  CHECK(contents(dir.sub("f")) == "abbee");
  CHECK(SimDisk::counters().writes_refused == 2);
}

TEST_CASE("sim disk: a torn write writes a prefix, and the retry fails", "[sim_disk]") {
  TempDir dir;
  SimDiskScope disk(dir.path());
  RawFile f(dir.sub("f"));
  Random rng(3);
  SimDisk::tear_next_write(rng);
  const ssize_t n = f.put("abcdefgh", 0);
  REQUIRE(n >= 1);
  REQUIRE(n < 8);
  CHECK(f.put("fgh", n) == -1);
  CHECK(errno == EIO);
  CHECK(contents(dir.sub("f")) == std::string("abcdefgh").substr(0, static_cast<size_t>(n)));
  CHECK(f.put("x", 0) == 1);
  CHECK(SimDisk::counters().writes_torn == 1);
}

// The journal on the simulated disk.

TEST_CASE("sim disk: a journal record whose sync failed is gone after a crash that loses it, and a synced one stays",
          "[sim_disk][journal]") {
  TempDir dir;
  SimDiskScope disk(dir.path());
  const std::string path = dir.sub("journal");
  {
    auto j = Journal::open(path, 64 << 10, true);
    REQUIRE(j.is_ok());
    REQUIRE(j.value()->append("synced").is_ok());
    SimDisk::fail_syncs(1);
    CHECK(j.value()->append("unsynced").code() == Code::kStorageError);
    SimDisk::crash_losing_everything();
  }
  SimDisk::revive();
  auto j = Journal::open(path, 0, false);
  REQUIRE(j.is_ok());
  auto replayed = j.value()->replay({});
  REQUIRE(replayed.is_ok());
  CHECK(replayed.value() == std::vector<std::string>{"synced"});
}

TEST_CASE("sim disk: a torn journal append is found at replay, and nothing after it replays", "[sim_disk][journal]") {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    TempDir dir;
    SimDiskScope disk(dir.path());
    const std::string path = dir.sub("journal");
    Random rng(seed);
    {
      auto j = Journal::open(path, 64 << 10, true);
      REQUIRE(j.is_ok());
      REQUIRE(j.value()->append("first").is_ok());
      SimDisk::tear_next_write(rng);
      CHECK(j.value()->append(std::string(300, 't')).code() == Code::kStorageError);
      CHECK(j.value()->append("after").code() == Code::kStorageError);  // refused until a checkpoint
      SimDisk::crash(rng, 1.0);  // the torn prefix is on disk
    }
    SimDisk::revive();
    CHECK(SimDisk::counters().writes_torn == 1);
    CHECK(SimDisk::counters().writes_kept >= 1);
    auto j = Journal::open(path, 0, false);
    REQUIRE(j.is_ok());
    auto replayed = j.value()->replay({});
    REQUIRE(replayed.is_ok());
    CHECK(replayed.value() == std::vector<std::string>{"first"});
  }
}

// A real LmdbStore on the simulated disk. Each batch raises the fence floors
// of a few locks to its number.

using replica::Change;
using replica::LmdbStore;

constexpr LmdbStore::Options kSmall{
    .map_size_bytes = size_t{4} << 20, .journal_bytes = size_t{16} << 10, .checkpoint_bytes = size_t{4} << 10};

std::unique_ptr<LmdbStore> open_store(const std::string& dir) {
  auto r = LmdbStore::open(dir, kSmall);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return std::move(r).value();
}

Status commit_batch(LmdbStore& s, uint64_t batch, const std::vector<std::string>& locks) {
  for (const std::string& lock : locks) {
    REQUIRE(s.apply(Change{.lock = lock, .floor = batch}).is_ok());
  }
  return s.commit();
}

uint64_t floor_of(LmdbStore& s, const std::string& lock) {
  auto f = s.fence_floor(lock);
  INFO(f.status().to_string());
  REQUIRE(f.is_ok());
  return f.value();
}

// Commits batches on `dir` (random locks of 8) until a crash armed at a random
// write or sync; then reopens, and returns how many acknowledged floors were
// not found (0 on an honest disk), or -1 when the store refuses to open (its
// journal found a record missing with a later one intact).
int lost_after_random_crash(const std::string& dir, uint64_t seed) {
  Random rng(seed);
  std::map<std::string, uint64_t> acked;  // lock -> floor of the last batch acknowledged
  {
    auto s = open_store(dir);
    SimDisk::crash_after(rng.uniform(1, 200), rng);
    for (uint64_t batch = 1; !SimDisk::crashed(); ++batch) {
      std::vector<std::string> locks;
      for (uint64_t i = rng.uniform(1, 3); i > 0; --i) locks.push_back("lock" + std::to_string(rng.uniform(0, 7)));
      const Status st = commit_batch(*s, batch, locks);
      if (SimDisk::crashed()) break;  // died in this commit: not acknowledged
      REQUIRE(st.is_ok());
      for (const std::string& lock : locks) acked[lock] = batch;
    }
  }  // the store's teardown writes nothing durable
  SimDisk::revive();
  auto opened = LmdbStore::open(dir, kSmall);
  if (!opened.is_ok()) {
    UNSCOPED_INFO("seed " << seed << ": " << opened.status().to_string());
    return -1;
  }
  auto s = std::move(opened).value();
  int lost = 0;
  for (const auto& [lock, floor] : acked) {
    const uint64_t found = floor_of(*s, lock);
    // The crashed batch, never acknowledged, may have raised it further.
    if (found < floor) ++lost;
  }
  return lost;
}

TEST_CASE("sim disk: LmdbStore keeps every acknowledged batch across random crashes", "[sim_disk][lmdb]") {
  uint64_t lost_writes = 0;
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    TempDir dir;
    SimDiskScope disk(dir.path());
    INFO("seed " << seed);
    CHECK(lost_after_random_crash(dir.path(), seed) == 0);
    lost_writes += SimDisk::counters().writes_lost + SimDisk::counters().writes_cut;
  }
  CHECK(lost_writes > 0);  // the crashes did undo writes
}

TEST_CASE("sim disk: on a disk that lies about the journal's fsync, the check finds a lost batch", "[sim_disk][lmdb]") {
  // Either an acknowledged batch is missing, or the journal sees a hole and
  // the store refuses to open: both are caught.
  int seeds_with_loss = 0, seeds_refused = 0;
  uint64_t lies = 0;
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    TempDir dir;
    SimDiskScope disk(dir.path());
    SimDisk::lie_about_syncs("journal");
    const int lost = lost_after_random_crash(dir.path(), seed);
    seeds_with_loss += lost > 0;
    seeds_refused += lost < 0;
    lies += SimDisk::counters().syncs_lied;
  }
  CHECK(lies > 0);
  CHECK(seeds_with_loss > 0);
  CHECK(seeds_refused > 0);
}

TEST_CASE("sim disk: LmdbStore on a full disk fails commits, keeps serving reads, and recovers", "[sim_disk][lmdb]") {
  TempDir dir;
  SimDiskScope disk(dir.path());
  auto s = open_store(dir.path());
  REQUIRE(commit_batch(*s, 1, {"a"}).is_ok());
  SimDisk::fill(SimDisk::Full::kEverything);
  CHECK(commit_batch(*s, 2, {"a", "b"}).code() == Code::kStorageError);
  CHECK(SimDisk::counters().writes_refused > 0);
  CHECK(floor_of(*s, "a") == 1);
  CHECK(floor_of(*s, "b") == 0);
  SimDisk::fill(SimDisk::Full::kNo);
  REQUIRE(commit_batch(*s, 3, {"b"}).is_ok());
  CHECK(floor_of(*s, "b") == 3);
  Random rng(1);
  SimDisk::crash(rng);
  s.reset();
  SimDisk::revive();
  s = open_store(dir.path());
  CHECK(floor_of(*s, "a") == 1);
  CHECK(floor_of(*s, "b") == 3);
}

TEST_CASE("sim disk: a failed journal sync fails the commit, and the batch is not served, and after a crash it is "
          "wholly there or wholly gone",
          "[sim_disk][lmdb]") {
  int present = 0, absent = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    TempDir dir;
    SimDiskScope disk(dir.path());
    Random rng(seed);
    {
      auto s = open_store(dir.path());
      REQUIRE(commit_batch(*s, 1, {"a"}).is_ok());
      SimDisk::fail_syncs(1);
      CHECK(commit_batch(*s, 2, {"a", "b"}).code() == Code::kStorageError);
      CHECK(SimDisk::counters().syncs_failed == 1);
      CHECK(floor_of(*s, "a") == 1);
      CHECK(floor_of(*s, "b") == 0);
      SimDisk::crash(rng);
    }
    SimDisk::revive();
    auto s = open_store(dir.path());
    const uint64_t a = floor_of(*s, "a"), b = floor_of(*s, "b");
    INFO("seed " << seed << ": a " << a << ", b " << b);
    CHECK(((a == 1 && b == 0) || (a == 2 && b == 2)));
    (a == 2 ? present : absent)++;
  }
  CHECK(absent > 0);
}

}  // namespace
}  // namespace palisade
