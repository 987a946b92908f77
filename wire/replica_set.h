// The replica set as the lock group records it (docs/design.md "The replica
// set"; docs/protocol.md "Config certificates"): the replicas, the quorum sizes
// and a version that counts the changes. Version 0 is no record: the cluster
// file's [[replica]] list stands.
//
// This file is the record and its one canonical MessagePack encoding, which
// the lock table's log and snapshot hold and the config certificate signs;
// signing is auth/config_certificate.h's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "palisade/status.h"

namespace palisade::wire {

constexpr uint32_t kMaxReplicaId = 255;
// A request's lists hold at most 64 items (wire::Limits): so does the record.
constexpr size_t kMaxReplicas = 64;

// Serving: the replicas take reads and writes. Paused: they refuse fences and
// writes while a replacement copies them (a later step of issue #28 makes it).
enum class ReplicaPhase : uint8_t { kServing, kPaused };
std::string_view phase_name(ReplicaPhase phase);

// One replica: what the cluster file's [[replica]] entry says of it, and the
// id it puts in its receipts (wire::Receipt::replica).
struct ReplicaInfo {
  uint32_t id = 0;  // 1..kMaxReplicaId: the replica's place in the set
  std::string address;  // its endpoint, as the cluster file's `endpoint`
  // Its CURVE public key (Z85, 40 characters) on a secure cluster, else empty.
  std::string key{};
  uint64_t receipt_id = 0;  // its receipts' id (replica/lmdb_store.h); 0: not known yet
  friend bool operator==(const ReplicaInfo&, const ReplicaInfo&) = default;
};

struct ReplicaSet {
  uint64_t version = 0;
  ReplicaPhase phase = ReplicaPhase::kServing;
  std::vector<ReplicaInfo> replicas;  // ids increasing
  uint32_t write_quorum = 0;  // W
  uint32_t read_quorum = 0;  // R
  friend bool operator==(const ReplicaSet&, const ReplicaSet&) = default;
};

// Ok, or BadRequest naming the first problem: no replica, more than
// kMaxReplicas, an id outside 1..kMaxReplicaId or not above the one before, an
// empty or repeated address, a key that is not 40 characters, or quorums that
// cannot meet (W or R outside 1..N, or R + W <= N).
Status check_replicas(const std::vector<ReplicaInfo>& replicas, uint32_t write_quorum, uint32_t read_quorum);

// [version, phase, [[id, address, key, receipt_id]...], write_quorum,
// read_quorum], phase the text "serving" or "paused": every record has one form.
std::string encode_replica_set(const ReplicaSet& set);
// The record these bytes encode, in that form only, passing check_replicas;
// BadRequest otherwise. Version 0 is no record but a cluster file's list,
// which a lock group node signs before any record exists (get_replicas):
// the lock table refuses it, and replicas keep none.
Result<ReplicaSet> decode_replica_set(std::string_view bytes);

}  // namespace palisade::wire
