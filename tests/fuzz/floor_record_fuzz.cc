// A lock's stored fence floor (replica/record.h): what a replica reads back
// from its data file and its journal. The input is a flags byte, the lock (a
// length byte, then the name) and the record; with flag 1 the harness appends
// the record's checksum itself, so that the fuzzer reaches what lies behind
// it. What decodes must encode to a record that decodes to the same floor and
// sequencer (under that lock only) and encodes the same again.
#include <cstdint>
#include <string>

#include "base/big_endian.h"
#include "replica/record.h"
#include "tests/fuzz/fuzz_support.h"
#include "wire/hash.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  fuzz::Input in(data, size);
  const bool seal = (in.byte() & 1) != 0;
  const std::string lock(in.take(in.byte()));
  std::string record(in.rest());
  if (seal) append_be(record, hash64(record, hash64(lock)), 8);

  auto decoded = replica::decode_floor_record(lock, record);
  if (!decoded.is_ok()) {
    FUZZ_CHECK(decoded.code() == Code::kCorrupt);
    return 0;
  }
  const replica::FloorRecord& floor = decoded.value();
  const std::string encoded = replica::encode_floor_record(lock, floor);
  auto again = replica::decode_floor_record(lock, encoded);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(again.value().floor == floor.floor && again.value().sequencer == floor.sequencer);
  FUZZ_CHECK(replica::encode_floor_record(lock, again.value()) == encoded);
  FUZZ_CHECK(!replica::decode_floor_record(lock + "x", encoded).is_ok());
  return 0;
}
