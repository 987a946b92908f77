// The JSON lines log format of the daemons (--log-format json): one object a
// line, for log shippers and `jq`:
//
//   {"time":"2026-12-05T04:01:02.345+01:00","level":"info","program":"palisade-lockd","node":1,"message":"..."}
//
// `time` is RFC 3339, local time with milliseconds and the UTC offset (as the
// text format); `level` is spdlog's name (trace, debug, info, warning, error,
// critical); `node` is there for a program with a node id (palisade-lockd's
// --id). Whatever was logged, the line is valid JSON: quotes, backslashes and
// control characters are escaped, and bytes that are not UTF-8 become U+FFFD.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/formatter.h>

namespace palisade::logging {

class JsonLineFormatter final : public spdlog::formatter {
 public:
  JsonLineFormatter(std::string_view program, std::optional<uint32_t> node);

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  std::string fields_;  // ,"program":...[,"node":N], the same on every line
  // The time up to the seconds and the offset, of the second last formatted:
  // the time zone is looked up once a second, not once a line.
  std::time_t second_ = -1;
  std::string seconds_text_;
  std::string offset_text_;
};

}  // namespace palisade::logging
