// The cluster file (config/cluster_config.h): TOML text as every daemon and
// client reads it. A file that parses must format to a file that parses to
// the same configuration and formats the same again.
#include <cstdint>
#include <string>

#include "config/cluster_config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  const std::string path = "/etc/palisade/cluster.toml";
  auto parsed = parse_cluster_config(fuzz::as_text(data, size), path);
  if (!parsed.is_ok()) {
    FUZZ_CHECK(parsed.code() == Code::kBadRequest);
    return 0;
  }
  const std::string formatted = format_cluster_config(parsed.value());
  auto again = parse_cluster_config(formatted, path);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(again.value() == parsed.value());
  FUZZ_CHECK(format_cluster_config(again.value()) == formatted);
  return 0;
}
