// Sequencers: the proof of a grant that a lock holder hands to the services it
// writes to (docs/security.md, "Fencing a service of your own"). A sequencer
// names the lock group, the lock, the mode and the fencing token, and carries
// the lock group's Ed25519 signature: only the lock group can make one, and
// anyone with the group's public key can check one, offline.
//
// A service outside palisade fences itself with a SequencerFence: it verifies
// the sequencer its caller hands it and refuses a token below the highest one
// it has seen for that lock, so a holder whose lock passed to someone else is
// refused from the first write of the new holder on.
//
// Thread safety: SequencerVerifier is immutable and may be shared; a
// SequencerFence is one thread's (or guarded by the caller's mutex).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <string>
#include <string_view>
#include <unordered_map>

#include "palisade/lock_mode.h"
#include "palisade/status.h"

namespace palisade {

struct Sequencer {
  std::string group;  // the lock group's id (cluster file "group")
  std::string lock;
  LockMode mode = LockMode::kExclusive;
  uint64_t token = 0;
  // The identity the lock was granted to; empty on a cluster without identities.
  std::string identity{};
  friend bool operator==(const Sequencer&, const Sequencer&) = default;
};

// The longest sequencer text accepted anywhere (parse, verify, the wire field).
constexpr size_t kMaxSequencerBytes = 1024;

// Reads the fields without checking the signature: what a holder learns of its
// own grant. BadSequencer when the text is not a sequencer. Never trust a
// sequencer someone else handed you on this alone: verify it.
Result<Sequencer> parse_sequencer(std::string_view text);

// Checks sequencers against the lock group's public key: the cluster file's
// `sequencer_public_key`, "psk1." and 43 base64url characters.
class SequencerVerifier {
 public:
  static constexpr size_t kPublicKeyBytes = 32;
  // BadRequest when `public_key` is not such a text or `group` is empty.
  static Result<SequencerVerifier> create(std::string_view group, std::string_view public_key);

  // The fields of a sequencer of this group whose signature verifies;
  // BadSequencer (forged, altered, another group's, not a sequencer) otherwise.
  Result<Sequencer> verify(std::string_view text) const;
  // Whether `signature` is the group's Ed25519 signature of `message`: what
  // verify() checks first, and what a config certificate's check uses.
  bool signature_verifies(std::string_view message, std::string_view signature) const;
  const std::string& group() const { return group_; }
  std::string public_key() const;

 private:
  SequencerVerifier(std::string group, const std::array<unsigned char, kPublicKeyBytes>& key)
      : group_(std::move(group)), key_(key) {}
  std::string group_;
  std::array<unsigned char, kPublicKeyBytes> key_;
};

// A service's fence: a floor per lock, the highest token it has admitted.
class SequencerFence {
 public:
  explicit SequencerFence(SequencerVerifier verifier) : verifier_(std::move(verifier)) {}

  // Admits a write under `sequencer`: it must verify, grant the lock
  // exclusively, and carry a token at least the lock's floor, which it then
  // raises. BadSequencer when it does not verify or is of a shared lock,
  // Fenced when its token is below the floor (a superseded holder). A text
  // verified once is not verified again while it is remembered.
  Result<Sequencer> admit(std::string_view sequencer);
  // The lock's floor: 0 when no write under it was admitted.
  uint64_t floor(std::string_view lock) const;

 private:
  static constexpr size_t kVerifiedKept = 4096;
  SequencerVerifier verifier_;
  std::unordered_map<std::string, Sequencer> verified_;
  std::map<std::string, uint64_t, std::less<>> floors_;
};

}  // namespace palisade
