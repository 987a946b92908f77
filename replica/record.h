// How a replica stores one key's version: a self-checking byte record, the value
// of the key in the "versions" database (docs/storage.md has the layout).
#pragma once

#include <string>
#include <string_view>

#include "common/replica_protocol.h"
#include "common/status.h"

namespace palisade::replica {

std::string encode_record(std::string_view key, const wire::Version& version);
// Corrupt when the checksum, the lengths or the format byte are wrong.
Result<wire::Version> decode_record(std::string_view key, std::string_view record);

}  // namespace palisade::replica
