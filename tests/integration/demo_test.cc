// `palisade demo` as a person runs it: a real process that starts its own
// replicas, with every verdict holding.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include "tools/process.h"
#include "tools/temp_dir.h"

namespace palisade {
namespace {

TEST_CASE("palisade demo: every fencing scenario holds on real replicas", "[demo]") {
  tools::TempDir tmp;
  tools::Process demo({PALISADE_BIN, "demo", "--replica-bin", PALISADE_REPLICA_BIN}, tmp.sub("demo.log"));
  auto status = demo.wait(60000);
  REQUIRE(status.has_value());
  std::string out = demo.log();
  INFO(out);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK(out.find("3 of 3 verdicts held.") != std::string::npos);
  CHECK(out.find("VERDICT FAIL") == std::string::npos);
  CHECK(out.find("fenced: token 1 was superseded") != std::string::npos);
}

TEST_CASE("palisade demo: a missing replica binary fails the verdicts and the exit code", "[demo]") {
  tools::TempDir tmp;
  tools::Process demo({PALISADE_BIN, "demo", "--replica-bin", "/nonexistent/palisade-replica"}, tmp.sub("demo.log"));
  auto status = demo.wait(60000);
  REQUIRE(status.has_value());
  INFO(demo.log());
  CHECK(WEXITSTATUS(*status) == 1);
  CHECK(demo.log().find("VERDICT FAIL") != std::string::npos);
}

}  // namespace
}  // namespace palisade
