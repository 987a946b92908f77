// Content hashing (XXH3-64): value checksums, tie-breaks between equal timestamps.
// Deterministic across hosts and runs: never seeded from anything random.
// Chain it to hash several strings: hash64(b, hash64(a)).
#pragma once

#include <cstdint>
#include <string_view>

namespace palisade {

uint64_t hash64(std::string_view bytes, uint64_t seed = 0);

}  // namespace palisade
