// Messages between clients and palisade-replica (docs/protocol.md, "Replica").
// One request, one reply, matched by id.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>
#include <string>
#include <string_view>
#include <variant>

#include "common/envelope.h"
#include "palisade/status.h"
#include "palisade/timestamp.h"

namespace palisade::wire {

enum class VersionState : uint8_t { kPending, kCommitted };
std::string_view state_name(VersionState state);

// One version of a key. A replica keeps, per key, its newest committed version
// and the pending versions newer than it (docs/storage.md).
struct Version {
  FencedTimestamp ts;
  std::string lock;  // empty: written without a lock (token 0)
  VersionState state = VersionState::kPending;
  bool tombstone = false;
  std::string value;  // empty for a tombstone
  // The sequencer the version was written under (empty without a lock): repair
  // copies carry it, so that replicas can check them too.
  std::string sequencer{};

  friend bool operator==(const Version&, const Version&) = default;
};

// Hash of what a write carries besides its timestamp: orders equal timestamps
// with different content the same way on every replica.
uint64_t content_hash(const Version& v);
// The order of versions everywhere: timestamp, then content hash.
bool newer(const Version& a, const Version& b);
// The same write: equal timestamp and content.
bool same_write(const Version& a, const Version& b);

struct PingRequest {
  friend bool operator==(const PingRequest&, const PingRequest&) = default;
};
struct WriteRequest {  // a put, or a delete when tombstone is set
  std::string key;
  std::string value;
  bool tombstone = false;
  FencedTimestamp ts;
  std::string lock;
  // Store it as committed: only for versions known to be acknowledged (read
  // repair and anti-entropy copying them). The fence floor does not refuse it.
  bool committed = false;
  // The sequencer text of the lock grant (common/sequencer.h), at most
  // kMaxSequencerBytes; empty when none. A replica that holds the cluster key
  // requires a valid one on every fenced write, repair copies included.
  std::string sequencer{};
  friend bool operator==(const WriteRequest&, const WriteRequest&) = default;
};
struct FenceRequest {
  std::string lock;
  uint64_t token = 0;
  // As for WriteRequest: required by a replica that holds the cluster key.
  std::string sequencer{};
  friend bool operator==(const FenceRequest&, const FenceRequest&) = default;
};
// Commit and purge name a version by timestamp and, since two writes can share
// a timestamp, by content_hash() when `hash` is set.
struct CommitRequest {
  std::string key;
  FencedTimestamp ts;
  std::optional<uint64_t> hash{};
  friend bool operator==(const CommitRequest&, const CommitRequest&) = default;
};
struct PurgeRequest {  // drop a pending version found superseded (DESIGN "Fence safety" 3)
  std::string key;
  FencedTimestamp ts;
  std::optional<uint64_t> hash{};
  friend bool operator==(const PurgeRequest&, const PurgeRequest&) = default;
};
// Whether `v` is the version a commit or purge names.
bool names(const Version& v, const FencedTimestamp& ts, const std::optional<uint64_t>& hash);
struct ReadRequest {
  std::string key;
  // When set, the reply's floors include this lock's, also when no version of
  // the key names it (readers deciding about another replica's version).
  std::string floor_of{};
  friend bool operator==(const ReadRequest&, const ReadRequest&) = default;
};

using ReplicaRequestBody =
    std::variant<PingRequest, WriteRequest, FenceRequest, CommitRequest, ReadRequest, PurgeRequest>;

struct ReplicaRequest {
  uint64_t id = 0;
  ReplicaRequestBody body;
  friend bool operator==(const ReplicaRequest&, const ReplicaRequest&) = default;
};

// One reply shape for every request; which fields are set depends on the request
// and the code (docs/protocol.md).
struct ReplicaReply {
  uint64_t id = 0;
  Status status;
  uint64_t clock = 0;                        // the replica's HLC when it answered
  uint64_t floor = 0;                        // fence: floor after; fenced: the floor
  std::optional<FencedTimestamp> stored_ts;  // stale: the newer committed timestamp
  std::vector<Version> versions;             // read: newest first; empty when the key has none
  std::map<std::string, uint64_t> floors;    // read: fence floor of each lock named by versions or floor_of

  const Version* newest() const { return versions.empty() ? nullptr : &versions.front(); }
  bool applied = false;                      // commit, purge: whether it changed anything
};

std::string encode_request(const ReplicaRequest& request);
std::string encode_reply(const ReplicaReply& reply);

// On failure *id_out holds the request's id when it could be read, else 0.
Result<ReplicaRequest> decode_request(std::string_view bytes, const Limits& limits, uint64_t* id_out = nullptr);
Result<ReplicaReply> decode_reply(std::string_view bytes, const Limits& limits);

// The reply a node sends for a request it could not decode.
ReplicaReply error_reply(uint64_t id, Status status);

}  // namespace palisade::wire
