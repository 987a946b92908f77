#include "wire/config_certificate.h"

#include "wire/sequencer.h"

namespace palisade::wire {
namespace {

constexpr std::string_view kPrefix = "pcc1.";
constexpr std::string_view kContext = "palisade replica set";

Status bad(std::string message) { return Status(Code::kBadRequest, "not a config certificate: " + std::move(message)); }

}  // namespace

std::string join_config_certificate(std::string_view record, std::string_view signature) {
  return std::string(kPrefix) + sequencer_format::base64url(record) + "." + sequencer_format::base64url(signature);
}

Result<ConfigCertificateParts> split_config_certificate(std::string_view text) {
  if (text.size() > kMaxConfigCertificateBytes) {
    return bad(std::to_string(text.size()) + " bytes, over the limit " + std::to_string(kMaxConfigCertificateBytes));
  }
  if (!text.starts_with(kPrefix)) return bad("it does not start with \"pcc1.\"");
  text.remove_prefix(kPrefix.size());
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos) return bad("it has no signature part");
  auto record = sequencer_format::unbase64url(text.substr(0, dot));
  auto signature = sequencer_format::unbase64url(text.substr(dot + 1));
  if (!record || !signature) return bad("a part is not base64url without padding");
  if (signature->size() != kSequencerSignatureBytes) return bad("its signature has the wrong length");
  return ConfigCertificateParts{std::move(*record), std::move(*signature)};
}

std::string config_signed_bytes(std::string_view record) {
  std::string bytes(kContext);
  bytes += '\0';
  bytes += record;
  return bytes;
}

}  // namespace palisade::wire
