#include "auth/repair_seal.h"

#include <sodium.h>

#include "base/big_endian.h"

namespace palisade {
namespace {

constexpr std::string_view kPurpose = "palisade repairer seal v1";
constexpr size_t kMacBytes = 32;
static_assert(kMacBytes == crypto_generichash_BYTES);

}  // namespace

RepairSeal::RepairSeal(const ClusterKey& cluster_key, std::string_view group)
    : key_(derive_key(cluster_key, kPurpose, group)) {}

std::string RepairSeal::mac_of(std::string_view time, std::string_view request) const {
  std::string mac(kMacBytes, '\0');
  keyed_mac(key_, {time, request}, reinterpret_cast<unsigned char*>(mac.data()), mac.size());
  return mac;
}

std::string RepairSeal::seal(std::string_view request, uint64_t now_ms) const {
  std::string frame(1, static_cast<char>(kSealedFrameTag));
  append_be(frame, now_ms, 8);
  frame += mac_of(std::string_view(frame).substr(1), request);
  frame.append(request);
  return frame;
}

std::optional<std::string_view> RepairSeal::open(std::string_view frame, uint64_t now_ms) const {
  if (frame.size() <= kHeaderBytes || !is_sealed(frame)) return std::nullopt;
  const uint64_t at = read_be(frame.data() + 1, 8);
  const uint64_t age = at > now_ms ? at - now_ms : now_ms - at;
  if (age > kSealLifetimeMs) return std::nullopt;
  std::string_view request = frame.substr(kHeaderBytes);
  const std::string mac = mac_of(frame.substr(1, 8), request);
  if (sodium_memcmp(mac.data(), frame.data() + 9, kMacBytes) != 0) return std::nullopt;
  return request;
}

}  // namespace palisade
