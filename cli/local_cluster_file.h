// What `palisade cluster add`, `remove` and `replace` change in a local
// cluster's directory (LocalCluster's layout): the cluster file's [[lockd]]
// and [[replica]] entries and identities, and the daemons' key files in
// DIR/keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/cluster_config.h"
#include "palisade/status.h"

namespace palisade::cli {

// "lockd-ID" -> ID (1..255); nullopt for any other name.
std::optional<uint32_t> lockd_id_of(std::string_view name);

// The id a new lockd node gets: one above every id the cluster file lists and
// every lockd-ID among `names` (the directory's entries: a removed node's data
// directory and log stay, and its id is never given again). nullopt past 255.
std::optional<uint32_t> next_lockd_id(const ClusterConfig& config, const std::vector<std::string>& names);

// The first of `candidates` that no daemon of the cluster file uses (a port
// that is free now may be a stopped daemon's).
std::optional<std::string> unused_endpoint(const ClusterConfig& config, const std::vector<std::string>& candidates);

// "replica-N" -> N; nullopt for any other name.
std::optional<uint32_t> replica_number_of(std::string_view name);
// The name a new replica gets: replica-N, N one above every N that the file's
// identities and replicas (local_replica_name) and `names` (the directory's
// entries) use, so that a replaced replica's name, data directory and log are
// never another's.
std::string next_replica_name(const ClusterConfig& config, const std::vector<std::string>& names);
// Adds a spare replica at `endpoint` that serves as `identity`.
void add_spare_replica(ClusterConfig& config, const std::string& endpoint, const Identity& identity);
// Takes the replica or spare at `endpoint` out, with the identity it serves
// as; false when the file has none there.
bool remove_replica(ClusterConfig& config, const std::string& endpoint);
// The spare at `joining` takes the place of the replica at `leaving` in the
// set's list; `leaving`'s entry and identity go. False when either is not there.
bool swap_replica(ClusterConfig& config, const std::string& leaving, const std::string& joining);
// The spare at `endpoint` joins the set's list, last. False when it is no spare.
bool admit_spare_replica(ClusterConfig& config, const std::string& endpoint);

// Adds lockd `node`; on a secure cluster, with the identity it serves as.
void add_lockd_node(ClusterConfig& config, const LockdNode& node, const std::optional<Identity>& identity);
// Takes lockd node `id` out, with the identity it serves as; false when the
// file has no such node.
bool remove_lockd_node(ClusterConfig& config, uint32_t id);

// The cluster file's text for `config`, read from config.path: its key files
// named relative to the file when they are beside it, as `cluster up` writes
// them (the directory can be moved).
std::string cluster_file_text(const ClusterConfig& config);

// A new key pair for daemon NAME in DIR/keys/NAME.key (mode 0600); the
// identity to list for it, with its role.
Result<Identity> write_daemon_key(const std::string& dir, const std::string& name, const std::string& role);

}  // namespace palisade::cli
