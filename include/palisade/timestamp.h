// The fenced hybrid timestamp (docs/design.md "Fenced hybrid timestamp"): a fencing
// token in the high 64 bits, a hybrid logical clock value in the low 64, ordered
// token first.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace palisade {

// An HLC value: 48 bits of physical milliseconds, then 16 bits of logical counter.
namespace hlc {
constexpr int kLogicalBits = 16;
constexpr uint64_t kLogicalMask = (uint64_t{1} << kLogicalBits) - 1;
constexpr uint64_t kMaxPhysicalMs = (uint64_t{1} << (64 - kLogicalBits)) - 1;

constexpr uint64_t make(uint64_t physical_ms, uint64_t logical) {
  return (physical_ms << kLogicalBits) | (logical & kLogicalMask);
}
constexpr uint64_t physical_ms(uint64_t value) { return value >> kLogicalBits; }
constexpr uint64_t logical(uint64_t value) { return value & kLogicalMask; }
}  // namespace hlc

struct FencedTimestamp {
  static constexpr size_t kEncodedSize = 16;
  using Encoded = std::array<uint8_t, kEncodedSize>;

  uint64_t token = 0;  // 0: written without a lock (plain last-writer-wins)
  uint64_t hlc = 0;

  friend constexpr auto operator<=>(const FencedTimestamp&, const FencedTimestamp&) = default;

  // 16 big-endian bytes: memcmp order of encodings is the order of timestamps.
  void encode_to(uint8_t* out) const;
  Encoded encode() const;
  static FencedTimestamp decode(const uint8_t* in);

  // Human form "TOKEN@PHYSICAL_MS.LOGICAL", for example "7@1764479453123.4".
  std::string to_string() const;
  // Parses the human form; nullopt when it is not one.
  static std::optional<FencedTimestamp> parse(std::string_view text);
};

}  // namespace palisade
