// The lock group's peer messages (lockgroup/paxos_messages.h) and their MAC'd
// frames (lockgroup/peer_auth.h), as LockdDriver::on_frame meets them: a frame
// whose MAC verifies is decoded as a peer message; a frame that is no client
// request is asked whether it names a peer type (with or without a MAC).
// decode_peer is also fed every input directly, since the fuzzer cannot make
// MACs. What decodes must encode to bytes that decode to the same message, and
// its sealed frame must verify to those bytes, and only with its MAC.
#include <cstdint>
#include <string>

#include "auth/cluster_key.h"
#include "lockgroup/lockd_driver.h"
#include "lockgroup/paxos_messages.h"
#include "lockgroup/peer_auth.h"
#include "tests/fuzz/fuzz_support.h"

namespace palisade::lockgroup {
namespace {

const size_t kMaxPeerBytes = LockdDriverOptions{}.max_peer_message_bytes;

const PeerAuth& peer_auth() {
  static const PeerAuth auth(ClusterKey::from_hex(fuzz::kClusterKeyHex).value(), fuzz::kGroup);
  return auth;
}

void check_message(const PeerMessage& m) {
  const std::string bytes = encode_peer(m);
  FUZZ_CHECK(names_peer_type(bytes, kMaxPeerBytes));
  auto again = decode_peer(bytes, kMaxPeerBytes);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(again.value() == m);
  FUZZ_CHECK(encode_peer(again.value()) == bytes);
  std::string frame = peer_auth().seal(m);
  FUZZ_CHECK(frame.size() == bytes.size() + PeerAuth::kMacBytes);
  auto body = peer_auth().verified_body(frame);
  FUZZ_CHECK(body && *body == bytes);
  frame.back() = static_cast<char>(frame.back() ^ 1);
  FUZZ_CHECK(!peer_auth().verified_body(frame));
}

void check_decoded(std::string_view bytes) {
  auto decoded = decode_peer(bytes, kMaxPeerBytes);
  if (!decoded.is_ok()) return;
  FUZZ_CHECK(names_peer_type(bytes, kMaxPeerBytes));
  check_message(decoded.value());
}

}  // namespace
}  // namespace palisade::lockgroup

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade::lockgroup;
  const std::string_view bytes = palisade::fuzz::as_text(data, size);
  if (auto body = peer_auth().verified_body(bytes)) check_decoded(*body);
  check_decoded(bytes);
  (void)names_peer_type(bytes, kMaxPeerBytes);
  if (bytes.size() > PeerAuth::kMacBytes) {
    (void)names_peer_type(bytes.substr(0, bytes.size() - PeerAuth::kMacBytes), kMaxPeerBytes);
  }
  return 0;
}
