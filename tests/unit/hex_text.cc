#include "tests/unit/hex_text.h"

#include <cstdint>

namespace palisade::test {
namespace {

void append_hex(std::string& out, char byte) {
  static const char* digits = "0123456789abcdef";
  auto b = static_cast<uint8_t>(byte);
  out += digits[b >> 4];
  out += digits[b & 15];
}

}  // namespace

std::string hex_head(std::string_view bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < 64; ++i) append_hex(out, bytes[i]);
  if (bytes.size() > 64) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

std::string hex_block(std::string_view bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    append_hex(out, bytes[i]);
    out += (i % 16 == 15 || i + 1 == bytes.size()) ? '\n' : ' ';
  }
  return out;
}

}  // namespace palisade::test
