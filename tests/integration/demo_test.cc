// `palisade demo` as a person runs it: a real process that starts its own
// cluster (three palisade-lockd, three palisade-replica), with every verdict
// holding.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include "cli/process.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

TEST_CASE("palisade demo: every fencing scenario holds on a real lock group and replicas", "[demo]") {
  TempDir tmp;
  cli::Process demo({PALISADE_BIN, "demo"}, tmp.sub("demo.log"));
  auto status = demo.wait(180000);
  REQUIRE(status.has_value());
  std::string out = demo.log();
  INFO(out);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK(out.find("4 of 4 verdicts held.") != std::string::npos);
  CHECK(out.find("VERDICT FAIL") == std::string::npos);
  // As `cluster up` starts one, the demo's cluster is secure.
  CHECK(out.find("CurveZMQ links with a key per daemon and client") != std::string::npos);
  // Each refusal came from the replicas, naming the newer holder's token.
  size_t refused = 0;
  for (size_t at = out.find("A's write: fenced floor"); at != std::string::npos;
       at = out.find("A's write: fenced floor", at + 1)) {
    ++refused;
  }
  CHECK(refused == 4);
}

TEST_CASE("palisade demo: a missing replica binary fails the verdicts and the exit code", "[demo]") {
  TempDir tmp;
  cli::Process demo({PALISADE_BIN, "demo", "--replica-bin", "/nonexistent/palisade-replica"}, tmp.sub("demo.log"));
  auto status = demo.wait(60000);
  REQUIRE(status.has_value());
  INFO(demo.log());
  CHECK(WEXITSTATUS(*status) == 1);
  CHECK(demo.log().find("VERDICT FAIL") != std::string::npos);
  CHECK(demo.log().find("0 of 4 verdicts held.") != std::string::npos);
}

}  // namespace
}  // namespace palisade
