// Anti-entropy: brings palisade-replica daemons to the same contents
// (docs/anti-entropy.md). Replicas compare Merkle trees of their keys and fence
// floors, descend only into the ranges whose digests differ, and copy only the
// versions that differ, by the fence rules: committed versions (and pending ones
// that W replicas hold) are copied as committed with their original timestamps;
// a pending version that can no longer reach W copies is purged, never spread;
// fence floors are raised to the highest any replica holds; a corrupt record is
// replaced from a healthy replica; a tombstone is dropped only once every
// replica of the cluster holds it committed and gc_grace has passed.
//
// Thread safety: run_anti_entropy may run on many threads at once; each call
// has its own sockets.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "palisade/credentials.h"
#include "palisade/status.h"

namespace palisade {

struct AntiEntropyReport {
  // The key space is cut into 256 ranges; a range is done when every
  // difference in it was handled.
  uint64_t ranges_total = 256;
  uint64_t ranges_done = 0;
  uint64_t keys_compared = 0;      // entries (keys and floors) listed from differing leaves
  uint64_t keys_differing = 0;     // of those, the ones not alike on every replica
  uint64_t versions_sent = 0;      // committed copies written to replicas that lacked them
  uint64_t versions_committed = 0; // pending copies committed (the version had W copies, or a committed one)
  uint64_t floors_raised = 0;      // fences sent to replicas with a lower floor
  uint64_t purged = 0;             // pending versions that can never reach W copies, dropped
  uint64_t tombstones_dropped = 0; // keys forgotten by tombstone collection
  uint64_t corrupt_replaced = 0;   // corrupt records replaced from healthy replicas
  // Pending versions left alone: a replica not heard from could hold them.
  // In a paused fill, also keys whose replicas not heard from
  // (down, or with a corrupt record of it) could hold a whole write quorum.
  uint64_t undecided = 0;
  uint64_t completed = 0;  // paused: of those, ones completed (see AntiEntropyOptions::paused)
  uint64_t refused = 0;            // repairs a replica refused (first_refusal says why)
  std::string first_refusal;
  uint64_t target_refused = 0;  // of those, the ones a target refused
  std::string first_undecided;  // the key of the first undecided version
  // Traffic, both directions, counted by the driver: everything, and the part
  // spent on tree digests and leaf listings.
  uint64_t messages = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t tree_bytes = 0;
  // The replicas compared were alike from the start: no difference found.
  bool equal = false;
  bool dry_run = false;
  std::vector<std::string> unreachable;  // endpoints that did not answer in time
  std::vector<std::string> refusing;  // endpoints that refused a repair

  uint64_t bytes_moved() const { return bytes_sent + bytes_received; }
  // Something differed (and, unless dry_run, was repaired).
  bool differed() const { return !equal; }
};

struct AntiEntropyOptions {
  std::vector<std::string> replicas;  // ZeroMQ endpoints to compare: two, or all N
  // The cluster's id (the cluster file's cluster_id, 32 hex digits), named by
  // every request: a replica of another cluster answers wrong_cluster, and the
  // run ends with WrongCluster. Empty: requests name none.
  std::string cluster_id;
  // N, for the rules that count copies over the whole cluster (0: the number of
  // `replicas`). Comparing fewer than N leaves the others as "not heard from".
  int cluster_size = 0;
  int write_quorum = 0;  // W; 0: a majority of cluster_size
  // The cluster key file and the lock group's id (the cluster file's key_file
  // and group). With them the run is a repairer's: replicas that check
  // sequencers accept its copies and commits of versions under a lock, which
  // they otherwise take only on proof of W acknowledgements. Without them,
  // such repairs are refused (counted in `refused`).
  std::string key_file;
  std::string group;
  // Tombstones are dropped only when set, and once older than this (by their
  // timestamp's physical clock). It must exceed the longest time a write can
  // stay in flight (client timeouts and retries), or an old write arriving
  // after the drop could bring the key back.
  std::optional<std::chrono::milliseconds> gc_grace;
  bool dry_run = false;  // compare and report, change nothing
  // A replica that does not answer a request within this is unreachable for the
  // rest of the run.
  std::chrono::milliseconds timeout{5000};
  // Called now and then from the calling thread, and once at the end.
  std::function<void(const AntiEntropyReport&)> progress;
  // Unset: plaintext links. Set: CURVE to every replica (a secure cluster).
  std::optional<Credentials> credentials;
  // The replica set version every request names, and its config certificate
  // (docs/design.md "The replica set"): `replicas`, `cluster_size` and
  // `write_quorum` are then that set's. 0 and empty: the cluster file's list.
  uint64_t config = 0;
  std::string config_certificate{};
  // Told of a newer set's certificate when a replica keeps one (it answered
  // stale_config): the run ends StaleConfig, after giving that certificate
  // to every replica it compared; run again over that set.
  std::function<void(const std::string& certificate)> newer_config;
  // Replicas to fill (a replacement, docs/design.md "The replica set"): they
  // get the fence floors and every settled version of the replicas compared,
  // but count for nothing (not in N, W or any decision), and are never given a
  // certificate. Their requests name `target_config`, the version they keep
  // (0 for a new replica). A copy a target refuses or never answers counts in
  // `target_refused`; one that does not answer is also `unreachable`.
  std::vector<std::string> targets{};
  uint64_t target_config = 0;
  // The replicas compared are paused (they store no more writes): a pending
  // version fewer than W of them hold is purged unless the replicas not heard
  // from could make up W. Then it may have been acknowledged, and is
  // completed (copied to every replica heard from and target, pending: a
  // holder that leaves takes its copy along) when its writer cannot have
  // been told it failed for good (`fenced`, `stale`: N - W + 1 final
  // refusals, counting every replica not heard from and every one that now
  // refuses it by its floor or a newer committed version); otherwise it is
  // undecided (first_undecided names its key).
  bool paused = false;
};

// Compares and repairs. Unavailable when fewer than two replicas answer;
// BadRequest for bad options; WrongCluster when a replica is of another
// cluster (cluster_id); StaleConfig when a replica keeps a newer replica set
// (see newer_config), UnknownConfig when one keeps an older one (it is given
// config_certificate: the next run gets through). Otherwise ok, with what was found and done
// (unreachable replicas are listed in the report).
Result<AntiEntropyReport> run_anti_entropy(const AntiEntropyOptions& options);

}  // namespace palisade
