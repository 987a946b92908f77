#include "replica/background_repair.h"

#include <spdlog/spdlog.h>

namespace palisade::replica {

BackgroundRepair::BackgroundRepair(AntiEntropyOptions options, std::chrono::milliseconds interval, Observer observer)
    : options_(std::move(options)), observer_(std::move(observer)), timer_(interval, [this] {
        const RepairRun ran = run();
        if (observer_) observer_(ran);
      }) {}

BackgroundRepair::~BackgroundRepair() = default;

void BackgroundRepair::follow(const wire::ReplicaSet& set, const std::string& certificate) {
  std::lock_guard lock(mu_);
  if (set.version <= set_.version) return;
  set_ = set;
  certificate_ = certificate;
}

AntiEntropyOptions BackgroundRepair::options_now() {
  AntiEntropyOptions options = options_;
  std::lock_guard lock(mu_);
  if (set_.version == 0) return options;
  options.replicas.clear();
  for (const wire::ReplicaInfo& r : set_.replicas) {
    options.replicas.push_back(r.address);
    if (options.credentials && !r.key.empty()) options.credentials->server_keys[r.address] = r.key;
  }
  options.cluster_size = static_cast<int>(set_.replicas.size());
  options.write_quorum = static_cast<int>(set_.write_quorum);
  options.config = set_.version;
  options.config_certificate = certificate_;
  return options;
}

RepairRun BackgroundRepair::run() {
  RepairRun ran;
  // A run that stops returns no report: its last progress report says how far it got.
  AntiEntropyOptions options = options_now();
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
