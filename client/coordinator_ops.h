// The coordinator's state of one operation in flight (client/coordinator.h):
// its own header so that tests/unit/coordinator_test.cc can break it on
// purpose, the negative control of Coordinator::check_invariants().
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/coordinator.h"

namespace palisade::client {

// A write or a fence sent to all N replicas.
struct Coordinator::WriteOp {
  bool is_fence = false;
  wire::ReplicaRequestBody request;  // what every replica is sent
  wire::WriteRequest write;  // for writes: what was sent, to commit it afterwards
  FencedTimestamp ts;
  uint64_t deadline_ms = 0;
  int acks = 0;
  wire::Certificate receipts;  // of the replicas that acknowledged, to prove the commit
  int answered = 0;
  int nonstores = 0;  // replicas that definitely did not store it
  bool fenced = false;
  bool stale = false;
  Status bad_sequencer;  // a replica refused the sequencer (for good)
  Status wrong_cluster;  // a replica of another cluster refused it
  uint64_t floor = 0;
  Status error;
  Status maybe_stored;  // a refusal of a replica that may have stored it before (not final)
  std::vector<int> unsent;  // replicas not connected when it was sent: sent again later
  uint64_t resend_at_ms = 0;
};

// A get: reads from R replicas (more when needed), then repairs.
struct Coordinator::ReadOp {
  struct Replica {
    bool asked = false;
    bool outstanding = false;
    bool failed = false;  // its last answer was an error or it was unreachable: wait for the retry time
    bool answered = false;  // a successful read reply
    bool corrupt = false;  // it answered that its copy is corrupt: unknown, and to repair
    bool refuses = false;  // it refused for good (wrong_cluster, permission_denied): never asked again
    std::optional<uint64_t> corrupt_digest;  // the damaged record's digest its last `corrupt` named
    uint64_t answered_request = 0;  // the request its answer (`answered`) replied to
    std::vector<wire::Version> versions;  // newest first; the committed one last
    std::vector<wire::Receipt> receipts;  // one per version, from a replica that checks sequencers
    std::map<std::string, uint64_t> floors;  // fence floors learnt, by lock
    std::string floor_of;  // what the outstanding read asked for
  };
  std::string key;
  uint64_t deadline_ms = 0;
  uint64_t retry_at_ms = 0;  // when to hedge or ask again
  std::vector<Replica> replicas;
  // Answers to requests older than this (sent before the newest damage seen
  // was reported) do not count: a repair of that damage must be decided from
  // answers taken after it.
  uint64_t fresh_from = 0;
  bool chosen = false;
  std::optional<wire::Version> result;
  int repairs_outstanding = 0;
  Status refusal;  // the last answer that refused for good
};

}  // namespace palisade::client
