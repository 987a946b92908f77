// What `palisade cluster add` and `cluster remove` change in a local
// cluster's directory (LocalCluster's layout): the cluster file's [[lockd]]
// entries and identities, and the daemons' key files in DIR/keys.
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
