// The cluster key: the secret that the lock group's Ed25519 sequencer key, the
// lockd peer MAC key, replicas' receipt key and repairers' seal key are derived
// from (auth/derived_key.h). libsodium.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "palisade/status.h"

namespace palisade {

// The cluster key: 32 secret bytes.
class ClusterKey {
 public:
  static constexpr size_t kBytes = 32;
  // A fresh random key (libsodium's CSPRNG).
  static ClusterKey generate();
  // From 64 hex digits (surrounding whitespace ignored); BadRequest otherwise.
  static Result<ClusterKey> from_hex(std::string_view hex);
  std::string to_hex() const;
  // Reads a key file (64 hex digits, surrounding whitespace ignored; the cluster
  // file's key_file). StorageError when it cannot be read, BadRequest when it
  // holds no key; both messages name the file.
  static Result<ClusterKey> load(const std::string& path);
  const std::array<unsigned char, kBytes>& bytes() const { return bytes_; }

 private:
  std::array<unsigned char, kBytes> bytes_{};
};

}  // namespace palisade
