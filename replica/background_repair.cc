#include "replica/background_repair.h"

#include <spdlog/spdlog.h>

namespace palisade::replica {

BackgroundRepair::BackgroundRepair(AntiEntropyOptions options, std::chrono::milliseconds interval, Observer observer)
    : options_(std::move(options)), interval_(interval), observer_(std::move(observer)), thread_([this] { loop(); }) {}

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
    const RepairRun ran = run();
    if (observer_) observer_(ran);
    lock.lock();
  }
}

RepairRun BackgroundRepair::run() {
  RepairRun ran;
  // A run that stops returns no report: its last progress report says how far it got.
  AntiEntropyOptions options = options_;
  options.progress = [&ran](const AntiEntropyReport& progress) { ran.report = progress; };
  const auto start = std::chrono::steady_clock::now();
  auto report = run_anti_entropy(options);
  ran.took = std::chrono::steady_clock::now() - start;
  if (!report.is_ok()) {
    ran.status = report.status();
    spdlog::warn("anti-entropy: {}", ran.status.to_string());
    return ran;
  }
  ran.report = std::move(report).value();
  const AntiEntropyReport& r = ran.report;
  spdlog::info("anti-entropy: {}; {} entries differed, {} versions sent, {} committed, {} floors raised, "
               "{} purged, {} tombstones dropped, {} corrupt replaced, {} undecided, {} unreachable, {} bytes",
               r.equal ? "replicas equal" : "replicas differed", r.keys_differing, r.versions_sent,
               r.versions_committed, r.floors_raised, r.purged, r.tombstones_dropped, r.corrupt_replaced, r.undecided,
               r.unreachable.size(), r.bytes_moved());
  if (r.refused != 0) spdlog::warn("anti-entropy: {} repairs refused, first: {}", r.refused, r.first_refusal);
  return ran;
}

}  // namespace palisade::replica
