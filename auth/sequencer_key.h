// The cluster key and the sequencer MAC (wire/sequencer.h has the format):
// what lockd nodes sign grants with and replicas check them with. libsodium.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "palisade/status.h"
#include "wire/sequencer.h"

namespace palisade {

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
// Reads and checks the MAC and the group. BadSequencer when either fails.
Result<Sequencer> verify_sequencer(std::string_view text, const SequencerKey& key, std::string_view group);

}  // namespace palisade
