#include "palisade/status.h"

#include <array>

namespace palisade {
namespace {

constexpr std::array<std::pair<Code, std::string_view>, 24> kNames = {{
    {Code::kOk, "ok"},
    {Code::kMalformed, "malformed"},
    {Code::kBadRequest, "bad_request"},
    {Code::kUnknownType, "unknown_type"},
    {Code::kUnsupportedVersion, "unsupported_version"},
    {Code::kTooLarge, "too_large"},
    {Code::kFenced, "fenced"},
    {Code::kStale, "stale"},
    {Code::kCorrupt, "corrupt"},
    {Code::kClockSkew, "clock_skew"},
    {Code::kStorageError, "storage_error"},
    {Code::kUnavailable, "unavailable"},
    {Code::kTimeout, "timeout"},
    {Code::kBadSequencer, "bad_sequencer"},
    {Code::kNotMaster, "not_master"},
    {Code::kStaleEpoch, "stale_epoch"},
    {Code::kNoSession, "no_session"},
    {Code::kBusy, "busy"},
    {Code::kInternal, "internal"},
    {Code::kWrongCluster, "wrong_cluster"},
    {Code::kCancelled, "cancelled"},
    {Code::kPermissionDenied, "permission_denied"},
    {Code::kStaleConfig, "stale_config"},
    {Code::kUnknownConfig, "unknown_config"},
}};

constexpr bool names_every_code_in_order() {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (static_cast<size_t>(kNames[i].first) != i) return false;
  }
  return kNames.size() == kCodeCount;
}
static_assert(names_every_code_in_order(), "every Code needs a name here, in order; kCodeCount follows the last");

}  // namespace

std::string_view code_name(Code code) {
  for (const auto& [c, name] : kNames) {
    if (c == code) return name;
  }
  return "internal";
}

std::optional<Code> code_from_name(std::string_view name) {
  for (const auto& [c, n] : kNames) {
    if (n == name) return c;
  }
  return std::nullopt;
}

std::string Status::to_string() const {
  std::string out(code_name(code_));
  if (!message_.empty()) out += ": " + message_;
  return out;
}

}  // namespace palisade
