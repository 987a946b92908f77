// Sequencers signed and checked with a cluster key's lock-group key, in one
// call: what tests need to make grants without a lock group.
#pragma once

#include <string>
#include <string_view>

#include "auth/sequencer_signer.h"

namespace palisade {

// The sequencer `s` as s.group's lock group with `key` signs it.
inline std::string sign_sequencer(const Sequencer& s, const ClusterKey& key) {
  return SequencerSigner(key, s.group).sign(s);
}

// `text` checked with the public key of `key`'s lock group `group`.
inline Result<Sequencer> verify_sequencer(std::string_view text, const ClusterKey& key, std::string_view group) {
  return SequencerSigner(key, group).verifier().verify(text);
}

}  // namespace palisade
