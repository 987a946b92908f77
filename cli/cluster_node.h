// What the commands that change a running local cluster's nodes share
// (`cluster add`, `cluster remove`, `cluster replace`): their flags, how they
// find the cluster in DIR and reach it, and their warnings.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "antientropy/replica_change.h"
#include "cli/cluster_access.h"
#include "cli/command.h"
#include "cli/daemon_records.h"

namespace palisade::cli {

// How long the daemons may take to read the cluster file again (SIGHUP).
constexpr std::chrono::seconds kReloadTimeout{5};

struct NodeFlags {
  std::string dir;
  std::string kind;  // add: lockd or replica
  std::string name;  // remove: lockd-ID or replica-N; replace: replica-N
  bool purge = false;  // remove, replace: the old node's data directory and log too
  std::chrono::milliseconds timeout{30000};  // for the membership change
  std::string cluster_file() const { return dir + "/cluster.toml"; }
  std::string records_path() const { return dir + "/daemons"; }
  // How the commands this one suggests name the cluster.
  std::string dir_flag() const { return dir == default_cluster_dir() ? "" : " --dir " + dir; }
  std::string cluster_flag() const { return dir == default_cluster_dir() ? "" : " --cluster " + cluster_file(); }
};

// `cluster replace replica-N`, `cluster add replica`, `cluster remove
// replica-N`: the local cluster's replica set changed while it serves
// (cli/cluster_replica_command.cc); the exit status.
int change_local_replicas(ReplicaChangeKind kind, const NodeFlags& flags, const CommonOptions& common);

// The directory absolute, as `cluster up` names it.
NodeFlags absolute(NodeFlags flags);

// DIR/cluster.toml as it is now, and the key to reach the daemons with:
// --key, $PALISADE_KEY, else DIR/keys/admin.key, as for `palisade member`.
Result<ClusterAccess> access_to(const NodeFlags& flags, const CommonOptions& common);

// The cluster in DIR as these commands find it: how to reach it, and its
// recorded daemons.
struct Found {
  ClusterAccess access;
  std::vector<DaemonRecord> records;
};
// nullopt, with the exit status in `exit_code`, once it said why there is none.
std::optional<Found> find_cluster(const NodeFlags& flags, const CommonOptions& common, std::string_view what,
                                  int& exit_code);

// Says on stderr which daemons (reload_daemons' answer) have not read the file again.
void warn_late(std::string_view what, const std::vector<std::string>& late);

}  // namespace palisade::cli
