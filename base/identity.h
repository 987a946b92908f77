// What names an identity (a daemon, a service, a person; docs/design.md
// "Wire and transport"): its name and its CURVE public keys, checked here
// without ZeroMQ so that the cluster file's reader needs none.
#pragma once

#include <cstddef>
#include <string_view>

namespace palisade {

// A CURVE key as text: 40 characters of Z85 for 32 bytes.
constexpr size_t kCurveKeyZ85Chars = 40;

// 1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-' (names appear in
// file names, logs and lists).
bool is_identity_name(std::string_view name);

// 40 characters of Z85 that decode to 32 bytes (every 5 characters to a
// 32-bit word).
bool is_z85_key(std::string_view key);

}  // namespace palisade
