// Receipts and certificates (docs/protocol.md, "Receipts"). A replica that
// checks sequencers hands a receipt for every version it accepts or returns;
// W receipts of distinct replicas prove that W replicas acknowledged the
// version. Committing a version under a lock takes that proof: a client that
// holds only its own sequencer cannot make a version no quorum accepted (a
// superseded holder's write refused by the fenced replicas) committed
// anywhere, and so never readable.
//
// The MAC key is derived from the cluster key and group, so every replica can
// check every other's receipts, and clients cannot make any.
#pragma once

#include <cstdint>
#include <string_view>

#include "auth/derived_key.h"
#include "wire/replica_protocol.h"

namespace palisade::replica {

class Receipts {
 public:
  Receipts(const ClusterKey& cluster_key, std::string_view group, uint64_t replica_id);

  // This replica's receipt of a version: key, timestamp and content hash.
  wire::Receipt issue(std::string_view key, const FencedTimestamp& ts, uint64_t hash) const;
  // Whether `certificate` holds valid receipts of this version from at least
  // `needed` distinct replicas.
  bool proves(const wire::Certificate& certificate, std::string_view key, const FencedTimestamp& ts, uint64_t hash,
              size_t needed) const;

 private:
  wire::Receipt sign(uint64_t replica, std::string_view key, const FencedTimestamp& ts, uint64_t hash) const;

  DerivedKey key_;
  uint64_t replica_id_;
};

}  // namespace palisade::replica
