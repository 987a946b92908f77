#include "config/replica_record.h"

#include <optional>

#include <zmq.hpp>

#include "auth/config_certificate.h"
#include "transport/lockd_call.h"
#include "config/cluster_keys.h"

namespace palisade {
namespace {

Result<ReplicaRecord> checked(const ClusterConfig& config, const std::string& certificate) {
  std::optional<SequencerVerifier> verifier;
  if (!config.sequencer_public_key.empty()) {
    auto made = SequencerVerifier::create(config.group, config.sequencer_public_key);
    if (!made.is_ok()) return made.status();
    verifier = std::move(made).value();
  }
  auto set = read_config_certificate(verifier, certificate);
  if (!set.is_ok()) {
    return Status(Code::kBadRequest,
                  "the lock group's replica set certificate does not check out" +
                      std::string(verifier ? " with " + config.path + "'s sequencer_public_key" : "") + ": " +
                      set.status().message());
  }
  return ReplicaRecord{.set = std::move(set).value(), .certificate = certificate, .checked = verifier.has_value()};
}

}  // namespace

Result<ReplicaRecord> read_replica_record(const ClusterConfig& config, const std::optional<Credentials>& credentials,
                                          std::chrono::milliseconds per_call) {
  zmq::context_t ctx(1);
  std::vector<std::string> nodes;
  for (const LockdNode& node : config.lockd) nodes.push_back(node.endpoint);
  std::optional<ReplicaRecord> newest;
  for (const auto& reply : transport::call_lockd_endpoints(ctx, nodes, wire::GetReplicasRequest{}, per_call,
                                                           config.cluster_id, credentials)) {
    if (!reply || !reply->status.is_ok()) continue;
    // A node that has not applied the newest record yet serves an older one.
    if (reply->config.empty()) {
      if (!newest) newest = ReplicaRecord{.set = file_replica_set(config)};
      continue;
    }
    auto record = checked(config, reply->config);
    if (!record.is_ok()) return record.status();
    // At version 0, a node's signed copy of its file's list, unless the
    // caller's file has a list of its own.
    const uint64_t version = record.value().set.version;
    if (!newest || version > newest->set.version || (version == 0 && newest->set.replicas.empty())) {
      newest = std::move(record).value();
    }
  }
  if (!newest) return Status(Code::kUnavailable, "no lock group node answered get_replicas");
  return *std::move(newest);
}

}  // namespace palisade
