#include "replica/background_repair.h"

#include <spdlog/spdlog.h>

namespace palisade::replica {

BackgroundRepair::BackgroundRepair(AntiEntropyOptions options, std::chrono::milliseconds interval)
    : options_(std::move(options)), interval_(interval), thread_([this] { loop(); }) {}

BackgroundRepair::~BackgroundRepair() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void BackgroundRepair::loop() {
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    auto report = run_anti_entropy(options_);
    if (!report.is_ok()) {
      spdlog::warn("anti-entropy: {}", report.status().to_string());
    } else {
      const AntiEntropyReport& r = report.value();
      spdlog::info("anti-entropy: {}; {} entries differed, {} versions sent, {} committed, {} floors raised, "
                   "{} purged, {} tombstones dropped, {} corrupt replaced, {} undecided, {} unreachable, {} bytes",
                   r.equal ? "replicas equal" : "replicas differed", r.keys_differing, r.versions_sent,
                   r.versions_committed, r.floors_raised, r.purged, r.tombstones_dropped, r.corrupt_replaced,
                   r.undecided, r.unreachable.size(), r.bytes_moved());
      if (r.refused != 0) spdlog::warn("anti-entropy: {} repairs refused, first: {}", r.refused, r.first_refusal);
    }
    lock.lock();
  }
}

}  // namespace palisade::replica
