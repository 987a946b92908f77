#include "logging/log_flags.h"

#include <array>
#include <utility>

#include <spdlog/spdlog.h>

#include "logging/json_formatter.h"

namespace palisade::logging {
namespace {

// spdlog::level::from_str takes any other name for `off`: only these reach it.
// "warning" too, as the logs name that level.
constexpr std::array<std::pair<std::string_view, spdlog::level::level_enum>, 8> kLevels{{
    {"trace", spdlog::level::trace},
    {"debug", spdlog::level::debug},
    {"info", spdlog::level::info},
    {"warn", spdlog::level::warn},
    {"warning", spdlog::level::warn},
    {"error", spdlog::level::err},
    {"critical", spdlog::level::critical},
    {"off", spdlog::level::off},
}};

}  // namespace

void add_log_flags(CLI::App& app, LogFlags& flags) {
  std::vector<std::string> levels;
  for (const auto& [name, level] : kLevels) levels.emplace_back(name);
  app.add_option("--log-level", flags.level, "Log this level and the more severe ones")
      ->capture_default_str()
      ->check(CLI::IsMember(levels));
  app.add_option("--log-format", flags.format,
                 "text: lines for people; json: one JSON object a line, with time, level,\n"
                 "program, node and message (docs/cli.md, \"Logs\")")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
}

void start_logging(const LogFlags& flags, std::string_view program, std::optional<uint32_t> node) {
  spdlog::level::level_enum level = spdlog::level::info;
  for (const auto& [name, l] : kLevels) {
    if (name == flags.level) level = l;
  }
  spdlog::set_level(level);
  if (flags.format == "json") {
    spdlog::set_formatter(std::make_unique<JsonLineFormatter>(program, node));
    return;
  }
  // ISO 8601 with the zone, as the JSON lines' time.
  std::string name(program);
  if (node) name += "[" + std::to_string(*node) + "]";
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z " + name + " %l: %v");
}

}  // namespace palisade::logging
