// The cluster file (TOML): the lock group's nodes, the replicas, quorum sizes and
// timing. Daemons and clients read the same file; only daemons read the key file
// it names. `palisade cluster up` writes one.
//
//   cluster_id = "6f1c...e2"        # optional: 32 hex digits, made when the cluster
//                                  # was created; clients refuse daemons of another id
//   group = "local-1"              # goes into every sequencer
//   key_file = "cluster.key"       # 64 hex digits; relative to this file
//   sequencer_public_key = "psk1..." # the lock group's, made from key_file's key:
//                                  # replicas and services check sequencers with it
//   replica_key_file = "replica.key"  # the replicas' own secret (receipts, repair
//                                  # seals): with it, replicas never read key_file
//   [[role]]                       # optional: once one exists, what no role allows is denied
//   name = "jobs"
//   locks = ["jobs/*"]             # globs: may acquire, exclusive or shared
//   shared_locks = ["config"]      # may acquire shared only
//   read = ["jobs/*"]              # keys it may get, put, delete
//   write = ["jobs/*"]
//   delete = ["jobs/*"]
//   admin = false                  # true: everything (repair, the whole status)
//   [[identity]]                   # optional: who may connect (CurveZMQ)
//   name = "lockd-1"
//   keys = ["<Z85 public key>"]    # 1 or 2 (a key being rotated in)
//   roles = ["lockd"]              # optional: lockd, replica, admin, or a [[role]]
//   [[lockd]]
//   id = 1
//   endpoint = "tcp://127.0.0.1:7100"  # tcp://HOST:PORT or ipc://PATH, checked
//   identity = "lockd-1"           # with [[identity]] entries: the one it serves as
//   [[replica]]                    # none: a client's or replica's file naming
//                                  # only the lock group, which gives the set
//   endpoint = "tcp://127.0.0.1:7200"
//   spare = true                   # optional: not in the set the file starts
//                                  # with; one a replacement can bring in
//   [quorum]                       # optional; needs [[replica]] entries
//   read = 2
//   write = 2
//   [timing]                       # optional, milliseconds
//   session_lease_ms = 12000
//   master_lease_ms = 4000
//   heartbeat_ms = 500
//   election_timeout_ms = 1000
//   max_clock_drift_ppm = 1000
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/cluster_id.h"
#include "base/permissions.h"
#include "palisade/status.h"

namespace palisade {

struct LockdNode {
  uint32_t id = 0;  // 1..255, unique
  std::string endpoint;
  friend bool operator==(const LockdNode&, const LockdNode&) = default;
};

// Someone who may connect once the cluster is secure: a daemon, a service, a
// person. The first key is the one a daemon serves with; a second is one
// being rotated in or out.
struct Identity {
  std::string name;  // base/identity.h's rules
  std::vector<std::string> keys;  // CURVE public keys, Z85; 1 or 2, each in one identity only
  std::vector<std::string> roles;  // of kBuiltInRoles, or [[role]] names
  friend bool operator==(const Identity&, const Identity&) = default;
  bool has_role(std::string_view role) const;
};

struct ClusterTiming {
  uint64_t session_lease_ms = 12000;   // a session lives this long after its last KeepAlive
  uint64_t client_grace_ms = 45000;    // a client in jeopardy waits this long for a new master
  uint64_t master_lease_ms = 4000;     // acceptors promise no other master for this long
  uint64_t heartbeat_ms = 500;         // master heartbeats (lease renewal)
  uint64_t election_timeout_ms = 1000; // silence from the master before a node campaigns
  uint64_t max_clock_drift_ppm = 1000; // bound on clock rate error between any two nodes
  friend bool operator==(const ClusterTiming&, const ClusterTiming&) = default;
};

struct ClusterConfig {
  std::string path;  // where it was read from
  // The cluster's identity (base/cluster_id.h): 16 bytes, or empty for a
  // file without one (written before cluster ids; then nothing is checked).
  std::string cluster_id;
  std::string group;
  std::string key_file;  // absolute, resolved against the cluster file's directory
  std::string sequencer_public_key;  // "psk1." + base64url, or empty
  std::string replica_key_file;  // absolute like key_file, or empty; needs sequencer_public_key
  std::vector<LockdNode> lockd;
  std::vector<std::string> replicas;  // the set the cluster starts with; empty: the lock group's (not for lockd)
  // [[replica]] entries with spare = true: endpoints (and identities) a
  // replacement may bring into the set (`palisade member replace --replica`).
  std::vector<std::string> spare_replicas;
  int read_quorum = 0;   // 0: a majority of the replicas
  int write_quorum = 0;  // 0: a majority of the replicas
  ClusterTiming timing;
  // Empty: the cluster runs without CurveZMQ. Else every daemon names the
  // identity it serves as (daemon_identity, by endpoint), which has its role.
  std::vector<Identity> identities;
  std::map<std::string, std::string> daemon_identity;  // endpoint -> identity name
  std::vector<Role> roles;  // [[role]] tables; none: nothing beyond the built-in roles is checked
  friend bool operator==(const ClusterConfig&, const ClusterConfig&) = default;

  const LockdNode* lockd_node(uint32_t id) const;
  const Identity* identity(std::string_view name) const;
  const Role* role(std::string_view name) const;  // a [[role]] table's
  // What each identity may do, from `roles` and the identities' roles.
  Permissions permissions() const;
  // The key replicas and repairers make receipts and seals with:
  // replica_key_file, else (an older file) the cluster key itself.
  const std::string& replicas_key_file() const { return replica_key_file.empty() ? key_file : replica_key_file; }
};

// BadRequest with the file, line and problem when it is not a valid cluster file
// (unknown keys too); StorageError when it cannot be read.
Result<ClusterConfig> load_cluster_file(const std::string& path);
Result<ClusterConfig> parse_cluster_config(std::string_view toml, const std::string& path);
// The TOML text that parse_cluster_config reads back as `config` (key_file as written).
std::string format_cluster_config(const ClusterConfig& config);

}  // namespace palisade
