// How a replica stores one key: its versions in one self-checking byte record,
// the value of the key in the "versions" database (docs/storage.md has the layout).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/replica_protocol.h"
#include "palisade/status.h"

namespace palisade::replica {

// A key's versions, newest first: pending versions, then at most one committed
// version, the oldest (handler.cc keeps the rules, docs/storage.md explains them).
using Versions = std::vector<wire::Version>;

std::string encode_record(std::string_view key, const Versions& versions);
// Corrupt when the checksum, the lengths or the format byte are wrong.
Result<Versions> decode_record(std::string_view key, std::string_view record);

// A lock's fence floor as the "floors" database stores it, with the sequencer
// that raised it when one was given (anti-entropy copies floors with it).
struct FloorRecord {
  uint64_t floor = 0;
  std::string sequencer;
};
std::string encode_floor_record(std::string_view lock, const FloorRecord& floor);
// Reads both layouts: floor + checksum (format 1), floor + sequencer + checksum.
Result<FloorRecord> decode_floor_record(std::string_view lock, std::string_view record);

}  // namespace palisade::replica
