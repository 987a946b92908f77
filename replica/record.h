// How a replica stores one key: its versions in one self-checking byte record,
// the value of the key in the "versions" database (docs/storage.md has the layout).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "wire/replica_protocol.h"
#include "palisade/status.h"

namespace palisade::replica {

// A key's versions, newest first: pending versions, then at most one committed
// version, the oldest (handler.cc keeps the rules, docs/storage.md explains them).
struct Versions : std::vector<wire::Version> {
  using std::vector<wire::Version>::vector;

  // What this replica dropped from the key in favour of a committed version:
  // a write it refuses may be a duplicate of one of those, and then the refusal
  // says nothing final (docs/design-changes.md 16). Per token, the newest
  // version dropped, for unfenced writes (token 0) and the newest fenced
  // tokens, kDroppedTokensKept in all, ascending; `dropped_older` is the
  // newest of those no longer kept, and bounds every fenced token up to its own.
  static constexpr size_t kDroppedTokensKept = 8;
  std::vector<FencedTimestamp> dropped{};
  FencedTimestamp dropped_older{};

  // The newest dropped version a write with `token` may be a duplicate of
  // (zero: none): a write no newer than it may have been stored here.
  FencedTimestamp dropped_up_to(uint64_t token) const;
  // Drops the versions from `first` on (older than a committed one), noting them.
  void drop_from(const_iterator first);
  void note_dropped(const FencedTimestamp& ts);
  friend bool operator==(const Versions&, const Versions&) = default;
};

// "" when `versions` keep the order every change keeps (strictly newest first
// by wire::newer; only the last, the oldest, may be committed), else what is wrong.
std::string check_versions(const Versions& versions);

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
