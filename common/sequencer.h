// Sequencers (DESIGN "Lock group"): the proof of a grant that a lock holder hands
// to the services it writes to. It names the lock, mode, fencing token and lock
// group, and carries a MAC under the cluster key, so a client cannot forge a
// token (a forged token 2^63 would fence a lock forever).
//
// Text form (what PALISADE_SEQUENCER holds): "ps1." + base64url(payload) + "." +
// base64url(MAC), payload = MessagePack [group, lock, mode, token], MAC =
// HMAC-SHA-512-256 (libsodium crypto_auth) of the payload. docs/protocol.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "palisade/lock_mode.h"
#include "palisade/status.h"

namespace palisade {

struct Sequencer {
  std::string group;  // the lock group's id (cluster file "group")
  std::string lock;
  LockMode mode = LockMode::kExclusive;
  uint64_t token = 0;
  friend bool operator==(const Sequencer&, const Sequencer&) = default;
};

// The cluster key: 32 secret bytes that lockd nodes and replicas share.
class SequencerKey {
 public:
  static constexpr size_t kBytes = 32;
  // A fresh random key (libsodium's CSPRNG).
  static SequencerKey generate();
  // From 64 hex digits (surrounding whitespace ignored); BadRequest otherwise.
  static Result<SequencerKey> from_hex(std::string_view hex);
  std::string to_hex() const;
  const std::array<unsigned char, kBytes>& bytes() const { return bytes_; }

 private:
  std::array<unsigned char, kBytes> bytes_{};
};

// The text form, MAC included.
std::string sign_sequencer(const Sequencer& sequencer, const SequencerKey& key);
// Reads the fields without checking the MAC: for clients, which do not hold the
// key. BadSequencer when the text is not a sequencer.
Result<Sequencer> parse_sequencer(std::string_view text);
// Reads and checks the MAC and the group. BadSequencer when either fails.
Result<Sequencer> verify_sequencer(std::string_view text, const SequencerKey& key, std::string_view group);

}  // namespace palisade
