// What palisade-replica exports (replica/replica_metrics.h): every family
// renders before anything happened, and background anti-entropy runs count
// by result with what they found.
#include "replica/replica_metrics.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>
#include <string>

namespace palisade::replica {
namespace {

// The value of `series` (name and labels, as rendered) in `text`; -1 when absent.
double value(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

TEST_CASE("replica metrics: every family renders its HELP and TYPE before anything happened", "[metrics]") {
  ReplicaMetrics m;
  const std::string text = m.registry().render();
  for (const char* type :
       {"palisade_replica_requests_total counter", "palisade_replica_request_seconds histogram",
        "palisade_replica_fenced_total counter", "palisade_replica_floor_raises_total counter",
        "palisade_replica_full_batches_total counter", "palisade_storage_checkpoint_seconds histogram",
        "palisade_anti_entropy_runs_total counter", "palisade_anti_entropy_keys_compared_total counter",
        "palisade_anti_entropy_keys_differing_total counter", "palisade_anti_entropy_versions_copied_total counter",
        "palisade_anti_entropy_floors_raised_total counter", "palisade_anti_entropy_bytes_total counter",
        "palisade_anti_entropy_run_seconds histogram", "palisade_anti_entropy_unreachable_replicas gauge"}) {
    CHECK_THAT(text, Catch::Contains(std::string("# TYPE ") + type + "\n"));
  }
  // Series by request type and by lock appear with the first request; runs by
  // result are there from the start, at 0.
  for (const char* labelled : {"palisade_replica_requests_total{", "palisade_replica_request_seconds_bucket{",
                               "palisade_replica_floor_raises_total{", "palisade_replica_fenced_total{"}) {
    CHECK_THAT(text, !Catch::Contains(labelled));
  }
  for (const char* result : {"equal", "repaired", "failed"}) {
    CHECK(value(text, std::string("palisade_anti_entropy_runs_total{result=\"") + result + "\"}") == 0);
  }
  CHECK(value(text, "palisade_replica_full_batches_total") == 0);
  CHECK(value(text, "palisade_anti_entropy_unreachable_replicas") == 0);
  CHECK(value(text, "palisade_anti_entropy_run_seconds_count") == 0);
}

TEST_CASE("replica metrics: anti-entropy runs count by result, with what they compared, copied and moved",
          "[metrics]") {
  ReplicaMetrics m;
  RepairRun equal;
  equal.report.equal = true;
  equal.report.bytes_sent = 100;
  equal.report.bytes_received = 50;
  equal.took = std::chrono::milliseconds(20);
  m.anti_entropy_ran(equal);

  RepairRun repaired;
  repaired.report.keys_compared = 10;
  repaired.report.keys_differing = 3;
  repaired.report.versions_sent = 2;
  repaired.report.versions_committed = 1;
  repaired.report.floors_raised = 4;
  repaired.report.unreachable = {"tcp://127.0.0.1:1"};
  repaired.took = std::chrono::seconds(90);  // past latency_buckets' 10 s
  m.anti_entropy_ran(repaired);
  std::string text = m.registry().render();
  CHECK(value(text, "palisade_anti_entropy_runs_total{result=\"equal\"}") == 1);
  CHECK(value(text, "palisade_anti_entropy_runs_total{result=\"repaired\"}") == 1);
  CHECK(value(text, "palisade_anti_entropy_runs_total{result=\"failed\"}") == 0);
  CHECK(value(text, "palisade_anti_entropy_keys_compared_total") == 10);
  CHECK(value(text, "palisade_anti_entropy_keys_differing_total") == 3);
  CHECK(value(text, "palisade_anti_entropy_versions_copied_total") == 3);
  CHECK(value(text, "palisade_anti_entropy_floors_raised_total") == 4);
  CHECK(value(text, "palisade_anti_entropy_bytes_total") == 150);
  CHECK(value(text, "palisade_anti_entropy_unreachable_replicas") == 1);
  CHECK(value(text, "palisade_anti_entropy_run_seconds_count") == 2);
  CHECK(value(text, "palisade_anti_entropy_run_seconds_bucket{le=\"60\"}") == 1);
  CHECK(value(text, "palisade_anti_entropy_run_seconds_bucket{le=\"120\"}") == 2);

  // A run that stopped is failed, whatever its last report said; the gauge
  // takes the replicas it could not reach.
  RepairRun failed;
  failed.status = Status(Code::kUnavailable, "fewer than two replicas answered");
  failed.report.equal = true;
  failed.report.unreachable = {"tcp://127.0.0.1:1", "tcp://127.0.0.1:2"};
  m.anti_entropy_ran(failed);
  text = m.registry().render();
  CHECK(value(text, "palisade_anti_entropy_runs_total{result=\"failed\"}") == 1);
  CHECK(value(text, "palisade_anti_entropy_runs_total{result=\"equal\"}") == 1);
  CHECK(value(text, "palisade_anti_entropy_unreachable_replicas") == 2);

  m.anti_entropy_ran(equal);
  CHECK(value(m.registry().render(), "palisade_anti_entropy_unreachable_replicas") == 0);
}

}  // namespace
}  // namespace palisade::replica
