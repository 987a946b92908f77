#include "lockgroup/peer_auth.h"

#include <sodium.h>

#include "auth/derived_key.h"

namespace palisade::lockgroup {
namespace {

static_assert(PeerAuth::kMacBytes == crypto_generichash_BYTES);

// Domain separation: what the derived key is for, and which group's it is.
constexpr std::string_view kContext = "palisade-lockd peer messages v1";

}  // namespace

PeerAuth::PeerAuth(const ClusterKey& cluster_key, std::string_view group)
    : key_(derive_key(cluster_key, kContext, group)) {}

std::string PeerAuth::mac_of(std::string_view body) const {
  std::string mac(kMacBytes, '\0');
  keyed_mac(key_, {body}, reinterpret_cast<unsigned char*>(mac.data()), mac.size());
  return mac;
}

std::string PeerAuth::seal(const PeerMessage& message) const {
  std::string frame = encode_peer(message);
  frame += mac_of(frame);
  return frame;
}

std::optional<std::string_view> PeerAuth::verified_body(std::string_view frame) const {
  if (frame.size() <= kMacBytes) return std::nullopt;
  std::string_view body = frame.substr(0, frame.size() - kMacBytes);
  const std::string mac = mac_of(body);
  if (sodium_memcmp(mac.data(), frame.data() + body.size(), kMacBytes) != 0) return std::nullopt;
  return body;
}

}  // namespace palisade::lockgroup
