// What the command line shares: durations with units, epochs, exit codes for
// Statuses, and how the cluster file is found.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "lockgroup/paxos_messages.h"
#include "cli/command.h"

namespace palisade::cli {
namespace {

using std::chrono::milliseconds;

TEST_CASE("cli flags: durations need a unit and add up", "[cli]") {
  CHECK(parse_duration("500ms") == milliseconds(500));
  CHECK(parse_duration("2s") == milliseconds(2000));
  CHECK(parse_duration("1m") == milliseconds(60000));
  CHECK(parse_duration("1h") == milliseconds(3'600'000));
  CHECK(parse_duration("1m30s") == milliseconds(90000));
  CHECK(parse_duration("0s") == milliseconds(0));
  for (const char* bad : {"", "5", "s", "2 s", "1.5s", "2sec", "-1s", "ms5", "99999999999999999999h"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration(bad).has_value());
  }
  CHECK(format_duration(milliseconds(250)) == "250ms");
  CHECK(format_duration(milliseconds(1500)) == "1.5s");
  CHECK(format_duration(milliseconds(60000)) == "1m");
  CHECK(format_duration(milliseconds(1234)) == "1234ms");
}

TEST_CASE("cli flags: an epoch reads as ROUND.NODE", "[cli]") {
  CHECK(format_epoch(259) == "1.3");
  CHECK(format_epoch(lockgroup::make_ballot(12, 5)) == "12.5");
  CHECK(format_epoch(lockgroup::make_ballot(70000, 255)) == "70000.255");
  CHECK(format_epoch(0) == "0");  // no ballot yet
  CHECK(epoch_parts(259).round == 1);
  CHECK(epoch_parts(259).node == 3);
}

TEST_CASE("cli flags: each kind of failure has its exit code", "[cli]") {
  CHECK(exit_code_for(Status::ok()) == kExitOk);
  CHECK(exit_code_for(Status(Code::kFenced, "")) == kExitFenced);
  // A forged sequencer, another lock group's, a shared grant's: a usage error, not a newer holder.
  CHECK(exit_code_for(Status(Code::kBadSequencer, "")) == kExitUsage);
  CHECK(exit_code_for(Status(Code::kUnavailable, "")) == kExitUnavailable);
  CHECK(exit_code_for(Status(Code::kTimeout, "")) == kExitTimeout);
  CHECK(exit_code_for(Status(Code::kBusy, "")) == kExitTimeout);
  CHECK(exit_code_for(Status(Code::kBadRequest, "")) == kExitUsage);
  CHECK(exit_code_for(Status(Code::kStorageError, "")) == kExitFailure);
}

TEST_CASE("cli flags: --cluster, then $PALISADE_CLUSTER, then the local cluster's file", "[cli]") {
  setenv("PALISADE_HOME", "/srv/p", 1);
  unsetenv("PALISADE_CLUSTER");
  CommonOptions common;
  CHECK(resolve_cluster_file(common) == "/srv/p/local/cluster.toml");
  setenv("PALISADE_CLUSTER", "/etc/c.toml", 1);
  CHECK(resolve_cluster_file(common) == "/etc/c.toml");
  common.cluster_file = "mine.toml";
  CHECK(resolve_cluster_file(common) == "mine.toml");
  unsetenv("PALISADE_CLUSTER");
  unsetenv("PALISADE_HOME");
}

}  // namespace
}  // namespace palisade::cli
