#include "palisade/timestamp.h"

#include "base/big_endian.h"

#include <charconv>
#include <cstring>

namespace palisade {
namespace {


// Parses all of `text` as a decimal number no larger than `max`.
std::optional<uint64_t> parse_number(std::string_view text, uint64_t max) {
  uint64_t v = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v > max) return std::nullopt;
  return v;
}

}  // namespace

void FencedTimestamp::encode_to(uint8_t* out) const {
  store_be64(out, token);
  store_be64(out + 8, hlc);
}

FencedTimestamp::Encoded FencedTimestamp::encode() const {
  Encoded out;
  encode_to(out.data());
  return out;
}

FencedTimestamp FencedTimestamp::decode(const uint8_t* in) {
  return {load_be64(in), load_be64(in + 8)};
}

std::string FencedTimestamp::to_string() const {
  return std::to_string(token) + "@" + std::to_string(hlc::physical_ms(hlc)) + "." +
         std::to_string(hlc::logical(hlc));
}

std::optional<FencedTimestamp> FencedTimestamp::parse(std::string_view text) {
  auto at = text.find('@');
  auto dot = text.find('.', at == std::string_view::npos ? 0 : at);
  if (at == std::string_view::npos || dot == std::string_view::npos) return std::nullopt;
  auto token = parse_number(text.substr(0, at), UINT64_MAX);
  auto ms = parse_number(text.substr(at + 1, dot - at - 1), hlc::kMaxPhysicalMs);
  auto logical = parse_number(text.substr(dot + 1), hlc::kLogicalMask);
  if (!token || !ms || !logical) return std::nullopt;
  return FencedTimestamp{*token, hlc::make(*ms, *logical)};
}

}  // namespace palisade
