// Sequencers (docs/design.md "Sequencers"): the proof of a grant that a lock holder hands
// to the services it writes to. It names the lock, mode, fencing token and lock
// group, and carries a MAC under the cluster key, so a client cannot forge a
// token (a forged token 2^63 would fence a lock forever).
//
// Text form (what PALISADE_SEQUENCER holds): "ps1." + base64url(payload) + "." +
// base64url(MAC), payload = MessagePack [group, lock, mode, token], MAC =
// HMAC-SHA-512-256 (libsodium crypto_auth) of the payload. base64url is RFC 4648
// section 5 without padding; mode is the text "exclusive" or "shared".
// docs/protocol.md, "Sequencers".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "palisade/lock_mode.h"
#include "palisade/status.h"

namespace palisade {

// The longest sequencer text accepted anywhere (parse, verify, the wire field).
constexpr size_t kMaxSequencerBytes = 1024;

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
  // Reads a key file (64 hex digits, surrounding whitespace ignored; the cluster
  // file's key_file). StorageError when it cannot be read, BadRequest when it
  // holds no key; both messages name the file.
  static Result<SequencerKey> load(const std::string& path);
  const std::array<unsigned char, kBytes>& bytes() const { return bytes_; }

 private:
  std::array<unsigned char, kBytes> bytes_{};
};

// The text form, MAC included. The fields should be valid (non-empty group and
// lock, lock <= 256 bytes, token >= 1, text <= kMaxSequencerBytes): parse_sequencer
// refuses others.
std::string sign_sequencer(const Sequencer& sequencer, const SequencerKey& key);
// Reads the fields without checking the MAC: for clients, which do not hold the
// key. BadSequencer when the text is not a sequencer (wrong prefix, bad base64,
// a payload that is not [group, lock, mode, token], empty group or lock, token 0,
// longer than kMaxSequencerBytes). Never crashes on any input.
Result<Sequencer> parse_sequencer(std::string_view text);
// Reads and checks the MAC and the group. BadSequencer when either fails.
Result<Sequencer> verify_sequencer(std::string_view text, const SequencerKey& key, std::string_view group);

}  // namespace palisade
