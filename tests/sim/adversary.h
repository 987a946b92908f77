// The lock simulation's adversary (issue #23): a process on the simulated
// network that does not follow the protocol. It has no cluster key. It sees
// every frame on the wire (World::tap: until CurveZMQ encrypts the sockets,
// anyone on the network can), so it holds genuine sequencers of every lock,
// which later get superseded, and genuine signed lockd peer frames. At random
// times it sends:
//  - forged lockd peer frames: a captured one with a byte flipped, or with a
//    field changed under its old MAC, or a new one with random fields, sealed
//    under a key of its own or not at all. A lockd node must drop them all;
//  - captured lockd peer frames again, to their node or to another;
//  - writes whose sequencer does not grant their lock and token: another
//    lock's, another token's, one signed with its own key, one flipped;
//  - writes, plain or committed (repairs), with new values, under a genuine
//    sequencer that was superseded when it sent them (a fence of the lock with
//    a larger token had completed), then commits of them;
//  - a write of a new value to one replica only, pending then committed by a
//    `commit` (the commit hole), or committed at once (a repair);
//  - captured replica requests again, to their replica or another.
// Every value it writes is new and recorded (History::adversary), with why no
// read may ever return it; history.h's check() reports one that is read.
// Every choice comes from the world's RNG, so a seed still fixes the run.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/hybrid_clock.h"
#include "wire/replica_protocol.h"
#include "auth/cluster_key.h"
#include "lockgroup/peer_auth.h"
#include "tests/sim/history.h"
#include "tests/sim/replica_set.h"
#include "tests/sim/world.h"

namespace palisade::sim {

// What the adversaries of a run did, and what became of it.
struct AdversaryCounters {
  uint64_t peer_forged = 0;                // forged peer frames sent
  uint64_t peer_forged_dropped = 0;        // of them, received by a running lockd node and dropped
  uint64_t peer_forged_taken = 0;          // ... and taken as a peer's: a violation
  uint64_t peer_replayed = 0;              // captured peer frames sent again
  uint64_t peer_replays_misaddressed = 0;  // received by a node they were not addressed to, refused
  uint64_t peer_replays_stale = 0;         // received by their node, dropped as not newer than the last
  uint64_t peer_replays_refused = 0;       // refused by the node's checks (LockService::on_peer)
  uint64_t peer_replays_taken = 0;         // taken (answers a duplicate cannot harm, or after a reboot)
  uint64_t values = 0;                     // values written (History::adversary)
  uint64_t writes = 0;                     // write requests sent with them
  uint64_t commits = 0;                    // commit requests sent for them
  uint64_t replica_replays = 0;            // captured replica requests sent again
  uint64_t refused = 0;                    // its writes refused: fenced, stale or bad_sequencer
  uint64_t bad_sequencer = 0;              // of them, bad_sequencer
  uint64_t stored = 0;                     // its writes answered ok
  uint64_t commits_applied = 0;            // its commits answered applied
};

class Adversary {
 public:
  struct Setup {
    int index = 0;
    int node = 0;  // its world node
    int replicas = 3;  // world nodes 0 .. replicas-1, spares included
    int write_quorum = 2;
    int lockd_base = 100;  // lockd node n (1..lockd) is world node lockd_base + n
    int lockd = 3;
    uint64_t group_hash = 0;
    std::string group;
    std::vector<std::string> locks;
    std::function<std::string(const std::string& lock)> key_of;
    // The largest token of `lock` whose fence has completed (0: none): a
    // token below it is superseded, and W replicas' floors say so.
    std::function<uint64_t(const std::string& lock)> fenced_token;
    // Whether it sends commits and committed writes (repairs) at all.
    bool commits = true;
    // A repairer runs (replica set changes' fills): a current holder's write
    // that reached one replica has an unknown outcome, which a paused fill
    // may complete (docs/anti-entropy.md). Its one-replica writes then use
    // superseded grants only, which the fenced replicas' floors keep out.
    bool repairer_runs = false;
  };

  Adversary(World& world, Setup setup, History& history, AdversaryCounters& counters);

  // Every frame sent on the network (World::tap).
  void observe(int from, int to, const std::string& bytes);
  // A frame sent to it: replicas' replies.
  void receive(int from, const std::string& bytes);
  void start();
  void stop() { stopped_ = true; }

 private:
  struct PeerFrame {
    int to = 0;  // lockd id
    std::string bytes;
  };
  struct Captured {
    int to = 0;  // replica
    std::string bytes;
  };
  enum class Sent { kWrite, kCommit };

  void schedule();
  void act();
  void forge_peer();
  void replay_peer();
  void wrong_sequencer();
  void superseded();
  void one_replica();
  void replay_replica();

  const std::string& pick_lock();
  std::string new_value() { return "x" + std::to_string(s_.index) + "-" + std::to_string(++values_); }
  // Records a new value; returns its write with a fresh timestamp.
  wire::WriteRequest new_write(const std::string& lock, uint64_t token, std::string sequencer, bool committed,
                               std::string why);
  void send_write(int replica, const wire::WriteRequest& w);
  void send_commit(int replica, const wire::WriteRequest& w);
  void commit_later(std::vector<int> replicas, const wire::WriteRequest& w);
  int lockd_node(int id) const { return s_.lockd_base + id; }
  int random_lockd() { return static_cast<int>(world_.uniform(1, static_cast<uint64_t>(s_.lockd))); }

  World& world_;
  Setup s_;
  History& history_;
  AdversaryCounters& counters_;
  SkewedClock wall_;
  HybridClock hlc_;
  ClusterKey own_key_;  // not the cluster key
  lockgroup::PeerAuth own_auth_;
  bool stopped_ = false;
  uint64_t values_ = 0;
  uint64_t next_id_ = uint64_t{1} << 48;
  uint64_t config_ = 0;  // the newest replica set version a client named: its requests name it too
  uint64_t seen_peer_ = 0, seen_replica_ = 0;
  // lock -> token -> sequencer text, of every grant seen on the wire
  std::map<std::string, std::map<uint64_t, std::string>> sequencers_;
  std::deque<PeerFrame> peer_frames_;    // the last captured, a few of many
  std::deque<Captured> replica_frames_;  // likewise
  std::map<uint64_t, Sent> in_flight_;   // request id -> what it was
  std::map<uint64_t, std::string> written_;  // write request id -> its value
  // The receipts its writes earned, by value: sent with its commits and
  // committed writes, as a modified client would (fewer than W, or the rule
  // would let a read return it).
  std::map<std::string, wire::Certificate> receipts_;
};

}  // namespace palisade::sim
