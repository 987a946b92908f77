#include "tests/sim/replica_record.h"

#include "auth/cluster_key.h"
#include "auth/config_certificate.h"

namespace palisade::sim {

// A fixed key, so that a seed signs the same bytes.
SignedRecord::SignedRecord() : signer_(ClusterKey::from_hex(std::string(64, '5')).value(), "sim") {}

void SignedRecord::set(uint64_t replaces, const wire::ReplicaSet& next, Done done) {
  if (replaces != version_) {
    return done(Status(Code::kStale, "the replica set is at version " + std::to_string(version_)));
  }
  wire::ReplicaSet recorded = next;
  recorded.version = ++version_;
  certificate_ = sign_config_certificate(signer_, recorded);
  done(certificate_);
}

uint64_t version_of(const std::string& certificate) {
  if (certificate.empty()) return 0;
  auto set = read_config_certificate(std::nullopt, certificate);
  return set.is_ok() ? set.value().version : 0;
}

}  // namespace palisade::sim
