// The daemons' log formats (logging/): JSON lines that parse whatever was
// logged, with their fields, and the flags that choose them.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <time.h>

#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>
#include <spdlog/spdlog.h>
#include <spdlog/sinks/ostream_sink.h>

#include "logging/json_formatter.h"
#include "logging/log_flags.h"

namespace palisade::logging {
namespace {

using Clock = spdlog::log_clock;

// 2026-12-05T04:01:02.345Z
const Clock::time_point kTime = Clock::time_point(std::chrono::milliseconds(1'796'443'262'345));

// The time zone is `tz` (POSIX TZ) while this lives.
class TimeZone {
 public:
  explicit TimeZone(const char* tz) {
    if (const char* old = getenv("TZ")) old_ = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~TimeZone() {
    if (old_) {
      setenv("TZ", old_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  std::optional<std::string> old_;
};

std::string format(std::string_view payload, std::optional<uint32_t> node = 3,
                   spdlog::level::level_enum level = spdlog::level::info, Clock::time_point time = kTime) {
  JsonLineFormatter formatter("palisade-lockd", node);
  spdlog::details::log_msg msg(time, spdlog::source_loc{}, "", level, spdlog::string_view_t(payload));
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  return fmt::to_string(out);
}

// The line's one JSON object; the line ends with its only newline.
nlohmann::json parsed(const std::string& line) {
  INFO(line);
  REQUIRE(!line.empty());
  REQUIRE(line.back() == '\n');
  REQUIRE(line.find('\n') == line.size() - 1);
  return nlohmann::json::parse(line);  // throws on anything but valid JSON (and UTF-8)
}

TEST_CASE("json log: a line has the time, level, program, node and message", "[logging]") {
  TimeZone utc("UTC0");
  const nlohmann::json line = parsed(format("master now, epoch 7", 3, spdlog::level::warn));
  CHECK(line["time"] == "2026-12-05T04:01:02.345+00:00");
  CHECK(line["level"] == "warning");
  CHECK(line["program"] == "palisade-lockd");
  CHECK(line["node"] == 3);
  CHECK(line["message"] == "master now, epoch 7");
  CHECK(line.size() == 5);
}

TEST_CASE("json log: a program without a node id has no node field", "[logging]") {
  const nlohmann::json line = parsed(format("started", std::nullopt));
  CHECK(!line.contains("node"));
  CHECK(line["level"] == "info");
}

TEST_CASE("json log: the time is local, with its UTC offset and milliseconds", "[logging]") {
  {
    TimeZone india("IST-5:30");
    CHECK(parsed(format("x"))["time"] == "2026-12-05T09:31:02.345+05:30");
  }
  {
    TimeZone new_york("EST5");
    CHECK(parsed(format("x"))["time"] == "2026-12-04T23:01:02.345-05:00");
  }
  TimeZone utc("UTC0");
  CHECK(parsed(format("x", 3, spdlog::level::info, kTime + std::chrono::milliseconds(655)))["time"] ==
        "2026-12-05T04:01:03.000+00:00");
}

TEST_CASE("json log: quotes, backslashes and control characters are escaped", "[logging]") {
  const std::string payload = std::string("a \"quoted\" C:\\path\nnext line\ttab\r\x01\x1f") + '\0' + "nul \x7f";
  const std::string line = format(payload);
  CHECK(parsed(line)["message"] == payload);
  CHECK(line.find("\\\"quoted\\\"") != std::string::npos);
  CHECK(line.find("\\n") != std::string::npos);
}

TEST_CASE("json log: bytes that are not UTF-8 become U+FFFD, UTF-8 stays", "[logging]") {
  const std::string replacement = "\xef\xbf\xbd";
  CHECK(parsed(format("lock '\xff'"))["message"] == "lock '" + replacement + "'");
  CHECK(parsed(format("cut \xe2\x82"))["message"] == "cut " + replacement);
  CHECK(parsed(format("surrogate \xed\xa0\x80"))["message"].get<std::string>().find("surrogate " + replacement) == 0);
  CHECK(parsed(format("caf\xc3\xa9 \xe2\x82\xac"))["message"] == "caf\xc3\xa9 \xe2\x82\xac");
}

TEST_CASE("json log: through a logger, every message is one line", "[logging]") {
  std::ostringstream out;
  spdlog::logger logger("test", std::make_shared<spdlog::sinks::ostream_sink_st>(out));
  logger.set_formatter(std::make_unique<JsonLineFormatter>("palisade-replica", std::nullopt));
  logger.info("refused a write under lock {}: token {} is below the fence floor {}", "'L'", 5, 7);
  logger.error("two\nlines");
  std::istringstream lines(out.str());
  std::string text;
  std::vector<nlohmann::json> parsed_lines;
  while (std::getline(lines, text)) parsed_lines.push_back(nlohmann::json::parse(text));
  REQUIRE(parsed_lines.size() == 2);
  CHECK(parsed_lines[0]["message"] == "refused a write under lock 'L': token 5 is below the fence floor 7");
  CHECK(parsed_lines[0]["program"] == "palisade-replica");
  CHECK(parsed_lines[1]["level"] == "error");
  CHECK(parsed_lines[1]["message"] == "two\nlines");
}

// What parsing `args` with the log flags says: empty when it takes them.
std::string parse_error(std::vector<std::string> args, LogFlags& flags) {
  CLI::App app{"test"};
  add_log_flags(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    CHECK(e.get_exit_code() != 0);
    return e.what();
  }
  return "";
}

TEST_CASE("log flags: the levels and formats are taken, others are refused by name", "[logging]") {
  LogFlags flags;
  CHECK(parse_error({"--log-level", "debug", "--log-format", "json"}, flags).empty());
  CHECK(flags.level == "debug");
  CHECK(flags.format == "json");
  for (const char* level : {"trace", "info", "warn", "error", "critical", "off"}) {
    CHECK(parse_error({"--log-level", level}, flags).empty());
  }
  // The name the logs give the level is taken too.
  REQUIRE(parse_error({"--log-level", "warning"}, flags).empty());
  const auto before = spdlog::get_level();
  start_logging(flags, "palisade-test", std::nullopt);
  CHECK(spdlog::get_level() == spdlog::level::warn);
  spdlog::set_level(before);
  spdlog::set_pattern("%+");
  // spdlog would take any unknown level as `off`: a typo must not silence the daemon.
  const std::string bad_level = parse_error({"--log-level", "verbose"}, flags);
  CHECK_THAT(bad_level, Catch::Contains("--log-level") && Catch::Contains("verbose") && Catch::Contains("info"));
  const std::string bad_format = parse_error({"--log-format", "xml"}, flags);
  CHECK_THAT(bad_format, Catch::Contains("--log-format") && Catch::Contains("xml") && Catch::Contains("json"));
}

}  // namespace
}  // namespace palisade::logging
