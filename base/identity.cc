#include "base/identity.h"

#include <cstdint>

namespace palisade {
namespace {

constexpr std::string_view kZ85 =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

}  // namespace

bool is_identity_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '.' || name.front() == '-') return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool is_z85_key(std::string_view key) {
  if (key.size() != kCurveKeyZ85Chars) return false;
  for (size_t group = 0; group < key.size(); group += 5) {
    uint64_t word = 0;
    for (size_t i = group; i < group + 5; ++i) {
      const size_t digit = kZ85.find(key[i]);
      if (digit == std::string_view::npos) return false;
      word = word * 85 + digit;
    }
    if (word > UINT32_MAX) return false;
  }
  return true;
}

}  // namespace palisade
