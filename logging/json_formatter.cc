#include "logging/json_formatter.h"

#include <chrono>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace palisade::logging {
namespace {

void append(spdlog::memory_buf_t& dest, std::string_view text) { dest.append(text.data(), text.data() + text.size()); }

// `text` as a JSON string, quotes included; bytes that are not UTF-8 become U+FFFD.
std::string json_string(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

JsonLineFormatter::JsonLineFormatter(std::string_view program, std::optional<uint32_t> node)
    : fields_(",\"program\":" + json_string(program)) {
  if (node) fields_ += ",\"node\":" + std::to_string(*node);
}

void JsonLineFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const std::time_t second = spdlog::log_clock::to_time_t(msg.time);
  if (second != second_) {
    std::tm local{};
    localtime_r(&second, &local);
    char text[32];
    seconds_text_.assign(text, std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local));
    const long offset_minutes = local.tm_gmtoff / 60;
    offset_text_ = fmt::format("{}{:02}:{:02}", offset_minutes < 0 ? '-' : '+', std::labs(offset_minutes) / 60,
                               std::labs(offset_minutes) % 60);
    second_ = second;
  }
  const auto ms = duration_cast<milliseconds>(msg.time.time_since_epoch()).count() % 1000;
  const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
  append(dest, "{\"time\":\"");
  append(dest, seconds_text_);
  fmt::format_to(std::back_inserter(dest), ".{:03}", ms);
  append(dest, offset_text_);
  append(dest, "\",\"level\":\"");
  append(dest, std::string_view(level.data(), level.size()));
  append(dest, "\"");
  append(dest, fields_);
  append(dest, ",\"message\":");
  append(dest, json_string(std::string_view(msg.payload.data(), msg.payload.size())));
  append(dest, "}\n");
}

std::unique_ptr<spdlog::formatter> JsonLineFormatter::clone() const {
  return std::make_unique<JsonLineFormatter>(*this);
}

}  // namespace palisade::logging
