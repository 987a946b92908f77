// The simulated replicas shared by the simulations: replica cores on simulated
// disks, each run by the daemon's own driver (replica/replica_driver.h), that
// commit a little after a batch arrives (a crash before then loses it), crash
// and restart, and suffer bit flips.
//
// The disk is a MemoryStore that survives crashes, or (Options::lmdb) the
// daemon's own LmdbStore, with its journal, in a directory per replica on the
// simulated disk (tests/support/sim_disk.h). Then a crash is the power loss of
// that replica's machine: its store is torn down without a clean close, its
// unsynced writes are kept, cut or lost, and a restart reopens the store from
// what the disk kept. A crash may also come inside a commit
// (crash_in_next_commit): after some of the commit's writes and syncs, before
// the batch is answered. No bit flips then (corrupt() finds nothing).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/physical_clock.h"
#include "base/temp_dir.h"
#include "replica/handler.h"
#include "replica/memory_store.h"
#include "replica/replica_driver.h"
#include "tests/sim/world.h"
#include "tests/support/sim_disk.h"

namespace palisade::sim {

constexpr uint64_t kEpochMs = 1'700'000'000'000;

// A node's wall clock: simulated time plus a fixed offset.
class SkewedClock final : public PhysicalClock {
 public:
  SkewedClock(const World& world, int64_t offset_ms) : world_(world), offset_ms_(offset_ms) {}
  uint64_t now_ms() override { return kEpochMs + world_.now_ms() + offset_ms_; }

 private:
  const World& world_;
  int64_t offset_ms_;
};

std::string describe(const wire::ReplicaRequest& r);
std::string describe(const wire::ReplicaReply& r);

class ReplicaSet {
 public:
  struct Options {
    int replicas = 3;
    uint64_t max_clock_offset_ms = 200;
    // Negative control: replicas that ignore fence floors.
    bool skip_fence_floor = false;
    // Negative control: a write does not raise its lock's fence floor (a fence
    // still does).
    bool writes_keep_floor = false;
    std::optional<replica::ReplicaAuth> auth;  // replica_id and spare are set per replica
    int spares_from = -1;  // replicas from this one on are spares (ReplicaAuth::spare); -1: none
    // More negative controls (the quorum simulation's; docs in quorum_sim.h).
    // Those marked "driver" are the ReplicaDriver's broken_* options, bugs of
    // the daemon's own turn:
    // replicas answer reads with their pending versions marked committed, so
    // readers return the newest pending version without counting its copies
    // (driver: broken_pending_as_committed);
    bool pending_as_committed = false;
    // replicas leave pending versions out of read replies, so readers take an
    // acknowledged write whose commits are not through as absent (driver:
    // broken_hide_pending);
    bool hide_pending = false;
    // replica 0 acknowledges writes (not repair copies) without storing them
    // (driver: broken_ack_writes_without_storing, on replica 0 only);
    bool first_acks_without_storing = false;
    // replicas do not check their records' checksums: a bit flip changes the
    // value they serve instead of making the record corrupt (the sim's host
    // amends read replies, ReplicaHost::amend: the disk's fault, not the turn's).
    bool skip_checksum = false;
    // replicas leave out of their refusals what they dropped, so a writer
    // counts the refusal of a duplicate of a dropped version as final (driver:
    // broken_forget_dropped).
    bool forget_dropped = false;
    // replicas trust every client as a repairer (the lock simulation's; the
    // old behaviour): every request decoded is marked from_repairer, as if its
    // frame carried a repairer's seal, so any client's committed write or
    // commit makes a fenced version committed (driver: broken_trust_everyone).
    bool trust_everyone = false;
    // Replicas keep their data in LmdbStores on the simulated disk (above).
    // Not with skip_fence_floor, writes_keep_floor or skip_checksum, which
    // break memory stores.
    bool lmdb = false;
    // lmdb: the disk lies about the journal's syncs (SimDisk::lie_about_syncs),
    // so a crash may lose batches the replica acknowledged.
    bool lying_journal_sync = false;
    // Called when a replica crashed by itself (crash_in_next_commit).
    std::function<void(int)> crashed_in_commit{};
  };

  // Replica i is world node i.
  ReplicaSet(World& world, Options options);

  bool up(int i) const { return replicas_[i].up; }
  int size() const { return static_cast<int>(replicas_.size()); }
  void crash(int i);
  // lmdb: replica i loses power after `writes` more writes and syncs of its
  // files (at least 1), which its next commits make; Options::crashed_in_commit
  // is told. A crash of any replica before then disarms it. Without lmdb: crash(i).
  void crash_in_next_commit(int i, uint64_t writes);
  // Brings replica i up; with lmdb, reopens its store. False (and the replica
  // stays down) when the store does not open: why() says why.
  bool restart(int i);
  const std::string& why() const { return why_; }
  // lmdb: power losses so far, those inside a commit, and the unsynced writes
  // they lost or cut.
  uint64_t power_losses() const { return power_losses_; }
  uint64_t power_losses_in_commit() const { return power_losses_in_commit_; }
  uint64_t unsynced_writes_lost() const { return unsynced_writes_lost_; }
  // Flips a bit in the record of `key` on replica i; false when it holds none.
  bool corrupt(int i, const std::string& key);
  // Whether replica i's copy of `key` is corrupt (with skip_checksum: serves a
  // flipped value), and how many replicas' copies are.
  bool holds_corrupt(int i, const std::string& key);
  int corrupt_copies(const std::string& key);
  // Restarts every replica that is down; false when a store does not open.
  bool restart_all();

 private:
  // Replica i's side of its driver: a reply goes to the node that sent the
  // request (the route is its node number), one network message per frame.
  class Host final : public replica::ReplicaHost {
   public:
    Host(ReplicaSet& set, int i) : set_(set), i_(i) {}
    void reply(uint64_t route, std::vector<std::string> replies) override;
    // skip_checksum: a read serves the flipped value.
    void amend(const wire::ReplicaRequest& request, wire::ReplicaReply& reply) override;

   private:
    ReplicaSet& set_;
    int i_;
  };

  struct Replica {
    std::unique_ptr<replica::ReplicaStore> store;  // memory: the disk, survives crashes
    replica::MemoryStore* disk = nullptr;  // the same disk, for injecting bit flips; lmdb: null
    std::string dir;  // lmdb: the store's directory
    bool crash_armed = false;  // lmdb: a crash waits in its next commits
    std::unique_ptr<SkewedClock> physical;
    std::unique_ptr<HybridClock> clock;            // memory: lost in a crash
    std::unique_ptr<replica::ReplicaHandler> handler;
    std::unique_ptr<Host> host;
    // Holds the batch not yet committed (a crash drops it).
    std::unique_ptr<replica::ReplicaDriver> driver;
    bool up = true;
    bool flush_scheduled = false;
    uint64_t incarnation = 0;
    // skip_checksum: the versions (by key) whose value this replica serves flipped.
    std::map<std::string, wire::Version> flipped;
  };

  void receive(int i, int from, const std::string& bytes);
  void flush(int i);
  // lmdb: the power loss of replica i's machine, at once or as armed.
  void lose_power(int i);

  World& world_;
  Options options_;
  // lmdb: the replicas' directories, on the simulated disk (declared before
  // the replicas, whose stores close first).
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<test::SimDiskScope> disk_;
  std::vector<Replica> replicas_;
  std::string why_;
  uint64_t power_losses_ = 0, power_losses_in_commit_ = 0, unsynced_writes_lost_ = 0;
  uint64_t feeds_started_ = 0;  // each start a change feed of its own (ReplicaHandler's FeedOptions::log)
};

}  // namespace palisade::sim
