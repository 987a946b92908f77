// Random byte strings for the codec tests' seeded cases.
#pragma once

#include <cstddef>
#include <random>
#include <string>

namespace palisade::test {

// Up to `max_len` random bytes.
inline std::string random_bytes(std::mt19937_64& rng, size_t max_len) {
  std::string s(rng() % (max_len + 1), '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

}  // namespace palisade::test
