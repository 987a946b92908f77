// Standard base64 (RFC 4648 section 4, padded; libsodium's), for bytes JSON cannot carry.
#pragma once

#include <string>
#include <string_view>

namespace palisade::cli {

std::string base64(std::string_view bytes);
// Whether `text` is valid UTF-8 (a JSON string can hold it as it is).
bool is_utf8(std::string_view text);

}  // namespace palisade::cli
