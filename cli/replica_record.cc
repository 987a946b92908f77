#include "cli/replica_record.h"

namespace palisade::cli {

Result<ClusterAccess> with_recorded_replicas(ClusterAccess access, std::chrono::milliseconds per_call) {
  auto record = read_replica_record(access.config, access.credentials, per_call);
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
