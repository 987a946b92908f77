// A cluster's identity (docs/protocol.md, "Cluster identity"): 16 random bytes
// made when the cluster is created, written in the cluster file as 32 hex
// digits (`cluster_id`), carried by every client request ("cluster") and
// compared by the daemon, so that a client never talks to a daemon of another
// cluster that happens to listen where its cluster file points.
//
// An id is held as its 16 raw bytes in a std::string; empty means none (a
// cluster file from before cluster ids: nothing is checked).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "palisade/status.h"

namespace palisade {

constexpr size_t kClusterIdBytes = 16;

// The id that 32 hex digits (either case) spell; nullopt for any other text.
std::optional<std::string> cluster_id_from_hex(std::string_view hex);
// 32 lowercase hex digits; "none" for the empty id.
std::string cluster_id_hex(std::string_view id);
// A new id: 16 bytes of getrandom(2) (base links no libsodium).
std::string new_cluster_id();

// Whether a daemon of cluster `own` may answer a request for cluster
// `expected`: ok when the request names none or the same id; else
// WrongCluster naming both ids (a daemon without an id answers no request
// that names one).
Status check_cluster_id(std::string_view own, std::string_view expected);

}  // namespace palisade
