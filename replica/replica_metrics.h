// What palisade-replica exports on --metrics-listen (docs/metrics.md): its
// requests by type and outcome with their latency, fenced writes by lock and
// by how far below the floor they were, floors raised, batches, checkpoints,
// background anti-entropy runs, and whether it is ready. Updated by
// ReplicaServer's loop and BackgroundRepair's thread, rendered by the HTTP
// thread.
//
// Thread safety: anti_entropy_ran() from one thread at a time (the repair's),
// the other update calls from the loop's thread only (replica_set() also
// before the loop starts); registry() and health() from any.
#pragma once

#include <array>
#include <chrono>
#include <string_view>

#include "metrics/health.h"
#include "metrics/registry.h"
#include "palisade/status.h"
#include "replica/background_repair.h"
#include "wire/replica_protocol.h"
#include "wire/replica_set.h"

namespace palisade::replica {

class ReplicaMetrics {
 public:
  ReplicaMetrics();

  metrics::Registry& registry() { return registry_; }
  metrics::Health& health() { return health_; }

  // A request applied and answered, `took` after the start of the turn that
  // took it in.
  void answered(const wire::ReplicaRequest& request, const wire::ReplicaReply& reply,
                std::chrono::steady_clock::duration took);
  // The fence floor of `lock` rose (ReplicaHost::floor_raised).
  void floor_raised(std::string_view lock);
  // A frame refused before it was applied; `type` empty when it did not decode.
  void refused(std::string_view type, const Status& why);
  // One batch answered: its frames, the time to apply, sync and answer it,
  // and whether it was full (max_batch or max_batch_bytes), so that requests
  // may have been left waiting in ZeroMQ for the next turn.
  void batch(size_t frames, std::chrono::steady_clock::duration took, bool full);
  // A checkpoint of the store took `took` (LmdbStore::on_checkpoint).
  void checkpointed(std::chrono::steady_clock::duration took);
  // A background anti-entropy run ended (BackgroundRepair's observer).
  void anti_entropy_ran(const RepairRun& run);
  // The replica set the replica keeps now (ReplicaConfig's observer).
  void replica_set(const wire::ReplicaSet& set);
  // The loop turned; `writes_refused`: ReplicaHandler::writes_refused(), which
  // makes the replica not ready.
  void turned(bool writes_refused);

  // Label values kept per family (locks): the rest count as "_other".
  static constexpr size_t kMaxLocks = 100;

 private:
  static constexpr size_t kTypes = std::variant_size_v<wire::ReplicaRequestBody>;

  metrics::Registry registry_;
  metrics::Health health_;
  metrics::CounterFamily& requests_;
  metrics::HistogramFamily& request_seconds_;
  metrics::CounterFamily& fenced_;
  metrics::CounterFamily& floor_raises_;
  metrics::HistogramFamily& fence_gap_;
  metrics::Histogram& batch_frames_;
  metrics::Histogram& batch_seconds_;
  metrics::Counter& full_batches_;
  metrics::Histogram& checkpoint_seconds_;
  // Anti-entropy: runs by result (each result's series made at construction).
  metrics::CounterFamily& runs_;
  metrics::Counter& runs_equal_;
  metrics::Counter& runs_repaired_;
  metrics::Counter& runs_failed_;
  metrics::Counter& keys_compared_;
  metrics::Counter& keys_differing_;
  metrics::Counter& versions_copied_;
  metrics::Counter& floors_raised_;
  metrics::Counter& repair_bytes_;
  metrics::Histogram& run_seconds_;
  metrics::Gauge& unreachable_;
  metrics::Gauge& set_version_;
  metrics::Gauge& set_paused_;
  // requests_ by type and code, and request_seconds_ by type, looked up at
  // first use (the loop's thread only).
  std::array<std::array<metrics::Counter*, kCodeCount>, kTypes> by_type_{};
  std::array<metrics::Histogram*, kTypes> latency_by_type_{};
};

}  // namespace palisade::replica
