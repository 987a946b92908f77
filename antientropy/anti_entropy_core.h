// The anti-entropy session (docs/anti-entropy.md): sans-I/O. It turns tree,
// leaf and read replies from the replicas it compares into the next requests:
// descend into differing nodes, list differing leaves, then per differing key
// decide by the fence rules what to copy, commit, purge, fence or drop. It
// never touches sockets or clocks: the wall-clock time for gc_grace comes in
// with the config.
//
// Thread safety: none; one thread owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "wire/replica_protocol.h"
#include "antientropy/anti_entropy.h"

namespace palisade::client {

struct AntiEntropyConfig {
  int replicas = 2;      // compared: indexes 0 .. replicas-1
  // Targets: indexes replicas .. replicas+targets-1. They get the floors and the
  // settled versions, but count for nothing: not in N, in W or in any decision.
  int targets = 0;
  int cluster_size = 2;  // N
  int write_quorum = 2;  // W
  std::optional<uint64_t> gc_grace_ms{};
  uint64_t now_wall_ms = 0;  // when the run started, for gc_grace
  bool dry_run = false;
  size_t window = 64;  // requests in flight per replica
  std::string cluster_id{};  // named by every request (base/cluster_id.h); empty: none
  uint64_t config = 0;  // the replica set version every request names
  uint64_t target_config = 0;  // the version requests to targets name
  // The replicas compared are paused (they take no more writes), so a pending
  // version can gain no copy: only the replicas not heard from could hold more.
  bool paused = false;
  // Negative control for the simulator: targets are not given the fence
  // floors (a joining replica would then take a superseded holder's writes).
  bool broken_targets_skip_floors = false;
};

struct AntiEntropySend {
  int replica;
  wire::ReplicaRequest request;
};

class AntiEntropyCore {
 public:
  explicit AntiEntropyCore(AntiEntropyConfig config);

  // The requests to send now (at most `window` in flight per replica).
  std::vector<AntiEntropySend> take_sends();
  void on_reply(int replica, const wire::ReplicaReply& reply);
  // Request `id` got no answer in time: the replica drops out of the run.
  void on_unreachable(int replica, uint64_t id);
  // Nothing left to send or wait for.
  bool done() const;
  // The report so far; the traffic fields are the I/O driver's to fill.
  AntiEntropyReport& report() { return report_; }
  bool reachable(int replica) const { return alive_[replica]; }
  // The replica refused a repair (a copy, commit, fence or purge).
  bool refusing(int replica) const { return refusing_[replica]; }

 private:
  enum class Kind { kTree, kLeaf, kRead, kRepair, kReadMany, kCopyMany };
  struct Ticket {
    Kind kind;
    uint64_t item;
    int replica;
  };
  // Digests of nodes at one level, asked of every replica.
  struct TreeBatch {
    uint32_t level;
    std::vector<uint64_t> nodes;
    int range;  // -1: spans ranges (levels 0 to 2)
    std::vector<std::optional<std::vector<wire::TreeNode>>> replies;
    int waiting = 0;
  };
  // Entries of leaves, asked of every replica; a replica that stops short is asked the rest.
  struct LeafBatch {
    std::vector<uint64_t> leaves;
    int range;
    std::vector<size_t> listed;  // per replica: leaves listed so far
    std::vector<std::vector<wire::LeafEntry>> entries;
    int waiting = 0;
  };
  // One differing key: what its replicas hold, read before deciding.
  struct KeyTask {
    std::string key;
    int range;
    std::vector<std::optional<wire::LeafEntry>> entries;  // per replica; nullopt: absent or not heard
    std::vector<std::optional<wire::ReplicaReply>> reads;
    int waiting = 0;
  };

  // A repair copy waiting to go out in a copy_many, and the range it counts against.
  struct CopyItem {
    int range;
    wire::Copy copy;
  };
  // A sent read_many (the key tasks, in the order of its keys) or copy_many.
  struct ManyBatch {
    std::vector<uint64_t> keys;
    std::vector<CopyItem> copies;
  };

  uint64_t send(int replica, wire::ReplicaRequestBody body, Kind kind, uint64_t item);
  // Turns the reads and copies gathered per replica into read_many and
  // copy_many requests (or single ones, for a replica that predates them).
  void flush_many();
  void on_read_many(uint64_t item, int replica, const wire::ReplicaReply* reply);
  void on_copy_many(uint64_t item, int replica, const wire::ReplicaReply* reply);
  void start_work(int range);
  void finish_work(int range);
  void finish_ranges(uint32_t level);

  void ask_tree(uint32_t level, std::vector<uint64_t> nodes, int range);
  void ask_leaves(std::vector<uint64_t> leaves, int range);
  void on_tree(uint64_t item, int replica, const wire::ReplicaReply* reply);
  void on_leaf(uint64_t item, int replica, const wire::ReplicaReply* reply);
  void on_read(uint64_t item, int replica, const wire::ReplicaReply* reply);
  void on_repair(int replica, const wire::ReplicaReply& reply);
  // Counts a repair `replica` refused, `count` times.
  void refused(int replica, uint64_t count, const std::string& why);
  int everyone() const { return config_.replicas + config_.targets; }
  bool is_target(int replica) const { return replica >= config_.replicas; }
  void compare_tree(uint64_t item);
  void compare_leaves(uint64_t item);
  // Fences the replicas whose floor of the lock is below the highest.
  void compare_floor(const std::vector<const wire::LeafEntry*>& entries, int range);
  // Reads what deciding about the key needs: the value to copy from one
  // holder, or, when a pending version is unsettled, every replica with its floor.
  void compare_key(uint64_t item);
  // Decides by the fence rules and sends the repairs.
  void resolve(uint64_t item);
  // Sends a change (not in a dry run), counted against `range`.
  void repair(int replica, int range, wire::ReplicaRequestBody body);
  // Sends a committed copy of a version (not in a dry run), in a copy_many.
  void copy(int replica, int range, wire::Copy version);
  // Every replica of the cluster holds the key's same lone committed tombstone, older than gc_grace.
  bool gc_due(const std::vector<const wire::LeafEntry*>& entries, const std::vector<bool>& listed) const;

  AntiEntropyConfig config_;
  AntiEntropyReport report_;
  std::vector<bool> alive_;
  std::vector<std::deque<wire::ReplicaRequest>> queues_;
  std::vector<size_t> in_flight_;
  size_t queued_ = 0;
  uint64_t next_id_ = 1;
  uint64_t next_item_ = 1;
  std::map<uint64_t, Ticket> pending_;  // by request id
  std::map<uint64_t, TreeBatch> trees_;
  std::map<uint64_t, LeafBatch> leaves_;
  std::map<uint64_t, KeyTask> keys_;
  // Per replica: key tasks to read, copies to send, gathered until take_sends.
  std::vector<std::vector<uint64_t>> reads_waiting_;
  std::vector<std::vector<CopyItem>> copies_waiting_;
  std::map<uint64_t, ManyBatch> many_;  // by item
  std::vector<bool> single_only_;       // the replica answered unknown_type to a batch
  std::vector<bool> refusing_;  // the replica refused a repair
  std::vector<int> outstanding_;  // per range: work items not finished
};

}  // namespace palisade::client
