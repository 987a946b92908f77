// What palisade-lockd exports on --metrics-listen (docs/metrics.md): client
// requests by type and outcome with their latency, refusals the driver
// counts, the lock group's state (master, elections, epoch, sessions, locks,
// waiters, lock-delays, proposals pending) and what the master applied (grants, releases,
// expiries). Updated by LockdServer's loop, rendered by the HTTP thread.
//
// Thread safety: the update calls from the loop's thread only; registry()
// and health() from any.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lockgroup/lock_events.h"
#include "lockgroup/lockd_driver.h"
#include "metrics/health.h"
#include "metrics/registry.h"

namespace palisade::lockgroup {

class LockdMetrics {
 public:
  LockdMetrics();

  metrics::Registry& registry() { return registry_; }
  metrics::Health& health() { return health_; }

  // A request answered `took` after it arrived; `type` as in FrameResult.
  void answered(std::string_view type, const wire::LockReply& reply, std::chrono::steady_clock::duration took);
  // A request refused before the service saw it.
  void refused(std::string_view type, Code code);
  // One turn: the frames it took in, and how long its sync took.
  void turn(size_t frames, std::chrono::steady_clock::duration sync);
  // A checkpoint of the acceptor storage took `took` (LmdbPaxosStorage::on_checkpoint).
  void checkpointed(std::chrono::steady_clock::duration took);
  // After each turn: the driver's counts, the group's state and what the
  // master applied (`events`); also marks the loop turning and whether a
  // master is known.
  void observe(const LockdDriver& driver, const std::vector<LockEvent>& events, uint64_t now_ms);

 private:
  // The series of one request type and outcome, looked up once.
  struct Series {
    std::string type;
    Code code;
    metrics::Counter* requests;
    metrics::Histogram* latency;
  };
  // A few dozen at most (types times the codes each answers): a scan is cheap.
  Series& series(std::string_view type, Code code);
  // The lock table's sizes: they take a walk over every lock, so once a second.
  void sample_table(const LockTable& table, uint64_t now_ms);

  metrics::Registry registry_;
  metrics::Health health_;
  metrics::CounterFamily& requests_;
  metrics::HistogramFamily& latency_;
  metrics::Histogram& turn_frames_;
  metrics::Histogram& sync_seconds_;
  metrics::Histogram& checkpoint_seconds_;
  metrics::Counter& refused_requests_;
  metrics::Counter& forged_peer_messages_;
  metrics::Counter& refused_peer_messages_;
  metrics::Counter& peer_bytes_taken_;
  metrics::Counter& master_changes_;
  metrics::Counter& elections_;
  metrics::Gauge& is_master_;
  metrics::Gauge& epoch_;
  metrics::Gauge& sessions_;
  metrics::Gauge& locks_held_;
  metrics::Gauge& waiters_;
  metrics::Gauge& lock_delays_;
  metrics::Gauge& proposals_pending_;
  metrics::Gauge& member_;
  metrics::Gauge& members_version_;
  metrics::CounterFamily& events_;
  std::array<metrics::Counter*, 4> by_event_{};  // events_, by LockEvent::Kind
  std::vector<Series> series_;
  NodeId last_master_ = 0;
  Ballot last_campaign_ = 0;
  uint64_t next_sample_ms_ = 0;
};

}  // namespace palisade::lockgroup
