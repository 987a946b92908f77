// What the fuzz harnesses and their corpus generator share (docs/checks.md,
// "Fuzzing"): an invariant that fails aborts, so that libFuzzer keeps the input
// as a crash; inputs taken apart; the cluster key of MACs and signatures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace palisade::fuzz {

// The cluster key the harnesses seal, sign and verify with, and the seeds are
// made with: MAC'd and signed seeds reach past the checks.
inline constexpr std::string_view kClusterKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
inline constexpr std::string_view kGroup = "fuzz-group";
// When the replica protocol's harness opens repairers' seals, and the seeds' seals were made.
inline constexpr uint64_t kSealTimeMs = 1'700'000'000'000;

[[noreturn]] inline void invariant_failed(const char* file, int line, const char* what) {
  std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line, what);
  std::abort();
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Takes an input apart from the front; past its end, bytes read as 0 and
// strings as empty.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : rest_(as_text(data, size)) {}
  uint8_t byte() {
    if (rest_.empty()) return 0;
    const auto b = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  std::string_view take(size_t n) {
    const std::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(out.size());
    return out;
  }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

}  // namespace palisade::fuzz

// Aborts with the condition's text when `cond` is false.
#define FUZZ_CHECK(cond) ((cond) ? (void)0 : ::palisade::fuzz::invariant_failed(__FILE__, __LINE__, #cond))
