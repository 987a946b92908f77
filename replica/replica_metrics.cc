#include "replica/replica_metrics.h"

#include "metrics/checkpoint_seconds.h"

namespace palisade::replica {

namespace {

metrics::Counter& single(metrics::Registry& r, const char* name, const char* help) {
  return r.counter(name, help).get();
}

}  // namespace

ReplicaMetrics::ReplicaMetrics()
    : requests_(registry_.counter("palisade_replica_requests_total",
                                  "Requests answered, by type and outcome (a status code: ok, fenced, stale, ...)",
                                  {"type", "outcome"})),
      request_seconds_(registry_.histogram("palisade_replica_request_seconds",
                                           "Time from the start of the turn that took a request in to its reply "
                                           "(after the synced commit), by type",
                                           metrics::latency_buckets(), {"type"})),
      fenced_(registry_.counter("palisade_replica_fenced_total",
                                "Writes and fences refused because their token is below the lock's fence floor "
                                "(a superseded holder stopped), by lock; locks past the first 100 count as _other",
                                {"lock"}, kMaxLocks)),
      floor_raises_(registry_.counter("palisade_replica_floor_raises_total",
                                      "Times this replica's fence floor of a lock rose: by a fence, a write under a "
                                      "higher token or a repair, by lock; locks past the first 100 count as _other",
                                      {"lock"}, kMaxLocks)),
      fence_gap_(registry_.histogram("palisade_replica_fenced_token_gap",
                                     "How far below the fence floor the token of a fenced write or fence was",
                                     metrics::power_of_two_buckets(1 << 20))),
      batch_frames_(registry_
                        .histogram("palisade_replica_batch_requests", "Requests per batch (one synced commit)",
                                   metrics::power_of_two_buckets(4096))
                        .get()),
      batch_seconds_(registry_
                         .histogram("palisade_replica_batch_seconds",
                                    "Time to apply a batch, sync it to disk and send its replies",
                                    metrics::latency_buckets())
                         .get()),
      full_batches_(registry_
                        .counter("palisade_replica_full_batches_total",
                                 "Batches that reached max_batch or max_batch_bytes: requests may have waited in "
                                 "ZeroMQ for the next one")
                        .get()),
      checkpoint_seconds_(metrics::checkpoint_seconds(registry_)),
      runs_(registry_.counter("palisade_anti_entropy_runs_total",
                              "Background anti-entropy runs, by result: equal (nothing differed), repaired "
                              "(differences found and repaired), failed (the run stopped: see the log)",
                              {"result"})),
      runs_equal_(runs_.with({"equal"})),
      runs_repaired_(runs_.with({"repaired"})),
      runs_failed_(runs_.with({"failed"})),
      keys_compared_(single(registry_, "palisade_anti_entropy_keys_compared_total",
                            "Entries (keys and fence floors) anti-entropy listed from leaves that differed")),
      keys_differing_(single(registry_, "palisade_anti_entropy_keys_differing_total",
                             "Of those, the entries not alike on every replica")),
      versions_copied_(single(registry_, "palisade_anti_entropy_versions_copied_total",
                              "Versions anti-entropy copied to replicas that lacked them, or committed there")),
      floors_raised_(single(registry_, "palisade_anti_entropy_floors_raised_total",
                            "Fence floors anti-entropy raised on replicas that held a lower one")),
      repair_bytes_(single(registry_, "palisade_anti_entropy_bytes_total",
                           "Bytes anti-entropy sent and received, tree digests included")),
      run_seconds_(registry_
                       .histogram("palisade_anti_entropy_run_seconds", "Time of each background anti-entropy run",
                                  metrics::long_task_buckets())
                       .get()),
      unreachable_(registry_
                       .gauge("palisade_anti_entropy_unreachable_replicas",
                              "Replicas the last background anti-entropy run could not reach")
                       .get()),
      set_version_(registry_
                       .gauge("palisade_replica_set_version",
                              "The version of the replica set this replica keeps (0: none, the cluster file's)")
                       .get()),
      set_paused_(registry_
                      .gauge("palisade_replica_set_paused",
                             "1 while the replica set it keeps is paused for a replacement (writes refused)")
                      .get()) {}

void ReplicaMetrics::replica_set(const wire::ReplicaSet& set) {
  set_version_.set(static_cast<int64_t>(set.version));
  set_paused_.set(set.phase == wire::ReplicaPhase::kPaused ? 1 : 0);
}

void ReplicaMetrics::answered(const wire::ReplicaRequest& request, const wire::ReplicaReply& reply,
                              std::chrono::steady_clock::duration took) {
  const Code code = reply.status.code();
  const size_t type = request.body.index();
  metrics::Counter*& counter = by_type_[type][static_cast<size_t>(code)];
  if (counter == nullptr) {
    counter = &requests_.with({std::string(wire::request_type(request.body)), std::string(code_name(code))});
  }
  counter->inc();
  metrics::Histogram*& latency = latency_by_type_[type];
  if (latency == nullptr) latency = &request_seconds_.with({std::string(wire::request_type(request.body))});
  latency->observe(std::chrono::duration<double>(took).count());
  if (code != Code::kFenced) return;
  const std::string* lock = nullptr;
  uint64_t token = 0;
  if (const auto* write = std::get_if<wire::WriteRequest>(&request.body)) {
    lock = &write->lock;
    token = write->ts.token;
  } else if (const auto* fence = std::get_if<wire::FenceRequest>(&request.body)) {
    lock = &fence->lock;
    token = fence->token;
  }
  if (lock == nullptr) return;
  fenced_.with({*lock}).inc();
  if (reply.floor > token) fence_gap_.get().observe(static_cast<double>(reply.floor - token));
}

void ReplicaMetrics::floor_raised(std::string_view lock) { floor_raises_.with({std::string(lock)}).inc(); }

void ReplicaMetrics::refused(std::string_view type, const Status& why) {
  requests_.with({type.empty() ? "undecoded" : std::string(type), std::string(code_name(why.code()))}).inc();
}

void ReplicaMetrics::batch(size_t frames, std::chrono::steady_clock::duration took, bool full) {
  batch_frames_.observe(static_cast<double>(frames));
  batch_seconds_.observe(std::chrono::duration<double>(took).count());
  if (full) full_batches_.inc();
}

void ReplicaMetrics::checkpointed(std::chrono::steady_clock::duration took) {
  checkpoint_seconds_.observe(std::chrono::duration<double>(took).count());
}

void ReplicaMetrics::anti_entropy_ran(const RepairRun& run) {
  const AntiEntropyReport& r = run.report;
  (!run.status.is_ok() ? runs_failed_ : r.equal ? runs_equal_ : runs_repaired_).inc();
  keys_compared_.inc(r.keys_compared);
  keys_differing_.inc(r.keys_differing);
  versions_copied_.inc(r.versions_sent + r.versions_committed);
  floors_raised_.inc(r.floors_raised);
  repair_bytes_.inc(r.bytes_moved());
  run_seconds_.observe(std::chrono::duration<double>(run.took).count());
  unreachable_.set(static_cast<int64_t>(r.unreachable.size()));
}

void ReplicaMetrics::turned(bool writes_refused) {
  health_.turned();
  if (writes_refused) {
    health_.set_ready(false, "a commit failed: the replica refuses writes until restarted (its log says why)");
  } else {
    health_.set_ready(true);
  }
}

}  // namespace palisade::replica
