// The daemons' logs as an operator's tools read them (docs/cli.md, "Logs"):
// with --log-format json every line palisade-lockd and palisade-replica write
// is one JSON object with the time, level, program, node (lockd) and message;
// what they must log is there; a bad --log-level or --log-format stops a
// daemon before it starts, naming the flag.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <csignal>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/temp_dir.h"
#include "base/version.h"
#include "cli/process.h"
#include "client/replica_connection.h"
#include "tests/support/local_cluster.h"
#include "tests/support/replica_process.h"
#include "tests/support/replica_requests.h"

namespace palisade {
namespace {

using nlohmann::json;

// How `p` ended within `timeout_ms`: its exit code, or minus the signal that
// killed it; nullopt while it still runs.
std::optional<int> ended_with(cli::Process& p, int timeout_ms) {
  auto status = p.wait(timeout_ms);
  if (!status) return std::nullopt;
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : -WTERMSIG(*status);
}

// Every line of `log`, each of which must be a JSON log line of `program`:
// RFC 3339 time with milliseconds and offset, a level, the program, the
// message; `node` exactly when given.
std::vector<json> json_lines(const std::string& log, const std::string& program, std::optional<uint32_t> node) {
  static const std::regex kTime(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d)");
  std::vector<json> lines;
  std::istringstream in(log);
  for (std::string text; std::getline(in, text);) {
    INFO(text);
    json line = json::parse(text);  // throws, failing the test, on anything but a JSON line
    REQUIRE(line.is_object());
    CHECK(std::regex_match(line.value("time", ""), kTime));
    CHECK(line.contains("level"));
    CHECK(line["program"] == program);
    CHECK(line.contains("node") == node.has_value());
    if (node) CHECK(line["node"] == *node);
    CHECK(line["message"].is_string());
    lines.push_back(std::move(line));
  }
  return lines;
}

// The first line whose message holds every one of `parts`; null when none does.
json find_line(const std::vector<json>& lines, const std::vector<std::string>& parts) {
  for (const json& line : lines) {
    const std::string message = line["message"];
    bool all = true;
    for (const std::string& part : parts) all = all && message.find(part) != std::string::npos;
    if (all) return line;
  }
  return nullptr;
}

TEST_CASE("daemon logs: a replica's json log parses line by line, and names a fenced write's lock and tokens",
          "[logs][replica]") {
  TempDir tmp;
  test::ReplicaProcess daemon(tmp.sub("data"), {"--log-format", "json", "--insecure"});
  client::ReplicaConnection conn(daemon.endpoint());
  // A lock name with a quote, a newline and a byte that is not UTF-8.
  const std::string lock = "ledger \"eu\"\n\xff";
  auto fenced = conn.call(test::fence_req(lock, 7), 5000);
  REQUIRE(fenced.is_ok());
  REQUIRE(fenced.value().status.is_ok());
  for (int i = 0; i < 3; ++i) {  // a zombie holder writing on
    auto zombie = conn.call(test::write_req("balance", "100", test::ts_now(5), lock), 5000);
    REQUIRE(zombie.is_ok());
    CHECK(zombie.value().status.code() == Code::kFenced);
  }
  daemon.process().signal(SIGTERM);
  CHECK(ended_with(daemon.process(), 10000) == 0);

  const std::string log = daemon.process().log();
  INFO(log);
  const std::vector<json> lines = json_lines(log, "palisade-replica", std::nullopt);
  // The start line names the build, for a log read long after an upgrade.
  CHECK(find_line(lines, {"started " + version_line("palisade-replica") + ": pid"}) != nullptr);
  CHECK(find_line(lines, {"stopped cleanly"}) != nullptr);
  const json first = find_line(lines, {"fenced", "'ledger \"eu\"\\x0a\\xff'", "token 5", "floor 7", "1 writes"});
  REQUIRE(first != nullptr);
  CHECK(first["level"] == "warning");
  CHECK(find_line(lines, {"fenced", "2 writes fenced so far"}) != nullptr);
  CHECK(find_line(lines, {"fenced", "3 writes"}) == nullptr);  // the 3rd is not logged
}

TEST_CASE("daemon logs: a lockd node's json log parses line by line, with its node id and its election",
          "[logs][lockgroup]") {
  TempDir tmp;
  cli::LocalClusterOptions o = test::local_cluster_options(tmp.sub("cluster"));
  o.lockd = 1;
  o.replicas = 1;
  o.lockd_args = {"--log-format", "json"};
  o.replica_args = {"--log-format", "json"};
  auto cluster = test::start_local_cluster(o);
  cluster->stop();

  const std::string lockd_log = cluster->lockd(1).log();
  INFO(lockd_log);
  const std::vector<json> lockd = json_lines(lockd_log, "palisade-lockd", 1);
  const json master = find_line(lockd, {"master now, epoch"});
  REQUIRE(master != nullptr);
  CHECK(master["level"] == "info");
  CHECK(find_line(lockd, {"started " + version_line("palisade-lockd") + ": node 1"}) != nullptr);
  CHECK(find_line(lockd, {"stopped cleanly"}) != nullptr);
  const std::string replica_log = cluster->replica(0).log();
  INFO(replica_log);
  CHECK(find_line(json_lines(replica_log, "palisade-replica", std::nullopt), {"started"}) != nullptr);
}

TEST_CASE("daemon logs: a bad --log-level or --log-format stops a daemon before it starts, naming the flag", "[logs]") {
  TempDir tmp;
  const std::string data_dir = tmp.sub("data");
  const std::vector<std::pair<std::string, std::vector<std::string>>> daemons = {
      {test::lockd_binary(), {"--id", "1", "--cluster", "/dev/null", "--data-dir", data_dir}},
      {test::replica_binary(), {"--data-dir", data_dir, "--insecure"}}};
  const std::vector<std::pair<std::string, std::string>> bad = {{"--log-level", "verbose"},
                                                                {"--log-level", ""},
                                                                {"--log-format", "xml"}};
  int runs = 0;
  for (const auto& [binary, required] : daemons) {
    for (const auto& [flag, value] : bad) {
      std::vector<std::string> argv = {binary};
      argv.insert(argv.end(), required.begin(), required.end());
      argv.insert(argv.end(), {flag, value});
      cli::Process p(argv, tmp.sub("run-" + std::to_string(++runs) + ".log"));
      const auto code = ended_with(p, 10000);
      INFO(binary << " " << flag << " '" << value << "': " << p.log());
      REQUIRE(code.has_value());
      CHECK(*code > 0);
      CHECK_THAT(p.log(), Catch::Contains(flag + ": " + value + " not in {"));
      CHECK(!std::filesystem::exists(data_dir));  // refused before anything
    }
  }
}

}  // namespace
}  // namespace palisade
