// ClusterFile: what a client takes from a cluster file, the TOML file that the
// daemons and the `palisade` command read too (docs/install.md, "A client from
// a cluster file"):
// where the lock group and the replicas listen, the quorums, the cluster id,
// and, when the file lists identities, the credentials a key file proves.
//
//   auto cluster = palisade::ClusterFile::load("/etc/palisade/cluster.toml",
//                                              "/etc/palisade/worker.key");
//   auto store = palisade::QuorumStore::open(cluster.value().store_options());
//   auto locks = palisade::LockClient::connect(cluster.value().lock_client_options());
//
// It is in palisade::config (libpalisade-config), which reads TOML with
// toml++ and checks signatures with libpalisade-sequencer; programs that build their options by hand link palisade::client alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "palisade/credentials.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "palisade/status.h"

namespace palisade {

struct ClusterFile {
  std::string path;
  std::string cluster_id;  // 32 hex digits; empty when the file names none
  std::vector<std::string> lock_group;  // the palisade-lockd endpoints
  // The palisade-replica endpoints; empty when the file names only the lock
  // group, whose record then gives them (QuorumStoreOptions::replicas).
  std::vector<std::string> replicas;
  int read_quorum = 0;  // R and W as the file says, else majorities; 0 with no replicas
  int write_quorum = 0;
  std::chrono::milliseconds grace{0};  // how long a session may stay in jeopardy
  uint64_t max_clock_drift_ppm = 0;
  std::string group;  // the lock group's id, which its sequencers and config certificates name
  std::string sequencer_public_key;  // "psk1...": checks sequencers; empty when none
  std::optional<Credentials> credentials;  // nullopt: plaintext links

  // Reads and checks the file. A file that lists identities needs `key_path`,
  // a key file of one of them (palisade keygen); one that lists none refuses
  // a key. StorageError when the file cannot be read; BadRequest, saying what
  // is wrong and where, when it is not a valid cluster file.
  static Result<ClusterFile> load(const std::string& path, const std::string& key_path = {});

  // Options for this cluster; the other fields keep their defaults. The
  // store's config_check is the group's sequencer_public_key, when the file
  // gives one.
  QuorumStoreOptions store_options() const;
  LockClientOptions lock_client_options() const;
};

}  // namespace palisade
