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

// A round of asking replicas for one answer each (a read's, a scan's
// listing): how many answered, and failed, since the last retry. At each
// retry, replicas whose request or answer may be lost are asked again; on a
// paused set, all of them (CoordinatorOptions::paused).
struct AskRound {
  int answered = 0, failed = 0;
  template <class Replicas>
  static AskRound count(Replicas& replicas, bool retry, bool paused) {
    AskRound round;
    for (auto& rep : replicas) {
      round.answered += rep.answered;
      round.failed += rep.failed;
      if (retry) rep.failed = rep.outstanding = false;
      if (retry && paused) rep.answered = false;
    }
    return round;
  }
  // Hedge: once hedge_ms passed or one failed, ask those not asked yet; at
  // every retry, ask again those that did not answer.
  template <class Replica>
  bool asks(const Replica& rep, bool retry) const {
    return (!rep.asked && (retry || failed > 0)) || (retry && !rep.answered);
  }
};

// What a listing's answer (a scan's, a feed read's) says first: its code
// (unavailable when there is none), once the replica's clock is observed
// and its request no longer outstanding. A refusal for good (wrong_cluster,
// permission_denied) marks the replica, never asked again, and is kept in
// `refusal`.
template <class Replica>
Code listing_answer(HybridClock& clock, Replica& rep, Status& refusal, const wire::ReplicaReply* reply) {
  if (reply != nullptr && reply->clock != 0) (void)clock.observe(reply->clock);
  rep.outstanding = false;
  const Code code = reply == nullptr ? Code::kUnavailable : reply->status.code();
  if (code == Code::kWrongCluster || code == Code::kPermissionDenied) {
    rep.refuses = true;
    refusal = reply->status;
  }
  return code;
}

// A get: reads from R replicas (more when needed), then repairs.
struct Coordinator::ReadOp {
  struct Replica {
    bool asked = false;
    bool outstanding = false;
    bool failed = false;  // its last answer was an error or it was unreachable: wait for the retry time
    bool answered = false;  // a successful read reply
    bool corrupt = false;  // it answered that its copy is corrupt: unknown, and to repair
    bool refuses = false;  // it refused for good (wrong_cluster, permission_denied, bad_sequencer): never asked again
    std::optional<uint64_t> corrupt_digest;  // the damaged record's digest its last `corrupt` named
    uint64_t answered_request = 0;  // the request its answer (`answered`) replied to
    std::vector<wire::Version> versions;  // newest first; the committed one last
    std::vector<wire::Receipt> receipts;  // one per version, from a replica that checks sequencers
    std::map<std::string, uint64_t> floors;  // fence floors learnt, by lock
    std::string floor_of;  // what the outstanding read asked for
  };
  std::string key;
  std::optional<wire::FenceRequest> fence;  // a fenced read's, sent with every ask
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
  OpId scan = 0;  // the scan this read decides a key for; 0: a get
};

// A prefix read, a page at a time: the page's keys are listed by R replicas
// (more when some do not answer in time), then each key is decided by a
// ReadOp that starts from those answers, as if they had answered a `read`.
struct Coordinator::ScanOp {
  struct Replica {
    bool asked = false;
    bool outstanding = false;
    bool failed = false;  // its last answer was an error, or it was unreachable
    bool answered = false;  // it listed the page: `listed` holds its answer
    bool refuses = false;  // wrong_cluster, permission_denied: never asked again
    uint64_t answered_request = 0;
    wire::ReplicaReply listed;
  };
  std::string prefix;
  std::string after;  // the page lists the keys after this one
  size_t limit = 0;  // entries still wanted
  uint64_t deadline_ms = 0;  // the page's
  uint64_t retry_at_ms = 0;
  uint64_t pages = 0;  // listed so far
  std::vector<Replica> replicas;
  Status refusal;  // the last answer that refused for good
  // While the page's keys are read: what each read returned, by key, and
  // where the page ends (empty: at the end of the prefix).
  std::map<std::string, std::optional<ReadResult>> reads;
  size_t reads_left = 0;
  std::string page_end;
  ScanResult result;  // the entries of the pages read so far
};

// A page of every replica's change feed, asked once each (again at each
// retry while it has not answered), until all answered, or R did by
// hedge_ms, or the deadline.
struct Coordinator::FeedOp {
  struct Replica {
    bool outstanding = false;
    bool answered = false;
    bool refuses = false;  // wrong_cluster, permission_denied: never asked again
  };
  std::string prefix;
  std::vector<uint64_t> after;
  uint64_t start_ms = 0;
  bool wait_for_all = false;
  uint64_t deadline_ms = 0;
  uint64_t retry_at_ms = 0;
  std::vector<Replica> replicas;
  Status refusal;  // the last answer that refused for good
  FeedResult result;
};

}  // namespace palisade::client
