// What palisade-lockd exports (lockgroup/lockd_metrics.h): every family
// renders before anything happened, and the lock service's queue of
// proposals follows the driver's turns. One node that is a group of its own.
#include "lockgroup/lockd_metrics.h"

#include <catch2/catch.hpp>

#include <memory>
#include <sstream>
#include <string>

#include "lockgroup/memory_paxos_storage.h"
#include "tests/support/lone_lockd.h"

namespace palisade::lockgroup {
namespace {

struct Host : LockdHost {
  void send_peer(NodeId, std::string) override {}
  void reply(uint64_t, std::string) override {}
  void forget_routes() override {}
  uint64_t next_incarnation() override { return 1; }
};

// The value of `series` (name and labels, as rendered) in `text`; -1 when absent.
double value(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

TEST_CASE("lockd metrics: every family renders its HELP and TYPE before anything happened", "[metrics]") {
  LockdMetrics m;
  const std::string text = m.registry().render();
  for (const char* type : {"palisade_lockd_requests_total counter", "palisade_lockd_request_seconds histogram",
                           "palisade_lockd_proposals_pending gauge", "palisade_storage_checkpoint_seconds histogram",
                           "palisade_lockd_lock_events_total counter"}) {
    CHECK_THAT(text, Catch::Contains(std::string("# TYPE ") + type + "\n"));
  }
  CHECK(value(text, "palisade_lockd_proposals_pending") == 0);
  CHECK(value(text, "palisade_storage_checkpoint_seconds_count") == 0);
  // Series by request type appear with the first request.
  CHECK_THAT(text, !Catch::Contains("palisade_lockd_requests_total{"));
  CHECK_THAT(text, !Catch::Contains("palisade_lockd_request_seconds_bucket{"));
}

TEST_CASE("lockd metrics: proposals pending count the master's commands until applied, and membership gauges follow",
          "[metrics]") {
  LockdDriverOptions o = lone_lockd_options();
  MemoryPaxosStorage disk;
  Host host;
  uint64_t now = 1000;
  auto started = LockdDriver::start(std::move(o), disk, host, now);
  REQUIRE(started.is_ok());
  LockdDriver& driver = *started.value();
  auto turn = [&] {
    driver.tick(now);
    driver.begin_sync(now);
    REQUIRE(driver.finish_sync(now).is_ok());
  };
  for (int i = 0; i < 500 && !driver.service().is_master(now); ++i) {
    now += 10;
    turn();
  }
  REQUIRE(driver.service().is_master(now));
  turn();

  LockdMetrics m;
  const std::string pending = "palisade_lockd_proposals_pending";
  m.observe(driver, {}, now);
  CHECK(value(m.registry().render(), pending) == 0);
  for (uint64_t id = 1; id <= 3; ++id) {
    wire::LockRequest r{id, wire::OpenSessionRequest{.epoch = driver.service().node().epoch()}};
    REQUIRE(driver.on_frame(wire::encode_lock_request(r), now).outcome == FrameOutcome::kRequest);
  }
  m.observe(driver, {}, now);
  CHECK(value(m.registry().render(), pending) == 3);
  turn();  // a group of one chooses at its own sync
  m.observe(driver, {}, now);
  CHECK(value(m.registry().render(), pending) == 0);

  // Membership: a member at version 0, then version 1 after a change.
  CHECK(value(m.registry().render(), "palisade_lockd_member") == 1);
  CHECK(value(m.registry().render(), "palisade_lockd_members_version") == 0);
  REQUIRE(driver.service().table().members_version() == 0);
  wire::LockRequest change{9, wire::SetMembersRequest{.version = 0, .nodes = {{1, "tcp://n1"}}}};
  REQUIRE(driver.on_frame(wire::encode_lock_request(change), now).outcome == FrameOutcome::kRequest);
  turn();
  REQUIRE(driver.service().table().members_version() == 1);
  m.observe(driver, {}, now);
  CHECK(value(m.registry().render(), "palisade_lockd_members_version") == 1);
  CHECK(value(m.registry().render(), "palisade_lockd_member") == 1);
}

}  // namespace
}  // namespace palisade::lockgroup
