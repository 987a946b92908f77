#include "cli/replica_record.h"

#include <optional>

#include <zmq.hpp>

#include "auth/config_certificate.h"
#include "transport/lockd_call.h"
#include "config/cluster_keys.h"

namespace palisade::cli {
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

Result<ReplicaRecord> read_replica_record(const ClusterAccess& access, std::chrono::milliseconds per_call) {
  zmq::context_t ctx(1);
  std::vector<std::string> nodes;
  for (const LockdNode& node : access.config.lockd) nodes.push_back(node.endpoint);
  std::optional<ReplicaRecord> newest;
  for (const auto& reply : transport::call_lockd_endpoints(ctx, nodes, wire::GetReplicasRequest{}, per_call,
                                                           access.config.cluster_id, access.credentials)) {
    if (!reply || !reply->status.is_ok()) continue;
    // A node that has not applied the newest record yet serves an older one.
    if (reply->config.empty()) {
      if (!newest) newest = ReplicaRecord{.set = file_replica_set(access.config)};
      continue;
    }
    auto record = checked(access.config, reply->config);
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

Result<ClusterAccess> with_recorded_replicas(ClusterAccess access, std::chrono::milliseconds per_call) {
  auto record = read_replica_record(access, per_call);
  if (!record.is_ok()) {
    if (!access.config.replicas.empty() && record.status().code() == Code::kUnavailable) return access;
    if (access.config.replicas.empty()) {
      return Status(record.status().code(),
                    access.config.path + " lists no [[replica]], and " + record.status().message());
    }
    return record.status();
  }
  const wire::ReplicaSet& set = record.value().set;
  if (set.version == 0 && !access.config.replicas.empty()) return access;  // the file's list stands
  if (set.replicas.empty()) {
    return Status(Code::kUnavailable, access.config.path +
                                          " lists no [[replica]], and the lock group records no replica set yet, "
                                          "nor do its nodes' cluster files list one");
  }
  ClusterConfig& config = access.config;
  config.replicas.clear();
  for (const wire::ReplicaInfo& r : set.replicas) {
    config.replicas.push_back(r.address);
    if (access.credentials && !r.key.empty()) access.credentials->server_keys[r.address] = r.key;
  }
  config.read_quorum = static_cast<int>(set.read_quorum);
  config.write_quorum = static_cast<int>(set.write_quorum);
  return access;
}

}  // namespace palisade::cli
