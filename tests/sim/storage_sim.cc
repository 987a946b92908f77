#include "tests/sim/storage_sim.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/random.h"
#include "base/temp_dir.h"
#include "lockgroup/lmdb_paxos_storage.h"
#include "replica/lmdb_store.h"
#include "tests/support/sim_disk.h"
#include "wire/hash.h"

namespace palisade::sim {
namespace {

using replica::Change;
using replica::LmdbStore;
using test::SimDisk;

enum class Outcome { kAcked, kFailed, kInDoubt };

struct Batch {
  std::vector<std::string> locks;
  Outcome outcome = Outcome::kFailed;
};

// What the simulations share: the options, the generator, the directory, the
// result and its trace, the run (open, batches, a final crash), the faults
// drawn before each batch, and a reboot.
class DiskRun {
 public:
  virtual ~DiskRun() = default;

  StorageSimResult run() {
    test::SimDiskScope disk(dir_.path());
    if (o_.broken_lying_journal_sync) SimDisk::lie_about_syncs("journal");
    if (open()) {
      for (uint64_t b = 1; b <= static_cast<uint64_t>(o_.batches) && r_.violations.empty(); ++b) {
        if (!step(b)) break;
      }
      if (r_.violations.empty() && is_open()) {
        record("final crash");
        SimDisk::crash(rng_);
        restart();
      }
    }
    close();
    return take_result();
  }

 protected:
  explicit DiskRun(const StorageSimOptions& o) : o_(o), rng_(o.seed) {}

  // Opens the store on dir_ (a violation when it does not open).
  virtual bool open() = 0;
  virtual bool is_open() const = 0;
  // Closes it; after a crash its teardown makes nothing durable.
  virtual void close() = 0;
  // One batch and its checks; false when the run cannot go on.
  virtual bool step(uint64_t batch) = 0;
  // Reboots (reboot()) and checks what the store holds; false when the run cannot go on.
  virtual bool restart() = 0;

  // Closes the store, revives the disk with its faults healed, and reopens.
  bool reboot() {
    const bool crashed = SimDisk::crashed();
    close();
    SimDisk::revive();
    SimDisk::heal();
    full_left_ = 0;
    if (crashed) ++r_.crashes;
    record(crashed ? "revive" : "restart");
    return open();
  }

  void record(const std::string& line) {
    ++r_.events;
    r_.trace_hash = hash64(line, r_.trace_hash);
    if (o_.keep_trace) r_.trace += line + "\n";
  }
  void violation(const std::string& v) {
    record("VIOLATION " + v);
    r_.violations.push_back("seed " + std::to_string(o_.seed) + ": " + v);
  }

  // Faults drawn before a batch.
  void draw_faults() {
    if (rng_.chance(o_.fail_sync)) {
      SimDisk::fail_syncs(1);
      record("fault: next sync fails");
    }
    if (full_left_ > 0 && --full_left_ == 0) {
      SimDisk::fill(SimDisk::Full::kNo);
      record("fault: disk has room again");
    }
    if (rng_.chance(o_.full_disk)) {
      const bool all = rng_.chance(0.5);
      SimDisk::fill(all ? SimDisk::Full::kEverything : SimDisk::Full::kGrowth);
      full_left_ = static_cast<int>(rng_.uniform(1, 4));
      record(all ? "fault: disk full" : "fault: disk full for growth");
    }
    if (rng_.chance(o_.torn_write)) {
      SimDisk::tear_next_write(rng_);
      record("fault: next write torn");
    }
    if (rng_.chance(o_.crash)) {
      const uint64_t n = rng_.uniform(1, 8);
      SimDisk::crash_after(n, rng_);
      record("fault: crash at write or sync " + std::to_string(n));
    }
  }

  // The result, with what the disk injected.
  StorageSimResult take_result() {
    const SimDisk::Counters c = SimDisk::counters();
    r_.syncs_failed = c.syncs_failed;
    r_.writes_refused = c.writes_refused;
    r_.writes_torn = c.writes_torn;
    r_.writes_lost = c.writes_lost + c.writes_cut;
    return std::move(r_);
  }

  StorageSimOptions o_;
  Random rng_;
  TempDir dir_;
  StorageSimResult r_;
  int full_left_ = 0;  // batches until a full disk has room again
};

class StorageSim final : public DiskRun {
 public:
  explicit StorageSim(const StorageSimOptions& o) : DiskRun(o) {
    for (int i = 0; i < o_.locks; ++i) names_.push_back("lock" + std::to_string(i));
  }

 private:
  bool is_open() const override { return store_ != nullptr; }
  void close() override { store_.reset(); }

  bool open() override {
    auto s = LmdbStore::open(dir_.path(), LmdbStore::Options{.map_size_bytes = o_.map_bytes,
                                                             .journal_bytes = o_.journal_bytes,
                                                             .checkpoint_bytes = o_.checkpoint_bytes});
    ++r_.reopens;
    if (!s.is_ok()) {
      violation("store does not open: " + s.status().to_string());
      return false;
    }
    store_ = std::move(s).value();
    record("open");
    return true;
  }

  // The floor of `lock` as the store serves it; nullopt when the read fails.
  std::optional<uint64_t> floor(const std::string& lock) {
    auto f = store_->fence_floor(lock);
    if (!f.is_ok()) return std::nullopt;
    return f.value();
  }

  // Reboots and checks every lock.
  bool restart() override {
    if (!reboot()) return false;
    std::map<uint64_t, std::pair<int, int>> evidence;  // unsettled batch -> (locks showing it, locks missing it)
    for (const std::string& lock : names_) {
      const auto found = floor(lock);
      if (!found) {
        violation("read of " + lock + " fails right after opening");
        return false;
      }
      const uint64_t f = *found;
      record(lock + " = " + std::to_string(f));
      if (f != 0) {
        const auto it = batches_.find(f);
        if (it == batches_.end() ||
            std::find(it->second.locks.begin(), it->second.locks.end(), lock) == it->second.locks.end()) {
          violation(lock + " has floor " + std::to_string(f) + ", which no batch wrote to it");
        }
      }
      if (f < durable_[lock]) {
        violation("acknowledged batch lost: " + lock + " has floor " + std::to_string(f) + ", batch " +
                  std::to_string(durable_[lock]) + " was acknowledged");
      }
      for (uint64_t b : unsettled_) {
        const Batch& batch = batches_[b];
        if (std::find(batch.locks.begin(), batch.locks.end(), lock) == batch.locks.end()) continue;
        if (f == b) ++evidence[b].first;
        if (f < b) ++evidence[b].second;
      }
      served_[lock] = durable_[lock] = f;
    }
    for (const auto& [b, e] : evidence) {
      if (e.first > 0 && e.second > 0) {
        violation("batch " + std::to_string(b) + " partly present: on " + std::to_string(e.first) +
                  " of its locks, missing from " + std::to_string(e.second));
      }
      if (e.first > 0 && e.second == 0) ++r_.in_doubt_present;
    }
    unsettled_.clear();
    return true;
  }

  bool step(uint64_t b) override {
    draw_faults();
    Batch& batch = batches_[b];
    const uint64_t changes = rng_.uniform(1, 3);
    std::set<std::string> chosen;
    for (uint64_t i = 0; i < changes; ++i) chosen.insert(names_[rng_.index(names_.size())]);
    batch.locks.assign(chosen.begin(), chosen.end());
    bool applied = true;
    for (const std::string& lock : batch.locks) {
      const std::string sequencer = rng_.hex(rng_.uniform(0, 160));
      const Status s = store_->apply(Change{.lock = lock, .floor = b, .floor_sequencer = sequencer});
      if (!s.is_ok()) {
        record("batch " + std::to_string(b) + " apply: " + std::string(code_name(s.code())));
        applied = false;
        break;
      }
    }
    Status s = applied ? store_->commit() : Status(Code::kStorageError, "apply failed");
    if (!applied) store_->abort();
    std::string line = "batch " + std::to_string(b) + " (";
    for (const std::string& lock : batch.locks) line += " " + lock;
    if (SimDisk::crashed()) {
      batch.outcome = Outcome::kInDoubt;
      unsettled_.insert(b);
      record(line + " ) crashed in commit");
      return restart();
    }
    if (s.is_ok()) {
      batch.outcome = Outcome::kAcked;
      ++r_.commits_ok;
      for (const std::string& lock : batch.locks) served_[lock] = durable_[lock] = b;
      record(line + " ) ok");
    } else {
      batch.outcome = Outcome::kFailed;
      ++r_.commits_failed;
      unsettled_.insert(b);
      record(line + " ) " + std::string(code_name(s.code())));
    }
    // What the store serves: every acknowledged batch, never a failed one.
    for (const std::string& lock : names_) {
      const auto found = floor(lock);
      if (!found) {  // the store broke itself: a restart replays its journal
        ++r_.broken_restarts;
        record("reads fail: restart");
        return restart();
      }
      if (*found != served_[lock]) {
        violation((*found == b ? "failed batch served: " : "read differs: ") + lock + " reads " +
                  std::to_string(*found) + ", expected " + std::to_string(served_[lock]));
        return false;
      }
    }
    if (rng_.chance(o_.clean_restart)) return restart();
    return true;
  }

  static std::string_view code_name(Code c) {
    switch (c) {
      case Code::kStorageError:
        return "storage_error";
      case Code::kCorrupt:
        return "corrupt";
      default:
        return "other error";
    }
  }

  std::unique_ptr<LmdbStore> store_;
  std::vector<std::string> names_;
  std::map<uint64_t, Batch> batches_;
  std::map<std::string, uint64_t> durable_;  // lock -> the floor a crash must not lose
  std::map<std::string, uint64_t> served_;  // lock -> the floor the running store must serve
  std::set<uint64_t> unsettled_;  // batches failed or cut short since the last reopen
};

// The lock group's acceptor state, LmdbPaxosStorage, under the same faults. A
// batch sets the promised ballot, accepts entries above the snapshot and now
// and then stores a snapshot; the model applies each batch as the
// PaxosStorage interface says. After every reopen, load() must give the state
// of the acknowledged batches with some of the failed or cut-short ones (each
// wholly); while the storage runs, that of the acknowledged ones alone.
class PaxosSim final : public DiskRun {
 public:
  explicit PaxosSim(const StorageSimOptions& o) : DiskRun(o) {}

 private:
  bool is_open() const override { return storage_ != nullptr; }
  void close() override { storage_.reset(); }

  struct Changes {
    std::optional<lockgroup::Ballot> promised;
    std::optional<std::pair<lockgroup::Slot, std::string>> snapshot;
    std::map<lockgroup::Slot, lockgroup::Entry> accepted;
    bool acked = false;
  };

  static void apply(lockgroup::DurableState& state, const Changes& c) {
    if (c.promised) state.promised = *c.promised;
    if (c.snapshot) {
      state.snapshot_slot = c.snapshot->first;
      state.snapshot = c.snapshot->second;
      state.accepted.erase(state.accepted.begin(), state.accepted.upper_bound(c.snapshot->first));
    }
    for (const auto& [slot, entry] : c.accepted) state.accepted[slot] = entry;
  }

  static bool same(const lockgroup::DurableState& a, const lockgroup::DurableState& b) {
    return a.promised == b.promised && a.snapshot_slot == b.snapshot_slot && a.snapshot == b.snapshot &&
           a.accepted == b.accepted;
  }

  static std::string describe(const lockgroup::DurableState& s) {
    std::string out = "promised " + std::to_string(s.promised) + ", snapshot at " + std::to_string(s.snapshot_slot) +
                      " (" + std::to_string(s.snapshot.size()) + " bytes), accepted";
    for (const auto& [slot, e] : s.accepted) out += " " + std::to_string(slot) + "@" + std::to_string(e.ballot);
    return out;
  }

  bool open() override {
    auto s = lockgroup::LmdbPaxosStorage::open(
        dir_.path(),
        {.map_size_bytes = o_.map_bytes, .journal_bytes = o_.journal_bytes, .checkpoint_bytes = o_.checkpoint_bytes});
    ++r_.reopens;
    if (!s.is_ok()) {
      violation("storage does not open: " + s.status().to_string());
      return false;
    }
    storage_ = std::move(s).value();
    record("open");
    return true;
  }

  // The state of `base` with the batches since then: the acknowledged ones,
  // and those of the others whose bit is set in `mask`.
  lockgroup::DurableState replay(uint64_t mask) const {
    lockgroup::DurableState state = base_;
    uint64_t bit = 0;
    for (const Changes& c : since_) {
      if (c.acked) {
        apply(state, c);
      } else if (((mask >> bit++) & 1) != 0) {
        apply(state, c);
      }
    }
    return state;
  }

  // Reboots and checks the state load() gives against every set of unsettled batches.
  bool restart() override {
    if (!reboot()) return false;
    auto loaded = storage_->load();
    if (!loaded.is_ok()) {
      violation("load fails right after opening: " + loaded.status().to_string());
      return false;
    }
    record("loaded " + describe(loaded.value()));
    bool found = false;
    for (uint64_t mask = 0; mask < (uint64_t{1} << unsettled()) && !found; ++mask) {
      if (same(replay(mask), loaded.value())) {
        found = true;
        r_.in_doubt_present += static_cast<uint64_t>(std::popcount(mask));
      }
    }
    if (!found) {
      violation("acknowledged batch lost, or a batch partly kept: after a restart the storage holds " +
                describe(loaded.value()) +
                ", which no set of wholly kept batches gives (acknowledged ones alone: " + describe(replay(0)) + ")");
      return false;
    }
    base_ = served_ = loaded.value();
    since_.clear();
    return true;
  }

  bool step(uint64_t b) override {
    draw_faults();
    Changes c;
    lockgroup::DurableState next = served_;
    // The model follows the interface: an entry at or below the batch's
    // snapshot is dropped, and a snapshot drops the entries it covers.
    std::string line = "batch " + std::to_string(b) + ":";
    if (rng_.chance(0.5)) {
      c.promised = served_.promised + rng_.uniform(1, 3);
      storage_->set_promised(*c.promised);
      line += " promise " + std::to_string(*c.promised);
    }
    for (uint64_t i = rng_.uniform(0, 3); i > 0; --i) {
      const lockgroup::Slot floor = c.snapshot ? c.snapshot->first : served_.snapshot_slot;
      lockgroup::Entry e{floor + rng_.uniform(1, 12), served_.promised + rng_.uniform(0, 2),
                         rng_.hex(rng_.uniform(0, 120))};
      storage_->put_accepted(e);
      line += " accept " + std::to_string(e.slot) + "@" + std::to_string(e.ballot);
      c.accepted[e.slot] = std::move(e);
    }
    if (rng_.chance(0.1)) {
      const lockgroup::Slot slot = served_.snapshot_slot + rng_.uniform(1, 10);
      std::string snapshot = rng_.hex(rng_.uniform(0, 400));
      storage_->put_snapshot(slot, snapshot);
      c.accepted.erase(c.accepted.begin(), c.accepted.upper_bound(slot));
      c.snapshot.emplace(slot, std::move(snapshot));
      line += " snapshot " + std::to_string(slot);
    }
    // Entries put before the snapshot and above it stay (the storage keeps
    // them); entries put after it at or below it were dropped.
    const bool changed = c.promised || c.snapshot || !c.accepted.empty() || storage_->dirty();
    const Status s = storage_->commit();
    if (SimDisk::crashed()) {
      if (changed) since_.push_back(std::move(c));
      record(line + " crashed in commit");
      return restart();
    }
    if (s.is_ok()) {
      ++r_.commits_ok;
      c.acked = true;
      apply(next, c);
      served_ = next;
      record(line + " ok");
    } else {
      ++r_.commits_failed;
      record(line + " failed");
    }
    if (changed) since_.push_back(std::move(c));
    // The checker tries every subset of the unsettled batches: a restart
    // settles them before there are too many (a crash in the next commit
    // adds one).
    if (unsettled() + 1 >= kMaxUnsettled) return restart();
    auto loaded = storage_->load();
    if (!loaded.is_ok()) {
      ++r_.broken_restarts;
      record("load fails: restart");
      return restart();
    }
    if (!same(loaded.value(), served_)) {
      violation("after batch " + std::to_string(b) + " the storage serves " + describe(loaded.value()) +
                ", acknowledged: " + describe(served_));
      return false;
    }
    if (rng_.chance(o_.clean_restart)) return restart();
    return true;
  }

  static constexpr uint64_t kMaxUnsettled = 12;  // 4,096 subsets

  uint64_t unsettled() const {
    return static_cast<uint64_t>(
        std::count_if(since_.begin(), since_.end(), [](const Changes& c) { return !c.acked; }));
  }

  std::unique_ptr<lockgroup::LmdbPaxosStorage> storage_;
  lockgroup::DurableState base_;  // what the last reopen found
  lockgroup::DurableState served_;  // base_ with the batches acknowledged since
  std::vector<Changes> since_;  // the batches since the last reopen that changed something
};

}  // namespace

StorageSimResult run_storage_sim(const StorageSimOptions& options) {
  if (options.paxos) return PaxosSim(options).run();
  return StorageSim(options).run();
}

}  // namespace palisade::sim
