// The storage simulation: a real replica::LmdbStore (LMDB and its journal) on
// the simulated disk (tests/support/sim_disk.h), in a fresh directory under
// $TMPDIR (default /tmp), removed after the run. A seeded workload commits
// batches of fence-floor changes (batch b raises the floors of a few locks to
// b, with a sequencer of random length) while the disk fails syncs, fills up,
// tears writes and loses power at any write or sync, between a journal append
// and its sync or inside a checkpoint included; after each crash the disk is
// revived (a random subset of unsynced writes kept) and the store reopened.
// Small journal and checkpoint sizes make checkpoints frequent.
//
// The checker, after every reopen, on every lock:
// - "acknowledged batch lost": a batch whose commit returned ok before the
//   crash is not there (a later batch may have overwritten its floor);
// - "never written": a floor no batch wrote to that lock;
// - "batch partly present": a batch that failed or was cut short by the
//   crash is there on some of its locks and not on others;
// - "store does not open": reopening on the revived disk fails.
// And while the store runs: a batch whose commit failed is not served
// ("failed batch served"), and reads give what was acknowledged ("read
// differs"). Reads that fail (a store that broke itself after a failure it
// could not undo) restart the store, which must then reopen.
//
// Deterministic per seed: the same seed gives the same trace hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace palisade::sim {

struct StorageSimOptions {
  uint64_t seed = 1;
  int batches = 40;
  int locks = 12;
  // Chances per batch, drawn before it.
  double crash = 0.04;  // power loss within the next few writes and syncs
  double fail_sync = 0.04;  // the next sync fails
  double full_disk = 0.03;  // the disk fills up for a few batches
  double torn_write = 0.04;  // the next write is torn
  double clean_restart = 0.01;  // the store is closed (a checkpoint) and reopened
  size_t map_bytes = size_t{4} << 20;
  size_t journal_bytes = size_t{16} << 10;
  size_t checkpoint_bytes = size_t{4} << 10;
  // The lock group's acceptor state (lockgroup::LmdbPaxosStorage) in place of
  // the replica's store: its checker compares load() with the model.
  bool paxos = false;
  // Negative control: the disk lies about the journal's fsync (reports success,
  // makes nothing durable): "acknowledged batch lost".
  bool broken_lying_journal_sync = false;
  bool keep_trace = false;
};

struct StorageSimResult {
  std::vector<std::string> violations;
  uint64_t trace_hash = 0;
  uint64_t events = 0;
  uint64_t commits_ok = 0;
  uint64_t commits_failed = 0;
  uint64_t crashes = 0;
  uint64_t reopens = 0;
  uint64_t broken_restarts = 0;  // restarts after reads failed
  uint64_t syncs_failed = 0;
  uint64_t writes_refused = 0;
  uint64_t writes_torn = 0;
  uint64_t writes_lost = 0;  // unsynced writes crashes undid, whole or in part
  uint64_t in_doubt_present = 0;  // failed or cut-short batches found whole after a restart
  std::string trace;
};

StorageSimResult run_storage_sim(const StorageSimOptions& options);

}  // namespace palisade::sim
