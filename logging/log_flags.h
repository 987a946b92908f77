// How the daemons log, set by the flags they share (--log-level,
// --log-format) so that palisade-lockd and palisade-replica write one format:
// text lines, or JSON lines (logging/json_formatter.h). docs/cli.md, "Logs".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace palisade::logging {

struct LogFlags {
  std::string level = "info";  // trace, debug, info, warn, error, critical, off
  std::string format = "text";  // text, json
};

// Adds --log-level and --log-format to `app`. A value they do not know is a
// usage error that lists the ones they do.
void add_log_flags(CLI::App& app, LogFlags& flags);

// Sets the default logger's level and line format, after add_log_flags
// checked `flags`. Each line names `program`, and `node` when given.
void start_logging(const LogFlags& flags, std::string_view program, std::optional<uint32_t> node = std::nullopt);

}  // namespace palisade::logging
