// The lock group's sequencer key (docs/protocol.md, "Sequencers"): an Ed25519
// key pair whose seed is derived from the cluster key and the group, so every
// lockd node signs with the same key and no one without the cluster key can.
// Replicas, clients and other services check sequencers with the public key
// alone (palisade/sequencer.h), which the cluster file lists as
// `sequencer_public_key`. The same key signs config certificates
// (auth/config_certificate.h).
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "auth/cluster_key.h"
#include "palisade/sequencer.h"

namespace palisade {

class SequencerSigner {
 public:
  SequencerSigner(const ClusterKey& cluster_key, std::string_view group);
  ~SequencerSigner();
  SequencerSigner(const SequencerSigner&) = default;
  SequencerSigner& operator=(const SequencerSigner&) = default;

  // The text form, signature included. The fields should be valid (non-empty
  // group and lock, lock <= 256 bytes, token >= 1): parse_sequencer refuses
  // others.
  std::string sign(const Sequencer& sequencer) const;
  // The group's Ed25519 signature (64 bytes) of `message`: sequencers and
  // config certificates (auth/config_certificate.h) are signed here alone.
  std::string signature_of(std::string_view message) const;
  // "psk1." + base64url of the public key: what the cluster file lists.
  std::string public_key() const;
  // A verifier of this group under this key.
  SequencerVerifier verifier() const;

 private:
  std::string group_;
  std::array<unsigned char, 64> secret_{};  // libsodium's Ed25519 secret key: seed and public key
  std::array<unsigned char, SequencerVerifier::kPublicKeyBytes> public_{};
};

}  // namespace palisade
