#include "tests/sim/storage_sim.h"

#include <algorithm>
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
#include "replica/lmdb_store.h"
#include "tests/support/sim_disk.h"
#include "wire/hash.h"

namespace palisade::sim {
namespace {

using replica::Change;
using replica::LmdbStore;
using test::SimDisk;

// A fresh directory under $TMPDIR (default /tmp), removed with its files.
class ScratchDir {
 public:
  ScratchDir() {
    const char* env = std::getenv("TMPDIR");
    std::string tmpl = std::string(env != nullptr && *env != '\0' ? env : "/tmp") + "/palisade-storage-sim-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("cannot make a directory like " + tmpl);
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

enum class Outcome { kAcked, kFailed, kInDoubt };

struct Batch {
  std::vector<std::string> locks;
  Outcome outcome = Outcome::kFailed;
};

class StorageSim {
 public:
  explicit StorageSim(const StorageSimOptions& o) : o_(o), rng_(o.seed) {}

  StorageSimResult run() {
    test::SimDiskScope disk(dir_.path());
    if (o_.broken_lying_journal_sync) SimDisk::lie_about_syncs("journal");
    for (int i = 0; i < o_.locks; ++i) names_.push_back("lock" + std::to_string(i));
    if (!open()) return finish();
    for (uint64_t b = 1; b <= static_cast<uint64_t>(o_.batches) && r_.violations.empty(); ++b) {
      if (!step(b)) break;
    }
    if (r_.violations.empty() && store_) {
      record("final crash");
      SimDisk::crash(rng_);
      restart();
    }
    return finish();
  }

 private:
  void record(const std::string& line) {
    ++r_.events;
    r_.trace_hash = hash64(line, r_.trace_hash);
    if (o_.keep_trace) r_.trace += line + "\n";
  }
  void violation(const std::string& v) {
    record("VIOLATION " + v);
    r_.violations.push_back("seed " + std::to_string(o_.seed) + ": " + v);
  }

  StorageSimResult finish() {
    store_.reset();
    const SimDisk::Counters c = SimDisk::counters();
    r_.syncs_failed = c.syncs_failed;
    r_.writes_refused = c.writes_refused;
    r_.writes_torn = c.writes_torn;
    r_.writes_lost = c.writes_lost + c.writes_cut;
    return std::move(r_);
  }

  bool open() {
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

  // Closes the store (after a crash: its teardown makes nothing durable),
  // revives the disk, reopens and checks every lock. False when it cannot go on.
  bool restart() {
    const bool crashed = SimDisk::crashed();
    store_.reset();
    SimDisk::revive();
    SimDisk::heal();
    full_left_ = 0;
    if (crashed) ++r_.crashes;
    record(crashed ? "revive" : "restart");
    if (!open()) return false;
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

  bool step(uint64_t b) {
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

  StorageSimOptions o_;
  Random rng_;
  ScratchDir dir_;
  StorageSimResult r_;
  std::unique_ptr<LmdbStore> store_;
  std::vector<std::string> names_;
  std::map<uint64_t, Batch> batches_;
  std::map<std::string, uint64_t> durable_;  // lock -> the floor a crash must not lose
  std::map<std::string, uint64_t> served_;  // lock -> the floor the running store must serve
  std::set<uint64_t> unsettled_;  // batches failed or cut short since the last reopen
  int full_left_ = 0;  // batches until the full disk has room again
};

}  // namespace

StorageSimResult run_storage_sim(const StorageSimOptions& options) { return StorageSim(options).run(); }

}  // namespace palisade::sim
