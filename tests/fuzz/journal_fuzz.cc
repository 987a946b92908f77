// The write-ahead journal (storage/journal.h) as a store recovers it after a
// crash: a journal file whatever its bytes, replayed from a checkpoint's
// position (as the store keeps it: Journal::decode_position).
//
// Input: mode(1) position(16) file. Mode bit 0: the harness makes the file's
// header valid (magic, size, checksum; the file padded to the smallest
// journal); bit 1: it gives every span that starts with a record's magic and
// fits in the file the checksum of a record, under the file's key, so that the
// fuzzer reaches past the checksums; bits 2-7: the length of a payload to
// append after the replay, in units of 7 bytes.
//
// Invariants: what does not open is a StorageError; what does not replay is
// Corrupt or a StorageError; reread() gives what replay() gave; a payload that
// fits() appends, and then the file replays, opened again, to what it replayed
// before and that payload: nothing replayed is overwritten.
#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/big_endian.h"
#include "storage/journal.h"
#include "tests/fuzz/fuzz_support.h"
#include "wire/hash.h"

namespace palisade {
namespace {

constexpr std::string_view kFileMagic = "PJRNFILE";
constexpr std::string_view kRecordMagic = "PJRN";
constexpr size_t kKeyAt = 8, kSizeAt = 24, kHeaderSumAt = 32;

// The journal file, one per process, on tmpfs when there is one.
const std::string& journal_path() {
  static const std::string path = [] {
    std::error_code ec;
    const std::string dir = std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm" : "/tmp";
    return dir + "/palisade-fuzz-journal." + std::to_string(::getpid());
  }();
  return path;
}

// Removes the file when an input is done: a process that dies (a crash is
// what the fuzzer looks for) leaves at most the one it was using.
struct RemoveJournal {
  ~RemoveJournal() { ::unlink(journal_path().c_str()); }
};

void fix_header(std::string& file) {
  if (file.size() < Journal::kMinFileBytes) file.resize(Journal::kMinFileBytes, '\0');
  file.replace(0, kFileMagic.size(), kFileMagic);
  std::string size;
  append_be(size, file.size(), 8);
  file.replace(kSizeAt, 8, size);
  std::string sum;
  append_be(sum, hash64(std::string_view(file).substr(0, kHeaderSumAt)), 8);
  file.replace(kHeaderSumAt, 8, sum);
}

void reseal_records(std::string& file) {
  if (file.size() < Journal::kFileHeaderBytes) return;
  const auto* key = reinterpret_cast<const unsigned char*>(file.data() + kKeyAt);
  for (size_t at = file.find(kRecordMagic, Journal::kFileHeaderBytes); at != std::string::npos;
       at = file.find(kRecordMagic, at + 1)) {
    if (at + Journal::kHeaderBytes + Journal::kTrailerBytes > file.size()) break;
    const size_t covered = Journal::kHeaderBytes + read_be(file.data() + at + 4, 4);
    if (covered + Journal::kTrailerBytes > file.size() - at) continue;
    unsigned char sum[crypto_shorthash_BYTES];
    crypto_shorthash(sum, reinterpret_cast<const unsigned char*>(file.data() + at), covered, key);
    file.replace(at + covered, sizeof sum, reinterpret_cast<const char*>(sum), sizeof sum);
  }
}

void write_file(const std::string& bytes) {
  const int fd = ::open(journal_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FUZZ_CHECK(fd >= 0);
  FUZZ_CHECK(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

Result<std::vector<std::string>> replay_afresh(Journal::Position from) {
  auto journal = Journal::open(journal_path(), 0, false);
  FUZZ_CHECK(journal.is_ok());
  return journal.value()->replay(from);
}

}  // namespace
}  // namespace palisade

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  FUZZ_CHECK(sodium_init() >= 0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  fuzz::Input in(data, size);
  const uint8_t mode = in.byte();
  const std::string position(in.take(16));
  std::string file(in.rest());
  if ((mode & 1) != 0) fix_header(file);
  if ((mode & 2) != 0) reseal_records(file);
  const std::string payload(size_t{7} * (mode >> 2), 'p');

  auto from = Journal::decode_position(position);
  if (!from) {
    FUZZ_CHECK(position.size() != 16);
    return 0;
  }
  FUZZ_CHECK(Journal::encode_position(*from) == position);

  write_file(file);
  const RemoveJournal remove;
  auto opened = Journal::open(journal_path(), 0, false);
  if (!opened.is_ok()) {
    FUZZ_CHECK(opened.code() == Code::kStorageError);
    return 0;
  }
  Journal& journal = *opened.value();
  auto replayed = journal.replay(*from);
  if (!replayed.is_ok()) {
    FUZZ_CHECK(replayed.code() == Code::kCorrupt || replayed.code() == Code::kStorageError);
    return 0;
  }
  std::vector<std::string> records = replayed.value();
  auto reread = journal.reread(*from);
  FUZZ_CHECK(reread.is_ok() && reread.value() == records);
  if (!journal.fits(payload.size())) return 0;

  const Journal::Position before = journal.next();
  FUZZ_CHECK(journal.append(payload).is_ok());
  FUZZ_CHECK(journal.next().seq == before.seq + 1);
  records.push_back(payload);
  reread = journal.reread(*from);
  FUZZ_CHECK(reread.is_ok() && reread.value() == records);
  auto again = replay_afresh(*from);
  FUZZ_CHECK(again.is_ok() && again.value() == records);
  return 0;
}
