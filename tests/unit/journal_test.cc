// The write-ahead journal (storage/journal.h): what is appended replays after a
// reopen, from the last checkpoint on, across wrap-around, up to a torn record;
// damage, forgery and failed syncs are caught.
#include "storage/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "base/big_endian.h"
#include "wire/hash.h"
#include "tests/support/sim_disk.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using Records = std::vector<std::string>;
constexpr uint64_t kRing = Journal::kFileHeaderBytes;  // where the first record goes

std::unique_ptr<Journal> create_journal(const std::string& path, size_t size = Journal::kMinFileBytes) {
  auto j = Journal::open(path, size, /*create=*/true);
  INFO(j.status().to_string());
  REQUIRE(j.is_ok());
  return std::move(j.value());
}

std::unique_ptr<Journal> reopen_journal(const std::string& path) {
  auto j = Journal::open(path, 0, /*create=*/false);
  INFO(j.status().to_string());
  REQUIRE(j.is_ok());
  return std::move(j.value());
}

Records replay(Journal& j, Journal::Position from) {
  auto r = j.replay(from);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return r.value();
}

void append(Journal& j, const std::string& payload) {
  Status s = j.append(payload);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
}

size_t record_bytes(size_t payload) { return Journal::kHeaderBytes + payload + Journal::kTrailerBytes; }

void flip_byte(const std::string& path, off_t offset) {
  int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  char c = 0;
  REQUIRE(::pread(fd, &c, 1, offset) == 1);
  c ^= 0x20;
  REQUIRE(::pwrite(fd, &c, 1, offset) == 1);
  ::close(fd);
}

TEST_CASE("journal: records appended replay in order after a reopen", "[journal]") {
  TempDir dir;
  const std::string path = dir.sub("journal");
  {
    auto j = create_journal(path);
    CHECK(replay(*j, {}).empty());
    append(*j, "one");
    append(*j, "");
    append(*j, "three");
  }
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(st.st_size == static_cast<off_t>(Journal::kMinFileBytes));  // created at its full size

  auto j = reopen_journal(path);
  CHECK(replay(*j, {}) == Records{"one", "", "three"});
  append(*j, "four");  // continues after the last record
  auto again = reopen_journal(path);
  CHECK(replay(*again, {}) == Records{"one", "", "three", "four"});
}

TEST_CASE("journal: replay starts at the checkpoint's position", "[journal]") {
  TempDir dir;
  auto j = create_journal(dir.sub("journal"));
  append(*j, "before");
  j->checkpointed();
  const Journal::Position checkpoint = j->next();
  CHECK(j->unchecked_bytes() == 0);
  append(*j, "after");
  CHECK(j->unchecked_bytes() == record_bytes(5));

  auto reopened = reopen_journal(dir.sub("journal"));
  CHECK(replay(*reopened, checkpoint) == Records{"after"});
  CHECK(reopened->unchecked_bytes() == j->unchecked_bytes());
  CHECK(Journal::decode_position(Journal::encode_position(checkpoint)) == checkpoint);
  CHECK_FALSE(Journal::decode_position("short"));
}

TEST_CASE("journal: replay stops at a torn last record, and the next append replaces it", "[journal]") {
  TempDir dir;
  const std::string path = dir.sub("journal");
  {
    auto j = create_journal(path);
    append(*j, "kept");
    append(*j, "torn");
  }
  const off_t second = kRing + record_bytes(4);
  // Any byte of the second record: magic, sequence number, payload, checksum.
  for (off_t at : {second + 3, second + 12, second + 17, second + 27}) {
    INFO("byte " << at);
    flip_byte(path, at);
    auto j = reopen_journal(path);
    CHECK(replay(*j, {}) == Records{"kept"});
    flip_byte(path, at);  // restored
    auto whole = reopen_journal(path);
    CHECK(replay(*whole, {}) == Records{"kept", "torn"});
  }
  flip_byte(path, second + 20);
  auto j = reopen_journal(path);
  CHECK(replay(*j, {}) == Records{"kept"});
  append(*j, "new");
  auto reopened = reopen_journal(path);
  CHECK(replay(*reopened, {}) == Records{"kept", "new"});
}

TEST_CASE("journal: a damaged record with an intact one after it is Corrupt, not an end", "[journal]") {
  TempDir dir;
  const std::string path = dir.sub("journal");
  auto expect_corrupt = [&](Journal::Position from, const std::string& named) {
    auto j = reopen_journal(path);
    auto r = j->replay(from);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kCorrupt);
    CHECK_THAT(r.status().message(), Catch::Contains(named));
  };
  {
    auto j = create_journal(path);
    append(*j, "one");
    append(*j, "two");
    append(*j, "three");
  }
  const off_t two = kRing + record_bytes(3);
  for (off_t at : {two + 2, two + 6, two + 12, two + 16, two + 21}) {  // magic, length, seq, payload, checksum
    INFO("byte " << at);
    flip_byte(path, at);
    expect_corrupt({}, "record 2");
    flip_byte(path, at);
  }
  SECTION("damage just before the end of the file, the next record at the ring's start") {
    auto j = create_journal(path);
    append(*j, std::string(1500, 'a'));
    j->checkpointed();
    const Journal::Position checkpoint = j->next();
    append(*j, std::string(1500, 'b'));  // [1524, 3048) of the ring
    append(*j, std::string(1500, 'c'));  // does not fit after it: at the ring's start
    flip_byte(path, kRing + 1524 + 100);
    expect_corrupt(checkpoint, "record 2");
  }
  SECTION("damage at the ring's start, the next record after it") {
    auto j = create_journal(path);
    append(*j, std::string(1500, 'a'));
    append(*j, std::string(1500, 'b'));
    j->checkpointed();
    const Journal::Position checkpoint = j->next();
    append(*j, std::string(1500, 'c'));  // does not fit after 'b': at the ring's start
    append(*j, std::string(1000, 'd'));
    flip_byte(path, kRing + 100);
    expect_corrupt(checkpoint, "record 3");
  }
}

TEST_CASE("journal: a damaged or cut file header is refused", "[journal]") {
  TempDir dir;
  const std::string path = dir.sub("journal");
  for (off_t at : {off_t{0}, off_t{12}, off_t{26}, off_t{35}}) {  // magic, key, size, checksum
    INFO("byte " << at);
    create_journal(path);
    flip_byte(path, at);
    auto j = Journal::open(path, 0, /*create=*/false);
    REQUIRE_FALSE(j.is_ok());
    CHECK_THAT(j.status().message(), Catch::Contains("damaged"));
  }
  create_journal(path, 3 * 4096);
  REQUIRE(::truncate(path.c_str(), 2 * 4096) == 0);
  auto cut = Journal::open(path, 0, /*create=*/false);
  REQUIRE_FALSE(cut.is_ok());
  CHECK_THAT(cut.status().message(), Catch::Contains("damaged") && Catch::Contains("8192"));
}

// Found by tests/fuzz/journal_fuzz.cc, with positions a damaged store could
// keep. One in the file header replayed as an empty journal, and the next
// append went there: over the header, and the journal never opened again. One
// numbered 2^64 - 1 replayed too, and the record appended next, numbered so,
// was followed by record 0: replay then found an intact record numbered above
// the end of its scan, and refused the journal (Corrupt).
TEST_CASE("journal: a position outside the ring, or numbered 2^63 or more, is Corrupt", "[journal]") {
  TempDir dir;
  const std::string path = dir.sub("journal");
  auto j = create_journal(path);
  // The fuzzer's inputs: its mode byte, then the position (seq, offset).
  const std::string in_header("\x17\x00\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 17);
  const std::string last_seq("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x10\x50", 17);
  auto header = Journal::decode_position(in_header.substr(1));
  auto last = Journal::decode_position(last_seq.substr(1));
  REQUIRE(header);
  REQUIRE(last);
  CHECK(header->offset == 0);
  CHECK(last->seq == ~uint64_t{0});
  CHECK(last->offset == kRing + 80);
  const uint64_t end = j->size_bytes();
  for (Journal::Position from : {*header, *last, Journal::Position{1, kRing - 1}, Journal::Position{1, end + 1},
                                 Journal::Position{1, ~uint64_t{0} - 8}, Journal::Position{uint64_t{1} << 63, kRing}}) {
    INFO("seq " << from.seq << ", offset " << from.offset);
    CHECK(j->replay(from).code() == Code::kCorrupt);
    CHECK(j->reread(from).code() == Code::kCorrupt);
  }
  // Both ends of the ring are positions, and so is the highest number.
  CHECK(replay(*j, {(uint64_t{1} << 63) - 1, kRing}).empty());
  CHECK(replay(*j, {1, end}).empty());
  CHECK(replay(*j, {1, kRing}).empty());
  append(*j, "after");
  CHECK(replay(*reopen_journal(path), {1, kRing}) == Records{"after"});
}

TEST_CASE("journal: a record not checksummed with the file's key is not replayed", "[journal]") {
  // A client controls the bytes of its values, which end up in payloads: a
  // record planted inside a payload must never pass for a real one.
  TempDir dir;
  auto j = create_journal(dir.sub("journal"));
  std::string forged;
  append_be(forged, (uint64_t{0x504a524e} << 32) | 4, 8);
  append_be(forged, 7, 8);
  forged += "EVIL";
  append_be(forged, hash64(forged), 8);  // any checksum one can compute without the key
  append(*j, "xxxx" + forged);
  const uint64_t planted = kRing + Journal::kHeaderBytes + 4;
  auto reopened = reopen_journal(dir.sub("journal"));
  CHECK(replay(*reopened, {7, planted}).empty());
}

TEST_CASE("journal: a new journal replaces the old one, whose records never replay", "[journal]") {
  TempDir dir;
  {
    auto old = create_journal(dir.sub("journal"));
    append(*old, "old");
  }
  auto fresh = create_journal(dir.sub("journal"));
  CHECK(replay(*fresh, {}).empty());
}

TEST_CASE("journal: a record that does not fit before the end goes to the ring's start", "[journal]") {
  TempDir dir;
  const std::string path = dir.sub("journal");
  auto j = create_journal(path);  // a ring of 4096 bytes
  const std::string big(1500, 'a');
  append(*j, big);  // [0, 1524) of the ring
  append(*j, big);  // [1524, 3048)
  j->checkpointed();
  const Journal::Position checkpoint = j->next();
  append(*j, std::string(1500, 'b'));  // does not fit in [3048, 4096): at 0, over the first
  CHECK(j->next().offset == kRing + 1524);
  CHECK(j->unchecked_bytes() == 1524);
  append(*j, std::string(1000, 'c'));  // [1524, 2548), over the second
  append(*j, std::string(1500, 'd'));  // [2548, 4072)
  CHECK(j->unchecked_bytes() == 4072);
  CHECK_FALSE(j->fits(1500));  // it would go to the start, over 'b', which is not checkpointed
  CHECK(j->fits(0));           // [4072, 4096) holds an empty record

  auto reopened = reopen_journal(path);
  CHECK(replay(*reopened, checkpoint) ==
        Records{std::string(1500, 'b'), std::string(1000, 'c'), std::string(1500, 'd')});
  CHECK(reopened->unchecked_bytes() == j->unchecked_bytes());
  CHECK(reopened->next().offset == j->next().offset);
  // From the start, record 1 is gone (overwritten by 'b') while later ones are
  // intact: to a replay from there, that is damage.
  auto from_start = reopen_journal(path);
  CHECK(from_start->replay({}).status().code() == Code::kCorrupt);
}

TEST_CASE("journal: a full journal refuses appends until a checkpoint frees it", "[journal]") {
  TempDir dir;
  auto j = create_journal(dir.sub("journal"));
  const std::string payload(1000, 'x');
  int appended = 0;
  while (j->fits(payload.size())) {
    append(*j, payload);
    ++appended;
  }
  CHECK(appended == 4);  // 4 x 1024 bytes
  Status s = j->append(payload);
  CHECK(s.code() == Code::kStorageError);
  CHECK_THAT(s.message(), Catch::Contains("full"));
  CHECK_FALSE(j->fits(Journal::kMinFileBytes));  // larger than the ring: never

  auto reopened = reopen_journal(dir.sub("journal"));
  CHECK(replay(*reopened, {}).size() == 4);  // the refusal overwrote nothing

  j->checkpointed();
  CHECK(j->fits(payload.size()));
  append(*j, payload);
}

TEST_CASE("journal: after a failed sync nothing is appended until a checkpoint moves past it", "[journal]") {
  TempDir dir;
  auto j = create_journal(dir.sub("journal"));
  const Journal::Position start = j->next();
  append(*j, "a");
  test::fail_next_syncs(1);
  CHECK(j->append("b").code() == Code::kStorageError);  // "b" is written, maybe durable, not acknowledged
  CHECK_FALSE(j->fits(1));
  Status refused = j->append("c");
  CHECK_THAT(refused.message(), Catch::Contains("failed"));
  auto reread = j->reread(start);  // what was acknowledged reads back
  REQUIRE(reread.is_ok());
  CHECK(reread.value() == Records{"a"});

  j->checkpointed();  // the store committed everything to its main storage
  const Journal::Position checkpoint = j->next();
  append(*j, "d");
  auto reopened = reopen_journal(dir.sub("journal"));
  CHECK(replay(*reopened, checkpoint) == Records{"d"});  // "b"'s number is never looked for
}

TEST_CASE("journal: a missing or damaged file is an error unless asked to create one", "[journal]") {
  TempDir dir;
  auto missing = Journal::open(dir.sub("journal"), Journal::kMinFileBytes, /*create=*/false);
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == Code::kStorageError);
  CHECK_THAT(missing.status().message(), Catch::Contains("missing"));

  auto tiny = Journal::open(dir.sub("journal"), 100, /*create=*/true);
  REQUIRE_FALSE(tiny.is_ok());
  CHECK(tiny.status().code() == Code::kBadRequest);

  int fd = ::open(dir.sub("short").c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  ::close(fd);
  auto empty = Journal::open(dir.sub("short"), Journal::kMinFileBytes, /*create=*/false);
  REQUIRE_FALSE(empty.is_ok());
  CHECK_THAT(empty.status().message(), Catch::Contains("damaged"));
}

// A model check: random payload sizes, checkpoints and reopenings (a crash
// loses nothing that append() returned ok for). After each reopening, replay
// from the last checkpoint returns exactly what was appended since.
TEST_CASE("journal: random appends, checkpoints and reopenings", "[journal]") {
  TempDir dir;
  const std::string path = dir.sub("journal");
  std::mt19937 rng(20261130);
  auto j = create_journal(path, kRing + 3 * 4096);
  Journal::Position checkpoint = j->next();
  Records since_checkpoint;
  int wraps = 0, appends = 0;
  for (int step = 0; step < 3000; ++step) {
    const int action = static_cast<int>(rng() % 10);
    if (action < 7) {
      const size_t n = rng() % 2000;
      if (!j->fits(n)) {
        j->checkpointed();
        checkpoint = j->next();
        since_checkpoint.clear();
      }
      std::string payload(n, static_cast<char>('a' + step % 26));
      if (n > 0) payload[0] = static_cast<char>(step & 0xff);
      const uint64_t before = j->next().offset;
      append(*j, payload);
      wraps += j->next().offset < before ? 1 : 0;
      ++appends;
      since_checkpoint.push_back(payload);
    } else if (action < 8) {
      j->checkpointed();
      checkpoint = j->next();
      since_checkpoint.clear();
    } else {
      j = reopen_journal(path);
      INFO("step " << step);
      REQUIRE(replay(*j, checkpoint) == since_checkpoint);
    }
  }
  CHECK(wraps > 50);
  CHECK(appends > 1500);
}

}  // namespace
}  // namespace palisade
