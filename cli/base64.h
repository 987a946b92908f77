// Standard base64 (RFC 4648 section 4, padded; libsodium's), for bytes JSON cannot carry.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace palisade::cli {

std::string base64(std::string_view bytes);
// Whether `text` is valid UTF-8 (a JSON string can hold it as it is).
bool is_utf8(std::string_view text);
// Sets out[field] to `bytes` when they are UTF-8; else to null, with
// out[field + "_base64"] holding them.
void put_bytes(nlohmann::json& out, const std::string& field, const std::string& bytes);

}  // namespace palisade::cli
