// palisade's own pseudo-random generator: the same seed gives the same numbers
// with every compiler and standard library.
//
// std::mt19937_64's raw output is fixed by the standard, but what
// std::uniform_int_distribution and std::uniform_real_distribution make of it
// is not (libstdc++ and libc++ differ), so a simulation seed drawn through
// them replays only on the library that recorded it. Everything the simulator
// seeds (tests/sim, and the cores it runs: lockgroup/paxos_node, lockgroup/lock_service)
// draws from this class instead, and every draw below is defined here, bit for
// bit:
//
// - the generator is xoshiro256** (Blackman and Vigna, "Scrambled linear
//   pseudorandom number generators", 2018; https://prng.di.unimi.it/), its
//   256-bit state filled by four successive outputs of splitmix64 started at
//   the seed, as its authors recommend. Implemented here from that description;
// - uniform(lo, hi) is Lemire's multiply-and-reject ("Fast random integer
//   generation in an interval", 2019) on next(), exactly as written below;
// - chance(p) draws one next() and compares its top 53 bits, as an integer,
//   with floor(p * 2^53) (exact: p * 2^53 is a double multiplied by a power of
//   two, and the floor of a value below 2^53 converts exactly).
//
// Every draw consumes a fixed, documented number of next() calls (uniform may
// take more, deterministically, when it rejects), so call sites that change
// the order of draws change the trace, and nothing else does.
//
// Not for secrets: keys and nonces come from libsodium.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace palisade {

// splitmix64 (Steele, Lea and Flood; as published by Vigna): advances `state`
// and returns its next output.
inline uint64_t splitmix64(uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Random {
 public:
  explicit Random(uint64_t seed = 0) {
    uint64_t sm = seed;
    for (uint64_t& word : s_) word = splitmix64(sm);  // never all zero: splitmix64 is a bijection of its state
  }

  // The next 64 bits of xoshiro256**.
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [lo, hi], both included, without bias (Lemire): with n = hi -
  // lo + 1, x = next() and m = x * n as a 128-bit product, the answer is lo +
  // high 64 bits of m unless the low 64 bits of m are below (2^64 - n) mod n, in which
  // case x is drawn again. n = 2^64 (lo = 0, hi = 2^64 - 1) returns next().
  // Throws std::invalid_argument when lo > hi.
  uint64_t uniform(uint64_t lo, uint64_t hi) {
    if (lo > hi) throw std::invalid_argument("Random::uniform: lo > hi");
    const uint64_t n = hi - lo + 1;  // 0 means 2^64
    uint64_t x = next();
    if (n == 0) return x;
    uint64_t high = 0;
    uint64_t low = mul128(x, n, high);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
      while (low < threshold) {
        x = next();
        low = mul128(x, n, high);
      }
    }
    return lo + high;
  }

  // An index into a container of `size` elements (uniform(0, size - 1)).
  // Throws std::invalid_argument when size is 0.
  size_t index(size_t size) {
    if (size == 0) throw std::invalid_argument("Random::index: empty");
    return static_cast<size_t>(uniform(0, uint64_t{size} - 1));
  }

  // True with probability p: one next(), its top 53 bits compared with
  // floor(p * 2^53). p <= 0 (and NaN) is never, p >= 1 always; both still
  // draw, so that a probability of 0 or 1 shifts no later draw.
  bool chance(double p) { return (next() >> 11) < chance_threshold(p); }

  static uint64_t chance_threshold(double p) {
    constexpr uint64_t kOne = uint64_t{1} << 53;
    if (!(p > 0)) return 0;
    if (p >= 1) return kOne;
    return static_cast<uint64_t>(p * static_cast<double>(kOne));
  }

  // `bytes` random bytes as 2 * bytes lowercase hex digits: each next() gives
  // 16 digits, most significant first; the last draw's unused digits are
  // dropped.
  std::string hex(size_t bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * bytes);
    while (out.size() < 2 * bytes) {
      const uint64_t x = next();
      for (int shift = 60; shift >= 0 && out.size() < 2 * bytes; shift -= 4) out += kDigits[(x >> shift) & 0xf];
    }
    return out;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  // a * b as 128 bits: returns the low 64, puts the high 64 in `high`. In
  // 32-bit halves, so that it needs no compiler extension.
  static uint64_t mul128(uint64_t a, uint64_t b, uint64_t& high) {
    const uint64_t a_lo = a & 0xffffffffULL, a_hi = a >> 32, b_lo = b & 0xffffffffULL, b_hi = b >> 32;
    const uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
    const uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffULL) + lo_hi;  // cannot overflow
    high = hi_hi + (hi_lo >> 32) + (cross >> 32);
    return (cross << 32) | (lo_lo & 0xffffffffULL);
  }
  uint64_t s_[4];
};

}  // namespace palisade
