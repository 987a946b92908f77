// A key's stored record (replica/record.h): what a replica reads back from its
// data file and its journal. The input is a flags byte, the key (a length byte,
// then the key) and the record; with flag 1 the harness appends the record's
// checksum itself, so that the fuzzer reaches what lies behind it. What
// decodes must encode to a record that decodes to the same versions (under
// that key only) and encodes the same again.
#include <cstdint>
#include <string>

#include "base/big_endian.h"
#include "replica/record.h"
#include "tests/fuzz/fuzz_support.h"
#include "wire/hash.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  using replica::Versions;
  fuzz::Input in(data, size);
  const bool seal = (in.byte() & 1) != 0;
  const std::string key(in.take(in.byte()));
  std::string record(in.rest());
  if (seal) append_be(record, hash64(record, hash64(key)), 8);

  auto decoded = replica::decode_record(key, record);
  if (!decoded.is_ok()) {
    FUZZ_CHECK(decoded.code() == Code::kCorrupt);
    return 0;
  }
  const Versions& versions = decoded.value();
  (void)replica::check_versions(versions);
  const std::string encoded = replica::encode_record(key, versions);
  auto again = replica::decode_record(key, encoded);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(again.value() == versions);
  FUZZ_CHECK(replica::encode_record(key, again.value()) == encoded);
  // The key is under the checksum: the record is corrupt under any other.
  FUZZ_CHECK(!replica::decode_record(key + "x", encoded).is_ok());
  return 0;
}
