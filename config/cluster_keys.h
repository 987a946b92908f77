// The CurveZMQ setup a cluster file implies (docs/security.md): who may
// connect (every identity's keys), each daemon's public key (the first key of
// the identity it serves as), and the checks on the key file a daemon or a
// client is given. A cluster file without identities implies plaintext.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "config/cluster_config.h"
#include "palisade/credentials.h"
#include "transport/curve_keys.h"
#include "transport/zap_handler.h"
#include "wire/replica_set.h"

namespace palisade {

// Every listed public key -> the identity it belongs to.
transport::AllowList allowed_keys(const ClusterConfig& config);
// Every daemon's endpoint -> the public key it serves with.
std::map<std::string, std::string> server_keys(const ClusterConfig& config);

// The file's [[replica]] list as the replica set it stands for before the
// lock group records one: version 0, ids 1..N in file order, each replica's
// CURVE key, R and W as the file says or majorities. No replicas: empty.
wire::ReplicaSet file_replica_set(const ClusterConfig& config);

// The daemon at `endpoint` on a secure cluster: its key file, and who may
// connect to it.
struct DaemonKeys {
  transport::KeyFile key;
  transport::AllowList allowed;
  // What each identity may do (the [[role]] tables and identities' roles).
  Permissions permissions;
};

// For the daemon at `endpoint`, given `key_path` (empty: none given): nullopt
// on a cluster without identities (and no key given); else the key file, once
// it is checked to be the one the cluster file names for this daemon. Every
// error says what to do.
Result<std::optional<DaemonKeys>> load_daemon_keys(const ClusterConfig& config, const std::string& endpoint,
                                                   const std::string& key_path);

// Whether a daemon may start on `config` given its --insecure flag: a cluster
// file without identities (plaintext links) needs the flag, and one with
// identities refuses it, since its links are CurveZMQ whatever the flag says.
Status check_insecure_flag(const ClusterConfig& config, bool insecure);

// A running daemon's keys, its cluster file read again (a SIGHUP): the new
// allow-list and permissions. An error, which leaves the daemon with what it
// had, when the file cannot be read or checked, when its own key no longer
// fits, or when the file lists no identities now (a daemon cannot turn
// plaintext while it runs).
Result<DaemonKeys> reload_daemon_keys(const std::string& cluster_file, const std::string& endpoint,
                                      const std::string& key_path);

// A client's credentials on a secure cluster from its key file: nullopt on a
// cluster without identities (and no key given). BadRequest when the cluster
// needs a key and none was given, or the key file's identity or public key is
// not one the cluster file lists.
Result<std::optional<Credentials>> load_client_credentials(const ClusterConfig& config, const std::string& key_path);

}  // namespace palisade
