// The key files daemons and clients read: a CURVE key file (identity and key
// pair, transport/curve_keys.h, read without a TOML library) and the cluster
// or replica key file (64 hex digits, auth/cluster_key.h). A key file that
// parses must write as text that parses to the same fields and writes the
// same again; a key read from hex must read the same from its own hex.
#include <cstdint>
#include <string>

#include "auth/cluster_key.h"
#include "tests/fuzz/fuzz_support.h"
#include "transport/curve_keys.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  const std::string_view text = fuzz::as_text(data, size);
  auto parsed = transport::parse_key_file(text, "fuzz.key");
  if (parsed.is_ok()) {
    const transport::KeyFile& file = parsed.value();
    const std::string written = transport::key_file_text(file);
    auto again = transport::parse_key_file(written, "fuzz.key");
    FUZZ_CHECK(again.is_ok());
    FUZZ_CHECK(again.value().identity == file.identity);
    FUZZ_CHECK(again.value().keys.public_key == file.keys.public_key);
    FUZZ_CHECK(again.value().keys.secret_key == file.keys.secret_key);
    FUZZ_CHECK(transport::key_file_text(again.value()) == written);
  } else {
    FUZZ_CHECK(parsed.code() == Code::kBadRequest);
  }
  auto key = ClusterKey::from_hex(text);
  if (key.is_ok()) {
    const std::string hex = key.value().to_hex();
    FUZZ_CHECK(hex.size() == 2 * ClusterKey::kBytes);
    auto again = ClusterKey::from_hex(hex);
    FUZZ_CHECK(again.is_ok() && again.value().bytes() == key.value().bytes());
  } else {
    FUZZ_CHECK(key.code() == Code::kBadRequest);
  }
  return 0;
}
