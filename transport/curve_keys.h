// CurveZMQ key pairs and the files that hold them (docs/security.md). A key is
// 32 bytes, written as 40 characters of Z85 (ZeroMQ's text form). A key file
// names one identity and holds its key pair:
//
//   # palisade key pair of identity "alice" (palisade keygen). ...
//   identity = "alice"
//   public-key = "<40 characters of Z85>"
//   secret-key = "<40 characters of Z85>"
//
// (valid TOML, read here without a TOML library so that the client links
// none). The secret key proves the identity, so a key file must be readable by
// its owner only: reading refuses a file that group or others may read.
#pragma once

#include <string>
#include <string_view>

#include "base/identity.h"
#include "palisade/status.h"

namespace palisade::transport {

struct CurveKeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
};

struct KeyFile {
  std::string identity;
  CurveKeyPair keys;
};

// A fresh key pair from the system's randomness; throws std::runtime_error
// when ZeroMQ was built without CURVE.
CurveKeyPair generate_curve_keys();

// Keys and names are checked by is_z85_key and is_identity_name (base/identity.h).

// The text of a key file; and the file itself, written with mode 0600 and
// synced. Writing refuses to replace an existing file (kBadRequest).
std::string key_file_text(const KeyFile& file);
Status write_key_file(const std::string& path, const KeyFile& file);

// Reads and checks a key file: its mode (no access for group or others), its
// fields, and that its public key belongs to its secret key. Every error names
// the file and what to do.
Result<KeyFile> read_key_file(const std::string& path);
// The same checks on text already read (the mode aside); `path` names it in errors.
Result<KeyFile> parse_key_file(std::string_view text, const std::string& path);

}  // namespace palisade::transport
