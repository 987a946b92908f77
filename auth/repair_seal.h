// Repairers' seals (docs/protocol.md, "Sealed requests"). Anti-entropy copies
// versions a replica lacks as committed, and commits pending ones, on its own
// judgement rather than on proof of W acknowledgements; replicas take that only
// from a repairer: a party that holds the cluster key (a replica's background
// repair, an operator's `palisade repair`). A repairer seals the request frame:
//
//   0xC1, the signing time (8 bytes, big-endian ms since the epoch),
//   32 bytes of keyed BLAKE2b-256 of time and request, the request's map.
//
// 0xC1 begins no MessagePack value, so a sealed frame is never read as a plain
// one. The key is derived from the cluster key and the group (auth/derived_key.h).
// A seal older or newer than kSealLifetimeMs by the receiver's clock is refused:
// a recorded repair cannot be replayed long after, when what it copied may
// have been deleted and forgotten.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "auth/derived_key.h"

namespace palisade {

constexpr unsigned char kSealedFrameTag = 0xC1;
constexpr uint64_t kSealLifetimeMs = 60'000;

class RepairSeal {
 public:
  static constexpr size_t kHeaderBytes = 1 + 8 + 32;

  RepairSeal(const ClusterKey& cluster_key, std::string_view group);

  // The sealed frame of an encoded request, signed at `now_ms`.
  std::string seal(std::string_view request, uint64_t now_ms) const;
  static bool is_sealed(std::string_view frame) {
    return !frame.empty() && static_cast<unsigned char>(frame[0]) == kSealedFrameTag;
  }
  // The request inside a sealed frame whose MAC verifies and whose time is
  // within kSealLifetimeMs of `now_ms`; nullopt otherwise.
  std::optional<std::string_view> open(std::string_view frame, uint64_t now_ms) const;

 private:
  std::string mac_of(std::string_view time, std::string_view request) const;

  DerivedKey key_;
};

}  // namespace palisade
