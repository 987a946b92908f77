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
//
// This file is the format alone: clients read sequencers without the key and
// link no libsodium. The key, signing and the MAC check are in
// auth/sequencer_key.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "palisade/lock_mode.h"
#include "palisade/status.h"

namespace palisade {

// The longest sequencer text accepted anywhere (parse, verify, the wire field).
constexpr size_t kMaxSequencerBytes = 1024;
// The MAC's length (libsodium's crypto_auth_BYTES; auth/sequencer_key.cc checks).
constexpr size_t kSequencerMacBytes = 32;

struct Sequencer {
  std::string group;  // the lock group's id (cluster file "group")
  std::string lock;
  LockMode mode = LockMode::kExclusive;
  uint64_t token = 0;
  friend bool operator==(const Sequencer&, const Sequencer&) = default;
};

// Reads the fields without checking the MAC: for clients, which do not hold the
// key. BadSequencer when the text is not a sequencer (wrong prefix, bad base64,
// a payload that is not [group, lock, mode, token], empty group or lock, token 0,
// longer than kMaxSequencerBytes). Never crashes on any input.
Result<Sequencer> parse_sequencer(std::string_view text);

namespace sequencer_format {

// A sequencer text cut in two and decoded: the payload and its MAC.
struct Parts {
  std::string payload;
  std::string mac;
};

// The MessagePack payload of `sequencer`.
std::string encode_payload(const Sequencer& sequencer);
// The text form of a payload and its MAC.
std::string join(std::string_view payload, std::string_view mac);
// The decoded parts of a text (MAC of kSequencerMacBytes); BadSequencer otherwise.
Result<Parts> split(std::string_view text);
// The fields of a payload; BadSequencer when it is not [group, lock, mode, token].
Result<Sequencer> decode_payload(std::string_view payload);

// base64url (RFC 4648 section 5) without padding. unbase64 refuses any other
// character, padding, a length of 4k + 1 and non-zero unused bits, as
// libsodium's sodium_base642bin does, so every payload has one text.
std::string base64url(std::string_view bytes);
std::optional<std::string> unbase64url(std::string_view text);

}  // namespace sequencer_format
}  // namespace palisade
