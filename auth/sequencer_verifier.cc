// palisade/sequencer.h's SequencerVerifier and SequencerFence.
#include <sodium.h>

#include "base/check.h"
#include "palisade/sequencer.h"
#include "wire/sequencer.h"

namespace palisade {
namespace {

Status bad(std::string message) { return Status(Code::kBadSequencer, std::move(message)); }

}  // namespace

Result<SequencerVerifier> SequencerVerifier::create(std::string_view group, std::string_view public_key) {
  PALISADE_CHECK(sodium_init() >= 0);
  if (group.empty()) return Status(Code::kBadRequest, "a sequencer verifier needs the lock group's id");
  auto bytes = sequencer_format::public_key_bytes(public_key);
  if (!bytes || bytes->size() != kPublicKeyBytes) {
    return Status(Code::kBadRequest, "a sequencer public key is \"psk1.\" and 43 base64url characters (the "
                                     "cluster file's sequencer_public_key)");
  }
  std::array<unsigned char, kPublicKeyBytes> key{};
  std::copy(bytes->begin(), bytes->end(), key.begin());
  return SequencerVerifier(std::string(group), key);
}

std::string SequencerVerifier::public_key() const {
  return sequencer_format::public_key_text({reinterpret_cast<const char*>(key_.data()), key_.size()});
}

Result<Sequencer> SequencerVerifier::verify(std::string_view text) const {
  auto parts = sequencer_format::split(text);
  if (!parts.is_ok()) return parts.status();
  const sequencer_format::Parts& p = parts.value();
  // The signature is checked before anything in the payload is trusted.
  if (!signature_verifies(p.payload, p.signature)) {
    return bad("sequencer failed its signature check: forged, altered, or signed by another lock group");
  }
  auto sequencer = sequencer_format::decode_payload(p.payload);
  if (!sequencer.is_ok()) return sequencer.status();
  if (sequencer.value().group != group_) {
    return bad("sequencer names lock group '" + sequencer.value().group + "', this is group '" + group_ + "'");
  }
  return sequencer;
}

bool SequencerVerifier::signature_verifies(std::string_view message, std::string_view signature) const {
  return signature.size() == crypto_sign_BYTES &&
         crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(signature.data()),
                                     reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                                     key_.data()) == 0;
}

Result<Sequencer> SequencerFence::admit(std::string_view text) {
  auto it = verified_.find(std::string(text));
  if (it == verified_.end()) {
    auto verified = verifier_.verify(text);
    if (!verified.is_ok()) return verified.status();
    if (verified_.size() >= kVerifiedKept) verified_.clear();
    it = verified_.emplace(std::string(text), std::move(verified).value()).first;
  }
  const Sequencer& s = it->second;
  if (s.mode != LockMode::kExclusive) {
    return bad("the sequencer grants lock '" + s.lock + "' in shared mode: a fence admits exclusive holders only");
  }
  auto floor = floors_.find(s.lock);
  if (floor == floors_.end()) {
    floors_.emplace(s.lock, s.token);
  } else if (s.token < floor->second) {
    return Status(Code::kFenced, "lock '" + s.lock + "' token " + std::to_string(s.token) +
                                     " is below the fence's floor " + std::to_string(floor->second) +
                                     ": a newer holder has written");
  } else {
    floor->second = s.token;
  }
  return s;
}

uint64_t SequencerFence::floor(std::string_view lock) const {
  auto it = floors_.find(lock);
  return it == floors_.end() ? 0 : it->second;
}

}  // namespace palisade
