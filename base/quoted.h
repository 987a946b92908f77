// Bytes from a request (a lock name, a key) as a log line shows them.
#pragma once

#include <string>
#include <string_view>

namespace palisade {

// `bytes` between single quotes, with anything but printable ASCII (and the
// quote and backslash) as \xNN: a name can neither break the line nor fake
// another one.
std::string quoted_bytes(std::string_view bytes);

}  // namespace palisade
