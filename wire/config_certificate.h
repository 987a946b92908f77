// The text form of config certificates (docs/protocol.md, "Config
// certificates"): a replica set record (wire/replica_set.h) signed by the lock
// group's key, the one that signs sequencers, so that anyone who checks
// sequencers can check it, and a client or replica can relay it.
//
//   "pcc1." + base64url(record) + "." + base64url(signature)
//
// record = the record's canonical encoding; signature = Ed25519 of
// signed_bytes(record). This file is the format alone; signing and checking
// are auth/config_certificate.h's.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "palisade/status.h"

namespace palisade::wire {

// A record of kMaxReplicas replicas with the longest addresses and keys, in
// base64url, fits.
constexpr size_t kMaxConfigCertificateBytes = 128 * 1024;

struct ConfigCertificateParts {
  std::string record;
  std::string signature;
};

std::string join_config_certificate(std::string_view record, std::string_view signature);
// The decoded parts of a text (a signature of 64 bytes); BadRequest otherwise.
Result<ConfigCertificateParts> split_config_certificate(std::string_view text);

// What the signature covers: a context, a zero byte, then the record. A
// sequencer's payload starts with a MessagePack array header, never with the
// context's first letter, so no signature of one verifies as the other.
std::string config_signed_bytes(std::string_view record);

}  // namespace palisade::wire
