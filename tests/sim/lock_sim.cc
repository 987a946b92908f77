#include "tests/sim/lock_sim.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "client/conditional_compare.h"
#include "client/coordinator.h"
#include "client/grant_fence.h"
#include "client/lock_session.h"
#include "client/replica_view.h"
#include "wire/hash.h"
#include "wire/lock_protocol.h"
#include "auth/cluster_key.h"
#include "lockgroup/lmdb_paxos_storage.h"
#include "lockgroup/lockd_driver.h"
#include "lockgroup/memory_paxos_storage.h"
#include "lockgroup/peer_auth.h"
#include "palisade/conditional.h"
#include "tests/sim/cas_history.h"
#include "tests/sim/lock_checkers.h"
#include "tests/sim/lock_group_record.h"
#include "tests/sim/replacer.h"
#include "tests/sim/replica_set.h"
#include "tests/sim/sim_links.h"
#include "tests/support/sim_disk.h"

namespace palisade::sim {
namespace {

constexpr int kOperatorNode = 90;  // the replacer's world node
constexpr int kRecordNode = 91;  // its connection to the lock group
constexpr int kLockdBase = 100;   // world node of lockd i (i from 1)
constexpr int kClientBase = 200;    // world node of client c's store connection
constexpr int kAdversaryBase = 900;  // world node of adversary a
constexpr int kSessionBase = 1000;  // world node of client c's session: one per incarnation (a new socket)
constexpr int kLaneBase = 100000;  // world node of client c's lane to a later replica set: one per move
constexpr const char* kGroup = "sim";
constexpr uint64_t kMaxRunMs = 30 * 60 * 1000;

// A monotonic clock that starts at an offset and runs fast or slow by up to
// half the drift bound, so any two clocks differ in rate by at most the bound.
class DriftClock {
 public:
  DriftClock(uint64_t base, int64_t drift_ppm) : base_(base), drift_ppm_(drift_ppm) {}
  uint64_t local(uint64_t global) const {
    return base_ + global + static_cast<uint64_t>(static_cast<int64_t>(global) * drift_ppm_ / 1'000'000);
  }
  // The first global time at which the clock reads `local_ms` or more.
  uint64_t global(uint64_t local_ms) const {
    if (local_ms <= base_) return 0;
    uint64_t g = (local_ms - base_) * 1'000'000 / static_cast<uint64_t>(1'000'000 + drift_ppm_);
    g = g > 2 ? g - 2 : 0;
    while (local(g) < local_ms) ++g;
    return g;
  }

 private:
  uint64_t base_;
  int64_t drift_ppm_;
};

std::string describe_peer(const lockgroup::PeerMessage& m) {
  std::string from = "lockd " + std::to_string(m.from) + " ";
  return std::visit(
      [&](const auto& b) -> std::string {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, lockgroup::Prepare>) return from + "prepare " + std::to_string(b.ballot);
        if constexpr (std::is_same_v<T, lockgroup::Promise>) {
          return from + "promise " + std::to_string(b.ballot) + (b.ok ? " ok" : " refused, promised " + std::to_string(b.promised));
        }
        if constexpr (std::is_same_v<T, lockgroup::Accept>) {
          return from + "accept " + std::to_string(b.ballot) + " " + std::to_string(b.entries.size()) + " entries through " +
                 std::to_string(b.chosen_through);
        }
        if constexpr (std::is_same_v<T, lockgroup::Accepted>) {
          return from + "accepted " + std::to_string(b.ballot) + (b.ok ? " ok" : " refused, promised " + std::to_string(b.promised));
        }
        if constexpr (std::is_same_v<T, lockgroup::StepDown>) {
          return from + "step-down " + std::to_string(b.ballot) + ", successor " + std::to_string(b.successor);
        }
        if constexpr (std::is_same_v<T, lockgroup::CatchUpRequest>) return from + "catch-up request from " + std::to_string(b.from_slot);
        if constexpr (std::is_same_v<T, lockgroup::CatchUp>) {
          return from + "catch-up " + std::to_string(b.chosen.size()) + " entries, snapshot " + std::to_string(b.snapshot_slot);
        }
        return from;
      },
      m.body);
}

// What a palisade-lockd process gives its driver: the world's network for
// sockets, and a count of starts for incarnations.
class LockdProcess : public lockgroup::LockdHost {
 public:
  LockdProcess(World& world, int node) : world_(world), node_(node) {}
  // Power went inside a sync (lmdb_stores): the process is dead, nothing leaves.
  static bool dead() { return test::SimDisk::crashed(); }
  void send_peer(lockgroup::NodeId to, std::string bytes) override {
    if (dead()) return;
    world_.send(node_, kLockdBase + static_cast<int>(to), std::move(bytes));
  }
  void reply(uint64_t route, std::string bytes) override {
    if (dead()) return;
    auto waiting = routes_.find(route);
    if (waiting == routes_.end()) return;
    world_.send(node_, waiting->second, std::move(bytes));
    routes_.erase(waiting);
  }
  void forget_routes() override { routes_.clear(); }
  // Grows with every start, as the daemon's wall clock does.
  uint64_t next_incarnation() override { return ++starts_; }
  // The request on `route` came from world node `from`.
  void waiting(uint64_t route, int from) { routes_[route] = from; }

 private:
  World& world_;
  int node_;
  std::map<uint64_t, int> routes_;  // route -> the session node that asked
  uint64_t starts_ = 0;  // kept across crashes
};

struct Lockd {
  lockgroup::NodeId id = 0;
  DriftClock clock{0, 0};
  std::unique_ptr<lockgroup::PaxosStorage> disk;  // memory: survives crashes; lmdb: reopened at boot
  lockgroup::MemoryPaxosStorage* memory = nullptr;  // the same disk, without lmdb_stores
  std::string dir;  // lmdb_stores: its LmdbPaxosStorage's directory
  std::unique_ptr<LockdProcess> process;
  std::unique_ptr<lockgroup::LockdDriver> driver;  // memory: lost in a crash
  bool sync_scheduled = false;
  uint64_t incarnation = 0;
  uint64_t tick_at = UINT64_MAX;
  // Checker state for this incarnation.
  lockgroup::Slot checked_through = 0;
  lockgroup::Slot observed_through = 0;  // the token checker has seen the table through this slot
  bool was_master = false;
};

struct Held {
  std::string lock;
  uint64_t token = 0;
  std::string sequencer;
};

struct SimClient {
  int index = 0;
  DriftClock clock{0, 0};
  std::unique_ptr<SkewedClock> wall;
  std::unique_ptr<HybridClock> hlc;
  std::unique_ptr<client::LockSession> session;
  std::unique_ptr<SimLinks> links;
  std::unique_ptr<client::Lane> lane;  // the client's own, as QuorumStore drives it
  client::Coordinator& coordinator() { return lane->coordinator(); }
  client::ReplicaView view;  // the replica set the lane sends to
  std::vector<int> view_nodes;  // its replicas' world nodes
  int node = 0;  // the lane's world node
  int moves = 0;
  uint64_t incarnation = 0;  // a new session after a crash or expiry
  size_t session_nodes = 0;  // the nodes its session knew at the last pump
  uint64_t paused_until = 0;
  uint64_t session_tick_at = UINT64_MAX;
  uint64_t store_tick_at = UINT64_MAX;
  // kCasReading and kCasWriting: a compare-and-set's read and write, under
  // the key's lock (held) as ConditionalStore takes it.
  enum class Phase { kOpening, kIdle, kAcquiring, kFencing, kWriting, kCasReading, kCasWriting, kReleasing, kDone };
  Phase phase = Phase::kOpening;
  int cycles_left = 0;
  int writes_left = 0;
  uint64_t call = 0;  // the session call in flight
  std::optional<Held> held;
  std::optional<Held> granting;  // granted, fence in flight
  enum class Kind { kWrite, kFence, kRead };
  struct Op {
    Kind kind = Kind::kRead;
    size_t record = 0;  // in the history
    Fence fence{};  // a write's, fence's or fenced read's, to send it again on a newer set
    bool moved = false;  // sent again on a newer set
    bool cas = false;  // the read or write of the compare-and-set in progress
  };
  std::map<client::OpId, Op> ops;
  int counter = 0;
  struct Cas {
    std::string key;
    Expect expect;
    std::string value;
    size_t entry = 0;  // in the CasHistory
    bool write_sent = false;
  };
  std::optional<Cas> cas;  // the compare-and-set in progress
  // What it last read of each compare-and-set key: (value, version), or nullopt for none.
  std::map<std::string, std::optional<std::pair<std::string, FencedTimestamp>>> seen;
};

// Small, so that checkpoints come every few syncs.
constexpr lockgroup::LmdbPaxosStorage::Options kLmdbPaxosOptions{
    .map_size_bytes = size_t{8} << 20, .journal_bytes = size_t{64} << 10, .checkpoint_bytes = size_t{16} << 10};

class LockSim {
 public:
  explicit LockSim(const LockSimOptions& o)
      : o_(o),
        world_(o.seed, o.keep_trace),
        key_(ClusterKey::from_hex(std::string(64, '7')).value()),
        replicas_(
            world_,
            {.replicas = o.replicas + o.replica_spares,
             .max_clock_offset_ms = o.max_clock_offset_ms,
             .skip_fence_floor = o.broken_replicas_skip_fence_floor,
             .auth = replica::ReplicaAuth{.replica_key = key_,
                                          .group = kGroup,
                                          .write_quorum = o.broken_replicas_one_receipt ? 1 : o.replicas / 2 + 1,
                                          .broken_ignore_sequencer_lock = o.broken_replicas_ignore_sequencer_lock},
             .spares_from = o.replica_spares > 0 ? o.replicas : -1,
             .trust_everyone = o.broken_replicas_trust_everyone,
             .lmdb = o.lmdb_stores,
             .crashed_in_commit = [this](int r) { schedule_replica_restart(r); }}),
        peer_auth_(key_, kGroup),
        lock_delays_(o.timing.max_clock_drift_ppm) {
    world_.faults() = o.faults;
    for (int i = 1; i <= o.lockd; ++i) members_.push_back(static_cast<lockgroup::NodeId>(i));
    file_members_ = members_;
    for (int i = 1; i <= nodes_; ++i) endpoints_.push_back(endpoint(i));
    for (int i = 1; i <= nodes_; ++i) {
      Lockd n;
      n.id = static_cast<lockgroup::NodeId>(i);
      n.clock = drift_clock();
      if (o.lmdb_stores) {
        if (!lockd_dir_) {
          lockd_dir_ = std::make_unique<TempDir>();
          test::SimDisk::track(lockd_dir_->path());
        }
        n.dir = lockd_dir_->sub("lockd" + std::to_string(i));
        std::filesystem::create_directory(n.dir);
      } else {
        auto memory = std::make_unique<lockgroup::MemoryPaxosStorage>();
        // Provisioned as the node's first start would, before time begins: that
        // write draws nothing from the world, so seeds replay as they did before
        // disks kept first members (the LMDB stores write them at first start).
        memory->set_first_members(i > o.lockd ? lockgroup::Members{} : members_);
        (void)memory->commit();
        n.memory = memory.get();
        n.disk = std::move(memory);
      }
      n.process = std::make_unique<LockdProcess>(world_, kLockdBase + i);
      lockd_.push_back(std::move(n));
      world_.attach(kLockdBase + i, [this, i](int from, const std::string& bytes) { lockd_receive(i, from, bytes); });
    }
    for (int i = 1; i <= nodes_; ++i) boot(i);
    for (int c = 0; c < o.clients; ++c) {
      SimClient cl;
      cl.index = c;
      cl.clock = drift_clock();
      int64_t offset = static_cast<int64_t>(world_.uniform(0, 2 * o.max_clock_offset_ms)) -
                       static_cast<int64_t>(o.max_clock_offset_ms);
      cl.wall = std::make_unique<SkewedClock>(world_, offset);
      cl.hlc = std::make_unique<HybridClock>(*cl.wall);
      int quorum = o.replicas / 2 + 1;
      cl.view = {.endpoints = sim_endpoints(o.replicas), .read_quorum = quorum, .write_quorum = quorum};
      cl.cycles_left = o.cycles_per_client;
      clients_.push_back(std::move(cl));
      wire_lane(c, kClientBase + c);
    }
    for (int a = 0; a < o.adversaries; ++a) {
      Adversary::Setup s;
      s.index = a;
      s.node = kAdversaryBase + a;
      s.replicas = o.replicas + o.replica_spares;
      s.write_quorum = o.replicas / 2 + 1;
      s.lockd_base = kLockdBase;
      s.lockd = nodes_;
      s.group_hash = hash64(kGroup);
      s.group = kGroup;
      for (int k = 0; k < o.locks; ++k) s.locks.push_back(lock_of(k));
      s.key_of = [](const std::string& lock) { return "key" + lock.substr(4); };
      s.fenced_token = [this](const std::string& lock) { return fenced_token(lock); };
      s.commits = o.adversary_commits;
      s.repairer_runs = o.replica_spares > 0;
      adversaries_.push_back(std::make_unique<Adversary>(world_, std::move(s), history_, adversary_counters_));
    }
    if (o.replica_spares > 0) {
      record_ = std::make_unique<LockGroupRecord>(
          world_, LockGroupRecord::Options{.node = kRecordNode, .lockd_base = kLockdBase, .lockd = nodes_});
      const int quorum = o.replicas / 2 + 1;
      replacer_ = std::make_unique<Replacer>(
          world_, replicas_, *record_,
          Replacer::Options{.node = kOperatorNode,
                            .members = o.replicas,
                            .spares = o.replica_spares,
                            .read_quorum = quorum,
                            .write_quorum = quorum,
                            .adds_and_removes = o.replica_adds_and_removes,
                            .walk_away = o.replica_walk_away,
                            .seal = RepairSeal(key_, kGroup),
                            .receipt_ids = true,
                            .broken_skip_paused_fill = o.broken_replacement_skips_paused_fill,
                            .broken_skip_pause = o.broken_replacement_skips_pause,
                            .broken_targets_skip_floors = o.broken_targets_skip_floors});
      replacer_->ended = [this] {
        if (!healed_) replacer_->change_later(world_.uniform(0, 3000));
      };
    }
    if (!adversaries_.empty()) {
      // They see what everyone else sends, not each other's frames: a value
      // one of them sent to one replica only stays on one replica.
      world_.tap([this](int from, int to, const std::string& bytes) {
        if (from >= kAdversaryBase && from < kAdversaryBase + o_.adversaries) return;
        for (auto& a : adversaries_) a->observe(from, to, bytes);
      });
    }
  }

  LockSimResult run() {
    for (int c = 0; c < o_.clients; ++c) {
      world_.at(world_.uniform(0, 100), "start client " + std::to_string(c), [this, c] { open_session(c); });
    }
    schedule_faults();
    for (auto& a : adversaries_) a->start();
    if (replacer_) replacer_->change_later(world_.uniform(0, 3000));
    while (!world_.idle() && !workload_done() && world_.now_ms() < kMaxRunMs) {
      world_.run(world_.now_ms() + 1000);
    }
    if (!workload_done()) violations_.push_back("the workload did not finish in " + std::to_string(kMaxRunMs) + " ms");
    // Heal, let the messages in flight land, then read every key.
    healed_ = true;
    for (auto& a : adversaries_) a->stop();
    world_.faults() = NetworkFaults{0, 0, world_.faults().max_delay_ms, 0, 0};
    if (!replicas_.restart_all()) violations_.push_back("store does not open: " + replicas_.why());
    if (replacer_) settle_replica_set();
    for (int k = 0; k < o_.locks; ++k) {
      start_read(0, key_of(k));
      world_.run(world_.now_ms() + 60000);
    }
    for (int k = 0; k < o_.cas_keys; ++k) {
      start_read(0, cas_key(k));
      world_.run(world_.now_ms() + 60000);
    }

    LockSimResult result;
    for (auto& v : tokens_.take_violations()) violations_.push_back(std::move(v));
    for (auto& v : lock_delays_.take_violations()) violations_.push_back(std::move(v));
    for (auto& v : check(history_)) violations_.push_back(std::move(v));
    for (auto& v : cas_.check()) violations_.push_back(std::move(v));
    result.cas_ok = cas_.ok();
    result.cas_stale = cas_.failed();
    result.cas_unknown = cas_.unknown();
    result.violations = std::move(violations_);
    result.lock_delays = lock_delays_.started();
    result.lock_delays_contested = lock_delays_.contested();
    result.adversary = adversary_counters_;
    result.trace_hash = world_.trace_hash();
    result.trace = world_.trace();
    result.events = world_.events();
    result.end_ms = world_.now_ms();
    result.grants = grants_;
    result.lockd_power_losses_in_sync = lockd_power_losses_in_sync_;
    result.replica_power_losses_in_commit = replicas_.power_losses_in_commit();
    result.epochs = epochs_.size();
    result.member_changes_proposed = member_changes_proposed_;
    result.member_views_changed = member_views_changed_;
    result.client_nodes_learnt = client_nodes_learnt_;
    if (replacer_) {
      result.replica_changes = static_cast<uint64_t>(replacer_->changed());
      result.replicas_added = static_cast<uint64_t>(replacer_->added());
      result.replicas_removed = static_cast<uint64_t>(replacer_->removed());
      result.replica_changes_abandoned = static_cast<uint64_t>(replacer_->abandoned());
      result.replica_walk_aways = static_cast<uint64_t>(replacer_->walked_away());
    }
    result.views_followed = views_followed_;
    result.expired_sessions = expired_sessions_;
    for (const auto& w : history_.writes) {
      if (w.result == Code::kOk) ++result.writes_ok;
      if (w.result == Code::kFenced) ++result.writes_fenced;
    }
    for (const auto& r : history_.reads) result.reads_ok += r.result == Code::kOk;
    result.history = std::move(history_);
    return result;
  }

 private:
  static std::string endpoint(int i) { return "sim://lockd/" + std::to_string(i); }
  // The lockd node at endpoint(i): i.
  static int lockd_at(const std::string& endpoint) { return std::stoi(endpoint.substr(endpoint.rfind('/') + 1)); }
  std::string lock_of(int k) const { return "lock" + std::to_string(k); }
  std::string key_of(int k) const { return "key" + std::to_string(k); }  // written under lock k
  std::string cas_key(int k) const { return "cas" + std::to_string(k); }  // written by compare-and-sets only
  static bool is_cas_key(const std::string& key) { return key.starts_with("cas"); }

  DriftClock drift_clock() {
    auto half = static_cast<int64_t>(o_.timing.max_clock_drift_ppm / 2);
    int64_t drift = static_cast<int64_t>(world_.uniform(0, static_cast<uint64_t>(2 * half))) - half;
    return DriftClock(1'000'000 + world_.uniform(0, 1'000'000), drift);
  }
  uint64_t local(const Lockd& n) const { return n.clock.local(world_.now_ms()); }
  uint64_t local(const SimClient& c) const { return c.clock.local(world_.now_ms()); }
  bool workload_done() const {
    for (const SimClient& c : clients_) {
      if (c.phase != SimClient::Phase::kDone) return false;
    }
    return true;
  }

  // ---- lockd nodes ----

  lockgroup::LockdDriverOptions driver_options(int i) {
    lockgroup::LockdDriverOptions d;
    d.broken_reply_before_sync = o_.broken_lockd_reply_before_sync;
    d.broken_ignore_lock_delay = o_.broken_lockd_ignore_lock_delay;
    lockgroup::LockServiceOptions& s = d.service;
    // A spare starts outside the group, as a node that joins does; with
    // broken_members_outside_log every node takes the members the operator
    // last wrote into the cluster file.
    const bool spare = i > o_.lockd;
    s.paxos = lockgroup::PaxosOptions{.self = static_cast<lockgroup::NodeId>(i),
                                      .members = o_.broken_members_outside_log ? file_members_
                                                 : spare                       ? lockgroup::Members{}
                                                                               : members_,
                                      .group = hash64(kGroup),
                                      .master_lease_ms = o_.timing.master_lease_ms,
                                      .heartbeat_ms = o_.timing.heartbeat_ms,
                                      .election_timeout_ms = o_.timing.election_timeout_ms,
                                      .max_drift_ppm = o_.timing.max_clock_drift_ppm,
                                      .seed = world_.rng().next(),
                                      .max_entries_per_message = 64,
                                      .ignore_master_lease = o_.broken_master_ignores_lease,
                                      .broken_lease_without_drift_margin = o_.broken_lease_without_drift_margin,
                                      .broken_first_members_from_options = o_.broken_members_outside_log};
    for (int k = 1; k <= nodes_; ++k) s.endpoints[static_cast<lockgroup::NodeId>(k)] = endpoint(k);
    s.group = kGroup;
    s.key = key_;
    s.session_lease_ms = o_.timing.session_lease_ms;
    s.snapshot_every = o_.snapshot_every;
    if (o_.broken_pause_never_ends) s.replica_pause_timeout_ms = uint64_t{1} << 50;
    s.broken_no_master_epoch = o_.broken_lockd_no_master_epoch;
    s.seed = world_.rng().next();
    return d;
  }

  Lockd& node(int i) { return lockd_[static_cast<size_t>(i - 1)]; }

  void boot(int i) {
    Lockd& n = node(i);
    if (!n.disk) {
      auto opened = lockgroup::LmdbPaxosStorage::open(n.dir, kLmdbPaxosOptions);
      if (!opened.is_ok()) {
        violations_.push_back("store does not open: lockd " + std::to_string(i) +
                              "'s, after a crash: " + opened.status().to_string());
        return;
      }
      n.disk = std::move(opened).value();
    }
    auto driver = lockgroup::LockdDriver::start(driver_options(i), *n.disk, *n.process, local(n));
    if (!driver.is_ok()) {
      violations_.push_back("lockd " + std::to_string(i) + " cannot start: " + driver.status().to_string());
      return;
    }
    n.driver = std::move(driver).value();
    tokens_.restart(i);
    n.observed_through = 0;
    n.checked_through = 0;
    n.was_master = false;
    n.tick_at = UINT64_MAX;
    after_input(i);
  }

  // The daemon's driver takes the frame; the adversary's frames must all be
  // dropped or refused, or taken only as the replays Paxos shrugs off.
  void lockd_receive(int i, int from, const std::string& bytes) {
    Lockd& n = node(i);
    if (!n.driver) return;
    const bool adversary = from >= kAdversaryBase && from < kAdversaryBase + o_.adversaries;
    if (o_.keep_trace) trace_peer(i, bytes, adversary);
    const std::string lockd = "lockd " + std::to_string(i);
    const lockgroup::FrameResult r = n.driver->on_frame(bytes, local(n));
    switch (r.outcome) {
      case lockgroup::FrameOutcome::kPeerMalformed:
        violations_.push_back(lockd + " cannot decode a signed message");
        break;
      case lockgroup::FrameOutcome::kPeerMisaddressed:
        if (!adversary) violations_.push_back(lockd + " got a message for another node");
        ++adversary_counters_.peer_replays_misaddressed;
        break;
      case lockgroup::FrameOutcome::kPeerImpostor:  // the simulator runs plaintext links
      case lockgroup::FrameOutcome::kPeerRefused:
        if (adversary) ++adversary_counters_.peer_replays_refused;
        break;
      case lockgroup::FrameOutcome::kPeerStale:
        if (adversary) ++adversary_counters_.peer_replays_stale;
        break;
      case lockgroup::FrameOutcome::kPeerTaken:
        if (adversary) ++adversary_counters_.peer_replays_taken;
        break;
      case lockgroup::FrameOutcome::kRequestRefused:
        world_.send(kLockdBase + i, from, std::string(r.refusal));
        [[fallthrough]];
      case lockgroup::FrameOutcome::kForged:
        if (!adversary) {
          violations_.push_back(lockd + " cannot decode a message from node " + std::to_string(from));
          break;
        }
        ++adversary_counters_.peer_forged_dropped;
        world_.record(lockd + " drops a forged frame");
        break;
      case lockgroup::FrameOutcome::kRequest:
        if (adversary) {
          // A forged peer frame that reads as a client's request: the daemon
          // answers it as one, harmlessly, but it was meant as a peer's.
          ++adversary_counters_.peer_forged_taken;
          violations_.push_back(lockd + " took a forged peer frame for a client request");
        }
        world_.record(lockd + " <- session " + std::to_string(from) + " #" + std::to_string(r.request_id));
        n.process->waiting(r.route, from);
        break;
    }
    after_input(i);
  }

  void trace_peer(int i, const std::string& bytes, bool adversary) {
    auto body = peer_auth_.verified_body(bytes);
    if (!body) return;
    auto peer = lockgroup::decode_peer(*body, size_t{64} << 20);
    if (!peer.is_ok()) return;
    world_.record("lockd " + std::to_string(i) + " <- " + describe_peer(peer.value()) +
                  (adversary ? " (replayed)" : ""));
  }

  // The largest token of `lock` whose fence has completed; 0 when none.
  uint64_t fenced_token(const std::string& lock) const {
    uint64_t token = 0;
    for (const FenceRecord& f : history_.fences) {
      if (f.result == Code::kOk && f.lock == lock) token = std::max(token, f.token);
    }
    return token;
  }

  // The end of the daemon's turn: the driver proposes and sends the master's
  // early accepts now; the rest leaves when the disk has synced, 1-4 ms later.
  void after_input(int i) {
    Lockd& n = node(i);
    if (n.driver->begin_sync(local(n)) && !n.sync_scheduled) {
      n.sync_scheduled = true;
      uint64_t incarnation = n.incarnation;
      world_.at(world_.uniform(1, 4), "sync lockd " + std::to_string(i), [this, i, incarnation] {
        if (node(i).incarnation == incarnation) sync(i);
      });
    }
    record_events(i);
    check_lockd(i);
    schedule_lockd_tick(i);
  }

  void sync(int i) {
    Lockd& n = node(i);
    n.sync_scheduled = false;
    if (o_.lockd_crash_in_sync > 0 && !healed_ && world_.chance(o_.lockd_crash_in_sync)) {
      if (!o_.lmdb_stores) {
        world_.record("lockd " + std::to_string(i) + " crashes in its sync");
        return crash_lockd(i);
      }
      // Power goes after some of the sync's writes, before anything is sent.
      const uint64_t writes = world_.uniform(1, 4);
      world_.record("lockd " + std::to_string(i) + " loses power at write or sync " + std::to_string(writes) +
                    " from now");
      test::SimDisk::crash_dir_after(n.dir, writes, world_.rng());
    }
    // The disk commits unless it fails, and reads back always.
    const Status synced = n.driver->finish_sync(local(n));
    if (o_.lmdb_stores && test::SimDisk::crashed()) {
      world_.record("lockd " + std::to_string(i) + " lost power inside its sync");
      ++lockd_power_losses_in_sync_;
      return crash_lockd(i);
    }
    if (!synced.is_ok()) {
      violations_.push_back("lockd " + std::to_string(i) + " cannot restart from its disk: " + synced.to_string());
    }
    record_events(i);
    check_lockd(i);
    schedule_lockd_tick(i);
  }

  // What the daemon would log at info: grants, releases, closed and expired sessions.
  void record_events(int i) {
    for (const auto& e : node(i).driver->service().take_events()) {
      world_.record("lockd " + std::to_string(i) + ": " + lockgroup::describe(e));
    }
  }

  void schedule_lockd_tick(int i) {
    Lockd& n = node(i);
    uint64_t at = std::max(n.clock.global(n.driver->service().next_timer_ms()), world_.now_ms() + 1);
    if (at >= n.tick_at) return;
    n.tick_at = at;
    uint64_t incarnation = n.incarnation;
    world_.at(at - world_.now_ms(), "tick lockd " + std::to_string(i), [this, i, incarnation] {
      Lockd& me = node(i);
      if (me.incarnation != incarnation || me.tick_at > world_.now_ms()) return;
      me.tick_at = UINT64_MAX;
      me.driver->tick(local(me));
      after_input(i);
    });
  }

  void crash_lockd(int i) {
    Lockd& n = node(i);
    if (!n.driver) return;
    world_.record("crash lockd " + std::to_string(i));
    n.driver.reset();
    if (n.memory != nullptr) {
      n.memory->crash();
    } else {
      // Power loss: the storage is torn down as it was, and reopened at boot.
      if (!test::SimDisk::crashed()) test::SimDisk::crash_dir(n.dir, world_.rng());
      n.disk.reset();
      test::SimDisk::revive();
    }
    n.process->forget_routes();
    n.sync_scheduled = false;
    ++n.incarnation;
    world_.at(world_.uniform(500, 15000), "restart lockd " + std::to_string(i), [this, i] {
      if (!node(i).driver) boot(i);
    });
  }

  // A planned stop (SIGTERM to the daemon): a master hands over, commits and
  // sends as it does at the end of a turn, then goes; nothing unsynced is lost.
  void stop_master() {
    for (int i = 1; i <= nodes_; ++i) {
      Lockd& n = node(i);
      if (!n.driver || !n.driver->stop(local(n))) continue;
      world_.record("stop lockd " + std::to_string(i) + " as planned: it hands over");
      sync(i);
      crash_lockd(i);
      return;
    }
  }

  // An operator changes the lock group's members: three or five of all the
  // nodes (spares too), drawn at random, so that the group grows, shrinks,
  // and replaces nodes, the master's own included. The master proposes it
  // through the log (LockService::change_members); a refusal (no master, a
  // change under way) is what an operator would retry.
  void change_members() {
    std::vector<lockgroup::NodeId> pool;
    for (int i = 1; i <= nodes_; ++i) pool.push_back(static_cast<lockgroup::NodeId>(i));
    const size_t size = nodes_ >= 5 && world_.chance(0.5) ? 5 : 3;
    lockgroup::Members next;
    while (next.size() < size) {
      const size_t pick = world_.uniform(0, pool.size() - 1);
      next.push_back(pool[pick]);
      pool.erase(pool.begin() + static_cast<ptrdiff_t>(pick));
    }
    std::sort(next.begin(), next.end());
    std::string names;
    for (lockgroup::NodeId id : next) names += (names.empty() ? "" : ",") + std::to_string(id);
    if (o_.broken_members_outside_log) return edit_cluster_file(next, names);
    for (int i = 1; i <= nodes_; ++i) {
      Lockd& n = node(i);
      if (!n.driver || !n.driver->service().is_master(local(n))) continue;
      std::vector<lockgroup::LockNode> nodes;
      for (lockgroup::NodeId id : next) nodes.push_back({id, endpoint(static_cast<int>(id))});
      const lockgroup::LockTable& table = n.driver->service().table();
      const Status s =
          n.driver->service().change_members(std::move(nodes), table.members_version(), local(n), {.answer = false});
      world_.record("lockd " + std::to_string(i) + " proposes members " + names + ": " + s.to_string());
      if (s.is_ok()) ++member_changes_proposed_;
      after_input(i);
      return;
    }
  }

  // The negative control: the operator writes the new members into the
  // cluster file and restarts the nodes one by one, outside the log. Nodes
  // then disagree on the members for a while.
  void edit_cluster_file(const lockgroup::Members& next, const std::string& names) {
    world_.record("the cluster file now names " + names + "; nodes restart one by one");
    file_members_ = next;
    for (int i = 1; i <= nodes_; ++i) {
      world_.at(world_.uniform(0, 20000), "restart lockd " + std::to_string(i) + " with the edited file",
                [this, i] { crash_lockd(i); });
    }
  }

  // A core's invariant broken (debug builds abort on them; here the seed is
  // reported), once per run.
  void report_invariant(const std::string& who, const std::string& problem) {
    if (problem.empty() || !invariants_broken_.insert(problem).second) return;
    violations_.push_back(who + " breaks an invariant: " + problem);
    world_.record(violations_.back());
  }

  void schedule_replica_restart(int r) {
    world_.at(world_.uniform(100, 10000), "restart replica " + std::to_string(r), [this, r] {
      if (!replicas_.up(r) && !replicas_.restart(r)) violations_.push_back("store does not open: " + replicas_.why());
    });
  }

  // ---- checkers over the lock group ----

  void check_lockd(int i) {
    Lockd& n = node(i);
    const lockgroup::PaxosNode& paxos = n.driver->service().node();
    // One value per slot, on every node.
    for (auto it = paxos.log().upper_bound(n.checked_through);
         it != paxos.log().end() && it->first <= paxos.applied_through(); ++it) {
      auto [chosen, fresh] = chosen_.emplace(it->first, hash64(it->second.value));
      if (chosen->second != hash64(it->second.value)) {
        violations_.push_back("slot " + std::to_string(it->first) + " chosen with two values (lockd " +
                              std::to_string(i) + ")");
      }
    }
    n.checked_through = std::max(n.checked_through, paxos.applied_through());
    // The cores' own invariants (debug builds abort on them; here the seed is reported).
    for (std::string problem : {paxos.check_invariants(), n.driver->service().table().check_invariants()}) {
      report_invariant("lockd " + std::to_string(i), problem);
    }
    check_grants(i);
    // At most one node believes it holds a valid master lease.
    std::vector<int> masters;
    for (int k = 1; k <= nodes_; ++k) {
      Lockd& other = node(k);
      if (other.driver && other.driver->service().is_master(local(other))) masters.push_back(k);
    }
    if (masters.size() > 1 && !two_masters_reported_) {
      two_masters_reported_ = true;  // once per run: it stays true for a while
      violations_.push_back("two masters at " + std::to_string(world_.now_ms()) + " ms: lockd " +
                            std::to_string(masters[0]) + " and " + std::to_string(masters[1]));
    }
    if (masters.size() == 1) epochs_.insert(node(masters[0]).driver->service().node().epoch());
    // A node removed from the group (or not yet in it) never serves.
    for (int k : masters) {
      if (!node(k).driver->service().node().is_member()) {
        report_invariant("lockd " + std::to_string(k), "master while not a member of the group");
      }
    }
    if (paxos.members() != last_members_[i]) {
      last_members_[i] = paxos.members();
      if (paxos.applied_through() > 0 && !paxos.members().empty()) ++member_views_changed_;
    }
    bool master_now = n.driver->service().is_master(local(n));
    if (master_now != n.was_master) {
      n.was_master = master_now;
      world_.record("lockd " + std::to_string(i) + (master_now ? " is master, epoch " : " is no longer master, epoch ") +
                    std::to_string(paxos.epoch()));
    }
  }

  // Tokens and lock-delays, against records kept over every node and reboot
  // (tests/sim/lock_checkers.h). Every step that applies slots on a node ends
  // in check_lockd, so the first node to apply a slot tells when it was applied.
  void check_grants(int i) {
    Lockd& n = node(i);
    const lockgroup::PaxosNode& paxos = n.driver->service().node();
    const lockgroup::LockTable& table = n.driver->service().table();
    while (first_applied_ms_.size() < paxos.applied_through()) first_applied_ms_.push_back(world_.now_ms());
    // A snapshot past what was seen (a restore, or the master compacting just
    // now): the table may show grants from any earlier slot.
    const bool restored = paxos.snapshot_slot() > n.observed_through;
    if (restored || paxos.applied_through() != n.observed_through) {  // else the table is as last seen
      tokens_.observe(i, table, restored ? 0 : n.observed_through, paxos.applied_through());
      n.observed_through = paxos.applied_through();
      for (const auto& [name, lock] : table.locks()) {
        if (!lock.holders.empty()) lock_delays_.granted(name, lock.token, world_.now_ms());
      }
    }
    replay_for_lock_delays(i);
  }

  // Hands the lock-delay checker the chosen log, slot by slot. A slot's value
  // comes from any node that applied it and still has it in its log (the
  // master compacts its own right after applying); when no running node will
  // ever show it, the checker goes on from node i's table.
  void replay_for_lock_delays(int i) {
    while (replayed_through_ < first_applied_ms_.size()) {
      const lockgroup::Slot slot = replayed_through_ + 1;
      const std::string* value = chosen_value(slot);
      if (value == nullptr) {
        for (const Lockd& n : lockd_) {
          if (n.driver && n.driver->service().node().applied_through() < slot) return;  // it may show it later
        }
        lock_delays_.restart_from(node(i).driver->service().table());
        replayed_through_ = node(i).driver->service().node().applied_through();
        continue;
      }
      if (!value->empty()) {  // empty: a new master's no-op
        auto batch = lockgroup::decode_batch(*value);
        if (!batch.is_ok()) {
          violations_.push_back("slot " + std::to_string(slot) + " holds no batch: " + batch.status().to_string());
        } else {
          lock_delays_.apply(batch.value(), first_applied_ms_[slot - 1]);
        }
      }
      replayed_through_ = slot;
    }
  }

  const std::string* chosen_value(lockgroup::Slot slot) const {
    for (const Lockd& n : lockd_) {
      if (!n.driver || n.driver->service().node().applied_through() < slot) continue;
      const auto& log = n.driver->service().node().log();
      if (auto it = log.find(slot); it != log.end()) return &it->second.value;
    }
    return nullptr;
  }

  // ---- faults ----

  void schedule_faults() {
    world_.at(1000, "faults", [this] {
      if (healed_) return;
      if (world_.chance(o_.lockd_crash_per_second)) crash_lockd(static_cast<int>(world_.uniform(1, nodes_)));
      // Drawn only when asked for, so that other runs' seeds replay as before.
      if (o_.member_change_per_second > 0 && world_.chance(o_.member_change_per_second)) change_members();
      if (world_.chance(o_.master_stop_per_second)) stop_master();
      if (world_.chance(o_.replica_crash_per_second)) {
        int r = static_cast<int>(world_.uniform(0, static_cast<uint64_t>(replicas_.size() - 1)));
        if (!replicas_.up(r)) {
        } else if (o_.lmdb_stores && world_.chance(0.5)) {
          replicas_.crash_in_next_commit(r, world_.uniform(1, 8));
        } else {
          replicas_.crash(r);
          schedule_replica_restart(r);
        }
      }
      if (world_.chance(o_.isolate_per_second)) {
        // Mostly a lockd node (often the master), sometimes a client.
        int victim = world_.chance(0.7) ? kLockdBase + static_cast<int>(world_.uniform(1, nodes_))
                                        : session_node(static_cast<int>(world_.uniform(0, o_.clients - 1)));
        world_.isolate(victim, world_.uniform(1000, 20000));
      }
      schedule_faults();
    });
  }

  // ---- clients ----

  SimClient& cl(int c) { return clients_[static_cast<size_t>(c)]; }
  int session_node(int c) { return kSessionBase + c * 1000 + static_cast<int>(cl(c).incarnation % 1000); }

  // Runs `action` now, or when the client's pause ends.
  void as_client(int c, const std::string& what, std::function<void()> action) {
    SimClient& me = cl(c);
    if (world_.now_ms() < me.paused_until) {
      world_.at(me.paused_until - world_.now_ms(), what, std::move(action));
      return;
    }
    action();
  }

  void open_session(int c) {
    SimClient& me = cl(c);
    // A new session comes with a new socket: replies meant for the old one never reach it.
    world_.attach(session_node(c), [](int, const std::string&) {});
    ++me.incarnation;
    world_.attach(session_node(c), [this, c](int from, const std::string& bytes) { client_receive(c, from, bytes); });
    const uint64_t ttl = session_ttl();
    world_.record("client " + std::to_string(c) + " opens a session, ttl " + std::to_string(ttl));
    // A client's first session knows the first nodes only, and learns the
    // spares from the group once they are members. A later one is a client
    // started again, with a cluster file the operator kept up to date: it
    // names every node (as the edited file does when members change outside
    // the log).
    const bool first = me.incarnation == 1 && !o_.broken_members_outside_log;
    const std::vector<std::string> known(endpoints_.begin(), first ? endpoints_.begin() + o_.lockd : endpoints_.end());
    me.session = std::make_unique<client::LockSession>(
        client::LockSessionOptions{.nodes = known.size(),
                                   .request_timeout_ms = 1000,
                                   .grace_ms = o_.timing.client_grace_ms,
                                   .max_drift_ppm = o_.timing.max_clock_drift_ppm,
                                   .session_lease_ms = ttl,
                                   .broken_lease_from_reply = o_.broken_clients_lease_from_reply},
        local(me));
    me.session->set_endpoints(known);
    me.session_nodes = known.size();
    me.session_tick_at = UINT64_MAX;
    me.phase = SimClient::Phase::kOpening;
    me.held.reset();
    me.granting.reset();
    if (me.cas) {
      if (!me.cas->write_sent) cas_.no_effect(me.cas->entry);
      me.cas.reset();
    }
    pump_session(c);
  }

  // The lease a new session asks for: often the cluster's default (0), else its
  // own, from the shortest the group allows (twice the heartbeat) to well past
  // the default, but still shorter than the longest pause.
  uint64_t session_ttl() {
    const uint64_t shortest = std::max(wire::kMinSessionLeaseMs, 2 * o_.timing.heartbeat_ms);
    switch (world_.uniform(0, 9)) {
      case 0:
      case 1:
      case 2:
      case 3:
        return 0;
      case 4:
        return shortest;
      default:
        return world_.uniform(shortest, o_.pause_ms_max * 3 / 4);
    }
  }

  void client_receive(int c, int from, const std::string& bytes) {
    uint64_t incarnation = cl(c).incarnation;
    as_client(c, "paused delivery to client " + std::to_string(c), [this, c, from, bytes, incarnation] {
      SimClient& me = cl(c);
      if (from >= kLockdBase && from < kClientBase) {
        if (me.incarnation != incarnation || !me.session) return;
        auto reply = wire::decode_lock_reply(bytes, size_t{64} << 20);
        if (!reply.is_ok()) return;
        world_.record("client " + std::to_string(c) + " <- lockd " + std::to_string(from - kLockdBase) + " #" +
                      std::to_string(reply.value().id) + " " + std::string(code_name(reply.value().status.code())) +
                      " epoch " + std::to_string(reply.value().epoch) + " master " +
                      std::to_string(reply.value().master));
        const auto& nodes = me.session->endpoints();
        auto at = std::find(nodes.begin(), nodes.end(), endpoint(from - kLockdBase));
        if (at == nodes.end()) return;  // never asked
        me.session->on_reply(static_cast<size_t>(at - nodes.begin()), reply.value(), local(me));
        pump_session(c);
      } else {
        auto reply = wire::decode_reply(bytes, wire::Limits{});
        if (!reply.is_ok()) return;
        world_.record("client " + std::to_string(c) + " <- replica " + std::to_string(from) + " " +
                      describe(reply.value()));
        auto at = std::find(me.view_nodes.begin(), me.view_nodes.end(), from);
        if (at == me.view_nodes.end()) return;
        me.lane->on_frame(static_cast<size_t>(at - me.view_nodes.begin()), bytes, world_.now_ms());
        pump_store(c);
      }
    });
  }

  void pump_session(int c) {
    SimClient& me = cl(c);
    if (!me.session) return;
    client_nodes_learnt_ += me.session->endpoints().size() - me.session_nodes;
    me.session_nodes = me.session->endpoints().size();
    for (auto& out : me.session->take_outgoing()) {
      world_.send(session_node(c), kLockdBase + lockd_at(me.session->endpoints().at(out.node)),
                  wire::encode_lock_request(out.request));
    }
    for (auto state : me.session->take_events()) {
      world_.record("client " + std::to_string(c) + " session " + std::string(client::state_name(state)));
      if (state == client::SessionState::kExpired) ++expired_sessions_;
    }
    for (auto& done : me.session->take_done()) call_done(c, done);
    if (!me.session) return;
    if (me.phase == SimClient::Phase::kOpening && me.session->state() == client::SessionState::kSafe) {
      me.phase = SimClient::Phase::kIdle;
      next_action(c, world_.uniform(0, 500));
    }
    if (me.session->state() == client::SessionState::kExpired && me.phase != SimClient::Phase::kDone &&
        me.phase != SimClient::Phase::kFencing && me.phase != SimClient::Phase::kWriting &&
        me.phase != SimClient::Phase::kCasReading && me.phase != SimClient::Phase::kCasWriting && me.ops.empty()) {
      open_session(c);  // a new session; the old one's leases are void
      return;
    }
    uint64_t next = me.session->next_timer_ms();
    if (next == client::LockSession::kNever) return;
    uint64_t at = std::max(me.clock.global(next), world_.now_ms() + 1);
    if (at >= me.session_tick_at) return;
    me.session_tick_at = at;
    uint64_t incarnation = me.incarnation;
    world_.at(at - world_.now_ms(), "tick session " + std::to_string(c), [this, c, incarnation] {
      as_client(c, "paused session tick " + std::to_string(c), [this, c, incarnation] {
        SimClient& s = cl(c);
        if (s.incarnation != incarnation || !s.session) return;
        if (s.session_tick_at > world_.now_ms()) return;
        s.session_tick_at = UINT64_MAX;
        s.session->tick(local(s));
        pump_session(c);
      });
    });
  }

  void pump_store(int c) {
    SimClient& me = cl(c);
    std::vector<client::Completion> completed = me.lane->flush(world_.now_ms());
    report_invariant("client " + std::to_string(c) + "'s coordinator", me.coordinator().check_invariants());
    for (auto& done : completed) store_done(c, done);
    if (replacer_ && follow_view(c)) return pump_store(c);
    auto next = me.coordinator().next_deadline_ms();
    if (next && *next < me.store_tick_at) {
      me.store_tick_at = *next;
      world_.at(*next - std::min(*next, world_.now_ms()), "tick store " + std::to_string(c), [this, c] {
        as_client(c, "paused store tick " + std::to_string(c), [this, c] {
          SimClient& s = cl(c);
          if (s.store_tick_at > world_.now_ms()) return;
          s.store_tick_at = UINT64_MAX;
          s.coordinator().on_tick(world_.now_ms());
          pump_store(c);
        });
      });
    }
  }

  void next_action(int c, uint64_t delay) {
    uint64_t incarnation = cl(c).incarnation;
    world_.at(delay, "act client " + std::to_string(c), [this, c, incarnation] {
      as_client(c, "paused action " + std::to_string(c), [this, c, incarnation] {
        if (cl(c).incarnation == incarnation) act(c);
      });
    });
  }

  // The client's script: acquire a lock, fence, write under it, release.
  void act(int c) {
    SimClient& me = cl(c);
    if (healed_ && me.phase != SimClient::Phase::kDone) {
      me.phase = SimClient::Phase::kDone;
      return;
    }
    switch (me.phase) {
      case SimClient::Phase::kIdle: {
        if (me.cycles_left <= 0) {
          me.session->close(local(me));
          me.phase = SimClient::Phase::kDone;
          pump_session(c);
          return;
        }
        if (world_.chance(0.2)) {
          start_read(c, key_of(static_cast<int>(world_.uniform(0, o_.locks - 1))));
          next_action(c, world_.uniform(0, 300));
          return;
        }
        // Drawn only when asked for, so that other runs' seeds replay as before.
        if (o_.cas_keys > 0 && world_.chance(0.5)) return start_cas(c);
        std::string lock = lock_of(static_cast<int>(world_.uniform(0, o_.locks - 1)));
        uint64_t delay = world_.chance(0.5) ? 0 : world_.uniform(1, 15000);
        uint64_t wait = world_.chance(0.5) ? 0 : world_.uniform(500, 20000);
        me.phase = SimClient::Phase::kAcquiring;
        me.call = me.session->acquire(lock, LockMode::kExclusive, delay, wait, local(me));
        lock_delays_.requested(me.session->session(), me.call, delay);
        world_.record("client " + std::to_string(c) + " acquires " + lock + " delay " + std::to_string(delay) +
                      " wait " + std::to_string(wait));
        // Some waits are cancelled (AcquireOptions::cancel): whatever the group
        // grants them later must be given back, or the checkers see two holders.
        if (wait > 0 && world_.chance(0.2)) cancel_later(c, world_.uniform(0, wait));
        pump_session(c);
        return;
      }
      case SimClient::Phase::kWriting: {
        if (!me.held || !me.session->lease_valid(local(me))) {
          world_.record("client " + std::to_string(c) + " sees its lease is no longer valid");
          if (me.held && me.session->state() != client::SessionState::kExpired) {
            // The session may be safe again later, still holding the lock: give it back.
            me.writes_left = 0;
            return release(c, /*may_crash=*/false);
          }
          me.held.reset();
          me.phase = SimClient::Phase::kIdle;
          --me.cycles_left;
          next_action(c, world_.uniform(0, 300));
          return;
        }
        if (me.writes_left <= 0) return release(c);
        --me.writes_left;
        Held h = *me.held;
        // The classic failure: the lease was valid when checked, then the
        // process stops for longer than the lease, then it writes.
        if (world_.chance(o_.pause)) {
          me.paused_until = world_.now_ms() + world_.uniform(0, o_.pause_ms_max);
          world_.record("client " + std::to_string(c) + " pauses until " + std::to_string(me.paused_until));
        }
        as_client(c, "write after pause " + std::to_string(c), [this, c, h] { start_write(c, h); });
        return;
      }
      default:
        return;
    }
  }

  void cancel_later(int c, uint64_t after) {
    const uint64_t incarnation = cl(c).incarnation, call = cl(c).call;
    world_.at(after, "cancel client " + std::to_string(c), [this, c, incarnation, call] {
      as_client(c, "paused cancel " + std::to_string(c), [this, c, incarnation, call] {
        SimClient& me = cl(c);
        if (me.incarnation != incarnation || me.call != call || me.phase != SimClient::Phase::kAcquiring) return;
        world_.record("client " + std::to_string(c) + " cancels its acquire");
        me.session->cancel(call, local(me));
        pump_session(c);
      });
    });
  }

  void release(int c, bool may_crash = true) {
    SimClient& me = cl(c);
    if (may_crash && world_.chance(o_.client_crash)) {
      // The process dies holding the lock: no release, no KeepAlives; its
      // session expires and the lock-delay applies. It comes back later.
      world_.record("client " + std::to_string(c) + " crashes holding " + me.held->lock);
      me.session.reset();
      me.held.reset();
      me.phase = SimClient::Phase::kIdle;
      --me.cycles_left;
      world_.attach(session_node(c), [](int, const std::string&) {});
      ++me.incarnation;
      world_.at(world_.uniform(1000, 30000), "restart client " + std::to_string(c), [this, c] { open_session(c); });
      return;
    }
    std::string lock = me.held->lock;
    me.held.reset();  // invalid from the moment the release is sent
    me.phase = SimClient::Phase::kReleasing;
    me.call = me.session->release(lock, local(me));
    pump_session(c);
  }

  void call_done(int c, const client::CallDone& done) {
    SimClient& me = cl(c);
    if (done.call != me.call) return;
    world_.record("client " + std::to_string(c) + " call done: " + done.status.to_string());
    if (me.phase == SimClient::Phase::kAcquiring) {
      if (!done.status.is_ok() || !done.grant) {
        if (me.cas) {
          cas_.no_effect(me.cas->entry);
          me.cas.reset();
        }
        me.phase = SimClient::Phase::kIdle;
        next_action(c, world_.uniform(0, 1000));
        return;
      }
      const client::GrantInfo& g = *done.grant;
      ++grants_;
      check_grant(c, g);
      // A ConditionalStore whose LockClient was not given the store: no
      // fence on acquire, only the read's.
      if (me.cas && (o_.broken_cas_skips_fence || !o_.cas_acquire_fences)) {
        me.held = Held{g.lock, g.token, g.sequencer};
        return start_cas_read(c);
      }
      me.granting = Held{g.lock, g.token, g.sequencer};
      me.phase = SimClient::Phase::kFencing;
      // A pause inside acquire, between its grant and its fence: a later
      // holder may fence the lock first, and this fence must then fail.
      if (world_.chance(o_.pause_before_fence)) {
        me.paused_until = world_.now_ms() + world_.uniform(0, o_.pause_ms_max);
        world_.record("client " + std::to_string(c) + " pauses before its fence until " +
                      std::to_string(me.paused_until));
      }
      const uint64_t incarnation = me.incarnation;
      as_client(c, "fence after pause " + std::to_string(c), [this, c, incarnation] {
        SimClient& self = cl(c);
        if (self.incarnation != incarnation || self.phase != SimClient::Phase::kFencing || !self.granting) return;
        const Held& g = *self.granting;
        history_.fences.push_back({c, g.lock, g.token, world_.now_ms(), 0, Code::kTimeout});
        client::OpId op = self.coordinator().start_fence(Fence{g.lock, g.token, g.sequencer}, world_.now_ms());
        self.ops[op] = {SimClient::Kind::kFence, history_.fences.size() - 1, Fence{g.lock, g.token, g.sequencer}};
        pump_store(c);
      });
    } else if (me.phase == SimClient::Phase::kReleasing) {
      me.phase = SimClient::Phase::kIdle;
      --me.cycles_left;
      next_action(c, world_.uniform(0, 1000));
    }
  }

  // No exclusive grant while another client still considers an earlier grant
  // of the lock valid (its session safe and its local deadline ahead). A
  // client that crashed holding a lock is lock-delay's to protect:
  // check_grants judges the grants that follow its expiry.
  // A grant to client c while another client holds the lock with a valid
  // lease: the lock group granted over a valid lease (a larger token), or two
  // clients now hold valid leases. A grant older than the other's (a reply the
  // network held back while c's session expired and the lock went on) is
  // neither when c's own lease is not valid: its fence will find the newer
  // floor (the history check "superseded grant handed out").
  void check_grant(int c, const client::GrantInfo& g) {
    world_.record("client " + std::to_string(c) + " granted " + g.lock + " token " + std::to_string(g.token));
    SimClient& me = cl(c);
    const bool mine_valid = me.session && me.session->lease_valid(local(me));
    for (int d = 0; d < o_.clients; ++d) {
      SimClient& other = cl(d);
      if (d == c || !other.session) continue;
      for (const auto* h : {&other.held, &other.granting}) {
        if (*h && (*h)->lock == g.lock && other.session->lease_valid(local(other)) &&
            (g.token > (*h)->token || mine_valid)) {
          violations_.push_back("client " + std::to_string(c) + " granted " + g.lock + " token " +
                                std::to_string(g.token) + " at " + std::to_string(world_.now_ms()) +
                                " ms while client " + std::to_string(d) + " holds a valid lease with token " +
                                std::to_string((*h)->token));
        }
      }
    }
  }

  void start_write(int c, const Held& h) {
    SimClient& me = cl(c);
    std::string key = key_of(std::stoi(h.lock.substr(4)));
    std::string value = "c" + std::to_string(c) + "-" + std::to_string(++me.counter);
    history_.writes.push_back({c, key, value, false, h.lock, h.token, world_.now_ms(), 0, Code::kTimeout, {}});
    client::OpId op =
        me.coordinator().start_write(key, value, false, Fence{h.lock, h.token, h.sequencer}, world_.now_ms());
    me.ops[op] = {SimClient::Kind::kWrite, history_.writes.size() - 1, Fence{h.lock, h.token, h.sequencer}};
    world_.record("client " + std::to_string(c) + " writes " + key + " token " + std::to_string(h.token));
    pump_store(c);
  }

  // With a fence: a fenced read (QuorumStore::get under a lease).
  void start_read(int c, const std::string& key, bool cas = false, const Fence& fence = {}) {
    SimClient& me = cl(c);
    history_.reads.push_back({c, key, world_.now_ms(), 0, Code::kTimeout, false, "", {}});
    client::OpId op = me.coordinator().start_read(key, world_.now_ms(), fence);
    me.ops[op] = {.kind = SimClient::Kind::kRead, .record = history_.reads.size() - 1, .fence = fence, .cas = cas};
    pump_store(c);
  }

  // ---- compare-and-sets (cas_keys): ConditionalStore's steps ----

  // A read of a compare-and-set key now and then, else a compare-and-set of
  // it, expecting mostly what this client last read of it: take the key's
  // lock (ConditionalStore::lock_for), fenced read, compare, write under the
  // grant, release.
  void start_cas(int c) {
    SimClient& me = cl(c);
    const std::string key = cas_key(static_cast<int>(world_.uniform(0, o_.cas_keys - 1)));
    if (world_.chance(0.3)) {
      start_read(c, key);
      return next_action(c, world_.uniform(0, 300));
    }
    Expect expect = Expect::absent();
    std::optional<std::string> expect_value;
    if (auto seen = me.seen.find(key); seen != me.seen.end() && seen->second && world_.chance(0.8)) {
      expect = Expect::at(seen->second->second);
      expect_value = seen->second->first;
    }
    std::string value = "c" + std::to_string(c) + "-" + std::to_string(++me.counter);
    const size_t entry = cas_.call(key, c, expect_value, value, world_.now_ms());
    me.cas = SimClient::Cas{key, expect, value, entry};
    world_.record("client " + std::to_string(c) + " compare-and-sets " + key + " expecting " +
                  (expect.version ? expect.version->to_string() : "no value"));
    if (o_.broken_cas_without_lock) return start_cas_read(c);
    const std::string lock = ConditionalStore::lock_for(key);
    const uint64_t wait = world_.uniform(500, 20000);
    me.phase = SimClient::Phase::kAcquiring;
    me.call = me.session->acquire(lock, LockMode::kExclusive, 0, wait, local(me));
    lock_delays_.requested(me.session->session(), me.call, 0);
    world_.record("client " + std::to_string(c) + " acquires " + lock + " wait " + std::to_string(wait));
    pump_session(c);
  }

  // The read is fenced by the grant, as ConditionalStore reads: a write of
  // an earlier holder still in flight can no longer land where it did not
  // answer (the negative controls read unfenced).
  void start_cas_read(int c) {
    SimClient& me = cl(c);
    me.phase = SimClient::Phase::kCasReading;
    const bool fenced = !o_.broken_cas_without_lock && !o_.broken_cas_skips_fence && !o_.broken_cas_read_unfenced;
    start_read(c, me.cas->key, /*cas=*/true,
               fenced ? Fence{me.held->lock, me.held->token, me.held->sequencer} : Fence{});
  }

  void cas_compare(int c, const ReadResult& read) {
    SimClient& me = cl(c);
    if (!read.status.is_ok()) {
      cas_.no_effect(me.cas->entry);
      return finish_cas(c);
    }
    me.seen[me.cas->key] = read.found ? std::optional(std::make_pair(read.value, read.ts)) : std::nullopt;
    if (!client::conditional_compare(me.cas->expect, read).is_ok()) {
      cas_.stale(me.cas->entry, world_.now_ms());
      return finish_cas(c);
    }
    // QuorumStore's put under a lease writes only while the lease is valid.
    if (!o_.broken_cas_without_lock && !me.session->lease_valid(local(me))) {
      world_.record("client " + std::to_string(c) + " sees its lease is no longer valid");
      cas_.no_effect(me.cas->entry);
      return finish_cas(c);
    }
    me.phase = SimClient::Phase::kCasWriting;
    // The stall that conditional writes must survive: between the compare and the write.
    if (world_.chance(o_.pause)) {
      me.paused_until = world_.now_ms() + world_.uniform(0, o_.pause_ms_max);
      world_.record("client " + std::to_string(c) + " pauses until " + std::to_string(me.paused_until));
    }
    as_client(c, "compare-and-set after pause " + std::to_string(c), [this, c] { start_cas_write(c); });
  }

  void start_cas_write(int c) {
    SimClient& me = cl(c);
    SimClient::Cas& cas = *me.cas;
    const Fence fence = o_.broken_cas_without_lock ? Fence{} : Fence{me.held->lock, me.held->token, me.held->sequencer};
    history_.writes.push_back(
        {c, cas.key, cas.value, false, fence.lock, fence.token, world_.now_ms(), 0, Code::kTimeout, {}});
    client::OpId op = me.coordinator().start_write(cas.key, cas.value, false, fence, world_.now_ms());
    me.ops[op] = {.kind = SimClient::Kind::kWrite, .record = history_.writes.size() - 1, .fence = fence, .cas = true};
    cas.write_sent = true;
    world_.record("client " + std::to_string(c) + " writes " + cas.key + " token " + std::to_string(fence.token));
    pump_store(c);
  }

  void cas_written(int c, const WriteRecord& write) {
    SimClient& me = cl(c);
    if (write.result == Code::kOk) {
      cas_.written(me.cas->entry, write.ts, write.attempts, world_.now_ms());
      me.seen[me.cas->key] = std::make_pair(write.value, write.ts);
    } else if (write.result == Code::kFenced || write.result == Code::kStale) {
      cas_.no_effect(me.cas->entry);
    }  // else its outcome stays unknown
    finish_cas(c);
  }

  // Gives the key's lock back (ConditionalStore releases whatever happened).
  void finish_cas(int c) {
    SimClient& me = cl(c);
    me.cas.reset();
    if (o_.broken_cas_without_lock) {
      me.phase = SimClient::Phase::kIdle;
      --me.cycles_left;
    } else {
      me.writes_left = 0;
      me.phase = SimClient::Phase::kWriting;  // whose next action releases
    }
    next_action(c, world_.uniform(0, 200));
  }

  // Gives client c a lane to the replicas of its view, from world node `node`.
  void wire_lane(int c, int node) {
    SimClient& me = cl(c);
    me.view_nodes.clear();
    for (const std::string& e : me.view.endpoints) me.view_nodes.push_back(sim_replica_node(e));
    me.node = node;
    me.links = std::make_unique<SimLinks>(world_, replicas_, node, me.view_nodes);
    if (o_.replica_spares > 0) {
      me.links->observe = [this, c](size_t, const std::string& frame) { note_attempt(c, frame); };
    }
    client::CoordinatorOptions co{static_cast<int>(me.view.endpoints.size()), me.view.read_quorum, me.view.write_quorum,
                                  2000, 50};
    co.config = me.view.version;
    co.config_certificate = me.view.certificate;
    co.paused = me.view.paused;
    me.lane = std::make_unique<client::Lane>(*me.links, me.view.endpoints, co, *me.hlc, wire::Limits{});
    me.store_tick_at = UINT64_MAX;
    world_.attach(node, [this, c, node](int from, const std::string& bytes) {
      if (cl(c).node == node) client_receive(c, from, bytes);  // an old lane's replies are lost with it
    });
  }

  // The timestamps a write was sent with: one per replica set it was sent to
  // (the checker reads a moved write by the one a read returned).
  void note_attempt(int c, const std::string& frame) {
    auto request = wire::decode_request(frame, wire::Limits{});
    if (!request.is_ok()) return;
    const auto* w = std::get_if<wire::WriteRequest>(&request.value().body);
    if (w == nullptr || w->committed) return;
    for (const auto& [op, what] : cl(c).ops) {
      if (what.kind != SimClient::Kind::kWrite) continue;
      WriteRecord& rec = history_.writes[what.record];
      if (rec.key != w->key || rec.value != w->value) continue;
      if (std::find(rec.attempts.begin(), rec.attempts.end(), w->ts) == rec.attempts.end()) {
        rec.attempts.push_back(w->ts);
      }
    }
  }

  // Moves client c to the newest replica set the certificates its replicas
  // handed back give, and sends its calls in flight again there, as
  // QuorumStore does. False when it stays.
  bool follow_view(int c) {
    SimClient& me = cl(c);
    if (!take_newer_view(*me.lane, me.view)) return false;
    ++views_followed_;
    world_.record("client " + std::to_string(c) + " moves to replica set version " + std::to_string(me.view.version));
    wire_lane(c, kLaneBase + c * 1000 + (++me.moves % 1000));
    std::map<client::OpId, SimClient::Op> moved_ops;
    const uint64_t now = world_.now_ms();
    for (const auto& [op, what] : me.ops) {
      client::OpId again = 0;
      if (what.kind == SimClient::Kind::kWrite) {
        const WriteRecord& w = history_.writes[what.record];
        again = me.coordinator().start_write(w.key, w.value, w.tombstone, what.fence, now);
      } else if (what.kind == SimClient::Kind::kFence) {
        again = me.coordinator().start_fence(what.fence, now);
      } else {
        again = me.coordinator().start_read(history_.reads[what.record].key, now, what.fence);
      }
      moved_ops[again] = what;
      moved_ops[again].moved = true;
    }
    me.ops = std::move(moved_ops);
    return true;
  }

  // After the faults: the replacer's last change ends, and a set left paused
  // is ended by the lock group's master within its pause timeout.
  void settle_replica_set() {
    const uint64_t deadline = world_.now_ms() + 5 * 60 * 1000;
    while (!replacer_->unsettled().empty() && world_.now_ms() < deadline) world_.run(world_.now_ms() + 1000);
    if (std::string why = replacer_->unsettled(); !why.empty()) {
      violations_.push_back("the replica set is not settled 5 minutes after the faults ended: " + why);
    }
  }

  void store_done(int c, const client::Completion& done) {
    SimClient& me = cl(c);
    auto it = me.ops.find(done.op);
    if (it == me.ops.end()) return;
    const SimClient::Kind kind = it->second.kind;
    const size_t record = it->second.record;
    const bool moved = it->second.moved;
    const bool cas = it->second.cas;
    me.ops.erase(it);
    uint64_t now = world_.now_ms();
    if (kind == SimClient::Kind::kRead) {
      const ReadResult& read = std::get<ReadResult>(done.result);
      finish_read(history_.reads[record], read, now);
      if (is_cas_key(history_.reads[record].key)) cas_.read(history_.reads[record]);
      if (cas && me.phase == SimClient::Phase::kCasReading) cas_compare(c, read);
      return;
    }
    const auto& w = std::get<WriteResult>(done.result);
    world_.record("client " + std::to_string(c) + " store -> " + w.status.to_string());
    if (kind == SimClient::Kind::kFence) {
      history_.fences[record].end_ms = now;
      history_.fences[record].result = w.status.code();
      if (me.phase != SimClient::Phase::kFencing) return;
      // What LockClient::acquire decides from the fence (client/grant_fence.h).
      const Status usable = client::grant_fence_status(w, me.granting->lock, me.granting->token);
      world_.record("client " + std::to_string(c) + " grant after its fence: " + usable.to_string());
      if (me.cas && (usable.is_ok() || o_.broken_clients_ignore_failed_fence)) {
        history_.fences[record].lease = true;
        me.held = me.granting;
        me.granting.reset();
        return start_cas_read(c);
      }
      if (me.cas) {  // ConditionalStore returns the fence's error: nothing read or written
        cas_.no_effect(me.cas->entry);
        me.cas.reset();
      }
      if (usable.is_ok() || o_.broken_clients_ignore_failed_fence) {
        history_.fences[record].lease = true;
        me.held = me.granting;  // acquire returns only now
        me.writes_left = static_cast<int>(world_.uniform(1, 4));
        me.phase = SimClient::Phase::kWriting;
      } else {
        me.held = me.granting;
        me.writes_left = 0;  // could not fence: give the lock back
        me.phase = SimClient::Phase::kWriting;
      }
      me.granting.reset();
      next_action(c, world_.uniform(0, 200));
      return;
    }
    WriteRecord& rec = history_.writes[record];
    rec.end_ms = now;
    rec.result = (moved ? client::answer_of_resent_write(w) : w).status.code();
    rec.ts = w.ts;
    if (cas && me.phase == SimClient::Phase::kCasWriting) return cas_written(c, rec);
    if (me.phase == SimClient::Phase::kWriting) next_action(c, world_.uniform(0, 200));
  }

  LockSimOptions o_;
  World world_;
  ClusterKey key_;
  // lmdb_stores: the lockd nodes' directories, on the simulated disk that
  // replicas_ sets up (declared first: removed after every store closed).
  std::unique_ptr<TempDir> lockd_dir_;
  ReplicaSet replicas_;
  lockgroup::PeerAuth peer_auth_;  // reads what the lockd nodes sign, for the trace
  int nodes_ = o_.lockd + o_.lockd_spares;  // lockd processes, spares included
  lockgroup::Members members_;  // the first members
  lockgroup::Members file_members_;  // broken_members_outside_log: what the cluster file says
  std::map<int, lockgroup::Members> last_members_;
  uint64_t member_changes_proposed_ = 0, member_views_changed_ = 0, client_nodes_learnt_ = 0;
  std::vector<std::string> endpoints_;
  std::vector<Lockd> lockd_;
  std::vector<SimClient> clients_;
  History history_;
  CasHistory cas_;
  std::vector<std::unique_ptr<Adversary>> adversaries_;
  AdversaryCounters adversary_counters_;
  std::unique_ptr<LockGroupRecord> record_;  // replica_spares: the replacer's way to the record
  std::unique_ptr<Replacer> replacer_;
  uint64_t views_followed_ = 0;
  std::map<lockgroup::Slot, uint64_t> chosen_;
  std::set<uint64_t> epochs_;
  std::vector<std::string> violations_;
  TokenChecker tokens_;
  LockDelayChecker lock_delays_;
  std::vector<uint64_t> first_applied_ms_;  // slot s: when some node first applied it, at [s - 1]
  lockgroup::Slot replayed_through_ = 0;       // the lock-delay checker has the log through here
  uint64_t grants_ = 0, expired_sessions_ = 0, lockd_power_losses_in_sync_ = 0;
  bool healed_ = false;
  bool two_masters_reported_ = false;
  std::set<std::string> invariants_broken_;  // each reported once per run
};

}  // namespace

LockSimResult run_lock_sim(const LockSimOptions& options) { return LockSim(options).run(); }

}  // namespace palisade::sim
