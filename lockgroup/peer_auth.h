// Signed peer messages (docs/protocol.md, "Lock group peers"). Peers and
// clients share one endpoint, so a node tells a peer's message from anyone
// else's by its MAC: the frame is the message's MessagePack map followed by
// 32 bytes of keyed BLAKE2b-256 of the map.
//
// The MAC key is derived from the cluster key and the group id, so it never is
// the key of a sequencer MAC (HMAC-SHA-512-256 under the cluster key itself),
// and a message of one group never verifies in another. The map names its
// sender and receiver, so a message to one node is refused by every other.
// Replays verify: PaxosNode drops prepares, accepts and catch-up requests not
// newer, by (incarnation, serial), than the last it took from their sender,
// and refuses what would move it back (lockgroup/peer_checks.h).
//
// Until CurveZMQ encrypts the sockets, the messages are readable on the wire;
// what the MAC stops is a client, or anyone without the key, acting as a peer.
// Every replica host holds the cluster key too (to check sequencers), so any
// of them can derive this key and act as a peer (issue #26).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "auth/derived_key.h"
#include "lockgroup/paxos_messages.h"

namespace palisade::lockgroup {

class PeerAuth {
 public:
  static constexpr size_t kMacBytes = 32;

  PeerAuth(const ClusterKey& cluster_key, std::string_view group);

  // The frame to send: encode_peer(message) and its MAC.
  std::string seal(const PeerMessage& message) const;
  // The map of a frame whose MAC verifies (a view into `frame`); nullopt for
  // any other frame.
  std::optional<std::string_view> verified_body(std::string_view frame) const;

 private:
  std::string mac_of(std::string_view body) const;

  DerivedKey key_{};
};

}  // namespace palisade::lockgroup
