#include "auth/config_certificate.h"

#include "wire/config_certificate.h"

namespace palisade {

std::string sign_config_certificate(const SequencerSigner& signer, const wire::ReplicaSet& set) {
  const std::string record = wire::encode_replica_set(set);
  return wire::join_config_certificate(record, signer.signature_of(wire::config_signed_bytes(record)));
}

Result<wire::ReplicaSet> verify_config_certificate(const SequencerVerifier& verifier, std::string_view text) {
  auto parts = wire::split_config_certificate(text);
  if (!parts.is_ok()) return parts.status();
  // The signature is checked before anything in the record is trusted.
  if (!verifier.signature_verifies(wire::config_signed_bytes(parts.value().record), parts.value().signature)) {
    return Status(Code::kBadRequest,
                  "config certificate failed its signature check: forged, altered, or signed by another lock group");
  }
  return wire::decode_replica_set(parts.value().record);
}

Result<wire::ReplicaSet> read_config_certificate(const std::optional<SequencerVerifier>& verifier,
                                                 std::string_view text) {
  if (verifier) return verify_config_certificate(*verifier, text);
  auto parts = wire::split_config_certificate(text);
  if (!parts.is_ok()) return parts.status();
  return wire::decode_replica_set(parts.value().record);
}

}  // namespace palisade
