#include "client/replica_view.h"

#include "client/coordinator.h"
#include "wire/config_certificate.h"
#include "wire/replica_set.h"

namespace palisade::client {

Result<ReplicaView> next_view(const ReplicaView& current, std::string_view certificate, const SignatureCheck& check) {
  auto parts = wire::split_config_certificate(certificate);
  if (!parts.is_ok()) return parts.status();
  // The signature is checked before anything in the record is trusted.
  if (!check && current.credentials) {
    return Status(Code::kBadRequest, "a replica keeps a newer replica set, and this store has no key to check its "
                                     "certificate with (the cluster file's sequencer_public_key)");
  }
  if (check && !check(wire::config_signed_bytes(parts.value().record), parts.value().signature)) {
    return Status(Code::kBadRequest,
                  "config certificate failed its signature check: forged, altered, or signed by another lock group");
  }
  auto set = wire::decode_replica_set(parts.value().record);
  if (!set.is_ok()) return set.status();
  // A view with no replicas (a store whose options list none) takes the
  // file's list a lock group node signs too, at version 0.
  if (set.value().version < current.version || (set.value().version == current.version && !current.endpoints.empty())) {
    return Status(Code::kStale, "replica set version " + std::to_string(set.value().version) +
                                    " is not newer than version " + std::to_string(current.version));
  }
  ReplicaView next{.version = set.value().version,
                   .certificate = std::string(certificate),
                   .endpoints = {},
                   .read_quorum = static_cast<int>(set.value().read_quorum),
                   .write_quorum = static_cast<int>(set.value().write_quorum),
                   .credentials = current.credentials,
                   .paused = set.value().phase == wire::ReplicaPhase::kPaused};
  for (const wire::ReplicaInfo& r : set.value().replicas) {
    next.endpoints.push_back(r.address);
    if (!next.credentials) continue;
    // The record's key, else the one the store was given for that address.
    if (!r.key.empty()) next.credentials->server_keys[r.address] = r.key;
    if (!next.credentials->server_keys.contains(r.address)) {
      return Status(Code::kBadRequest, "replica set version " + std::to_string(next.version) + " gives replica " +
                                           r.address + " no CURVE key, and this store knows none");
    }
  }
  CoordinatorOptions quorums{.n = static_cast<int>(next.endpoints.size()),
                             .r = next.read_quorum,
                             .w = next.write_quorum};
  if (Status s = validate(quorums); !s.is_ok()) {
    return Status(Code::kBadRequest, "replica set version " + std::to_string(next.version) + ": " + s.message());
  }
  return next;
}

ReplicaView newest_view(ReplicaView current, const std::vector<std::string>& certificates,
                        const SignatureCheck& check) {
  for (const std::string& c : certificates) {
    auto next = next_view(current, c, check);
    if (next.is_ok()) current = std::move(next).value();
  }
  return current;
}

WriteResult answer_of_resent_write(WriteResult last) {
  const Code code = last.status.code();
  if (code != Code::kFenced && code != Code::kStale) return last;
  last.status = Status(Code::kUnavailable, "the write moved to a newer replica set, which refused it (" +
                                               last.status.to_string() +
                                               "); an earlier attempt, on the set before, may still take effect");
  return last;
}

}  // namespace palisade::client
