// Big-endian integers in byte strings: the order-preserving encoding of
// timestamps, and the lengths, checksums and floors of the storage layout.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace palisade {

inline void store_be64(uint8_t* out, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(out, &v, sizeof v);
}

inline uint64_t load_be64(const uint8_t* in) {
  uint64_t v;
  std::memcpy(&v, in, sizeof v);
  return __builtin_bswap64(v);
}

// Appends the low `bytes` bytes of `v`, most significant first.
inline void append_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Reads `bytes` bytes, most significant first.
inline uint64_t read_be(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "store_be64 assumes a little-endian host");

}  // namespace palisade
