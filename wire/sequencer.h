// The text form of sequencers (include/palisade/sequencer.h; docs/protocol.md,
// "Sequencers"):
//
//   "ps2." + base64url(payload) + "." + base64url(signature)
//
// payload = MessagePack [group, lock, mode, token], mode the text "exclusive"
// or "shared", and [group, lock, mode, token, identity] for a grant to an
// identity (a cluster with identities); signature = Ed25519 of the payload under the lock group's key.
// base64url is RFC 4648 section 5 without padding.
//
// This file is the format alone: clients read sequencers without any key and
// link no libsodium. Signing is auth/sequencer_signer.h's, checking
// auth/sequencer_verifier.cc's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "palisade/sequencer.h"
#include "palisade/status.h"

namespace palisade {

// The signature's length (libsodium's crypto_sign_BYTES; auth/ checks).
constexpr size_t kSequencerSignatureBytes = 64;

namespace sequencer_format {

// A sequencer text cut in two and decoded: the payload and its signature.
struct Parts {
  std::string payload;
  std::string signature;
};

// The MessagePack payload of `sequencer`.
std::string encode_payload(const Sequencer& sequencer);
// The text form of a payload and its signature.
std::string join(std::string_view payload, std::string_view signature);
// The decoded parts of a text (a signature of kSequencerSignatureBytes);
// BadSequencer otherwise.
Result<Parts> split(std::string_view text);
// The fields of a payload; BadSequencer when it is not [group, lock, mode,
// token] or [group, lock, mode, token, identity] with an identity name.
Result<Sequencer> decode_payload(std::string_view payload);

// base64url (RFC 4648 section 5) without padding. unbase64 refuses any other
// character, padding, a length of 4k + 1 and non-zero unused bits, as
// libsodium's sodium_base642bin does, so every payload has one text.
std::string base64url(std::string_view bytes);
std::optional<std::string> unbase64url(std::string_view text);

// A lock group's public key as the cluster file lists it: "psk1." + base64url.
std::string public_key_text(std::string_view bytes);
// The bytes of such a text; nullopt when it is not one (any length: the caller checks).
std::optional<std::string> public_key_bytes(std::string_view text);

}  // namespace sequencer_format
}  // namespace palisade
