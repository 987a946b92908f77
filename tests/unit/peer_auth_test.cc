// Signed peer messages (lockgroup/peer_auth.h): what verifies and what does not.
#include "lockgroup/peer_auth.h"

#include <catch2/catch.hpp>

#include <sodium.h>

#include <string>

namespace palisade::lockgroup {
namespace {

ClusterKey key(char digit) { return ClusterKey::from_hex(std::string(64, digit)).value(); }

PeerMessage sample() {
  return {.from = 2, .to = 1, .group = 7, .body = Accept{.ballot = make_ballot(3, 2), .seq = 9, .chosen_through = 4}};
}

}  // namespace

TEST_CASE("peer auth: a sealed message verifies and decodes to itself", "[peer_auth]") {
  PeerAuth auth(key('5'), "group-a");
  const std::string frame = auth.seal(sample());
  CHECK(frame.size() == encode_peer(sample()).size() + PeerAuth::kMacBytes);
  auto body = auth.verified_body(frame);
  REQUIRE(body);
  auto decoded = decode_peer(*body, 1 << 20);
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value() == sample());
}

TEST_CASE("peer auth: unsigned, altered, cut, or other-key/other-group messages do not verify", "[peer_auth]") {
  PeerAuth auth(key('5'), "group-a");
  const std::string frame = auth.seal(sample());
  CHECK_FALSE(auth.verified_body(encode_peer(sample())));
  CHECK_FALSE(auth.verified_body(""));
  CHECK_FALSE(auth.verified_body(frame.substr(0, PeerAuth::kMacBytes)));
  CHECK_FALSE(auth.verified_body(frame.substr(0, frame.size() - 1)));
  for (size_t i = 0; i < frame.size(); ++i) {
    std::string altered = frame;
    altered[i] = static_cast<char>(altered[i] ^ 0x01);
    INFO("byte " << i);
    CHECK_FALSE(auth.verified_body(altered));
  }
  CHECK_FALSE(PeerAuth(key('6'), "group-a").verified_body(frame));
  CHECK_FALSE(PeerAuth(key('5'), "group-b").verified_body(frame));
  CHECK(PeerAuth(key('5'), "group-a").verified_body(frame));
}

TEST_CASE("peer auth: the MAC is not the sequencer MAC of the same bytes", "[peer_auth]") {
  // Sequencers are HMAC-SHA-512-256 under the cluster key itself; a peer MAC is
  // keyed BLAKE2b under a derived key, so neither can stand in for the other.
  const ClusterKey k = key('5');
  PeerAuth auth(k, "group-a");
  const std::string body = encode_peer(sample());
  const std::string frame = auth.seal(sample());
  std::string hmac(crypto_auth_BYTES, '\0');
  crypto_auth(reinterpret_cast<unsigned char*>(hmac.data()), reinterpret_cast<const unsigned char*>(body.data()),
              body.size(), k.bytes().data());
  CHECK(frame.substr(body.size()) != hmac);
  CHECK_FALSE(auth.verified_body(body + hmac));
}

}  // namespace palisade::lockgroup
