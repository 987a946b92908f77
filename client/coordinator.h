// The quorum coordinator (docs/design.md "Client", "Fence safety"): sans-I/O. It turns
// puts, deletes, fences and gets into requests to replicas, and replies and time
// into results. It never touches sockets, threads or clocks: `now_ms` comes in
// from the caller (any monotonic millisecond count), and write timestamps from
// the HybridClock it is given.
//
// Thread safety: none; one thread (the store's I/O thread or the simulator) owns it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "palisade/quorum_store.h"
#include "base/hybrid_clock.h"
#include "wire/replica_protocol.h"

namespace palisade::client {

struct CoordinatorOptions {
  int n = 3;
  int r = 2;
  int w = 2;
  uint64_t timeout_ms = 2000;
  uint64_t hedge_ms = 50;
  // Commits and purges nobody waits for are held back this long, or until the
  // next request to send, so a replica syncs them with the next write's batch.
  // 20 rather than 5: clients that put every few ms then rarely send a commit
  // alone (palisade-quorum-bench: +14% puts/s at 16 clients, bench/README.md).
  uint64_t lazy_send_ms = 20;
  // The cluster's id (base/cluster_id.h), named by every request; empty: none.
  std::string cluster_id{};
  // The version of the replica set every request names (docs/design.md "The
  // replica set"), and that set's config certificate, which a replica that
  // does not know the version yet (unknown_config) is given before the
  // request goes again. 0 and empty: the cluster file's list.
  uint64_t config = 0;
  std::string config_certificate{};
  // That set is paused (a change of the set): its replicas refuse writes and
  // fences (`unavailable`) until the next set, which they then name
  // (stale_config). Such a refusal counts as a request not sent: it goes
  // again every hedge_ms until the deadline, so a write waits out a pause of
  // some milliseconds instead of failing. Reads wait too: they ask every
  // replica again each hedge_ms and decide nothing, for a replica that has
  // not learnt the next set yet answers from before its writes (the one
  // that leaves may never learn it).
  bool paused = false;
  // Negative control for the simulator: reads send no repairs (neither
  // commits of pending copies nor copies to replicas without one).
  bool broken_skip_read_repair = false;
  // Negative control for the simulator: a scan returns, for each key listed,
  // the newest version any listing replica holds, pending or not, without
  // the read rules.
  bool broken_scan_trusts_listing = false;
};
// BadRequest unless 1 <= R, W <= N, R + W > N and W > N / 2.
Status validate(const CoordinatorOptions& options);

using OpId = uint64_t;

struct Send {
  int replica;
  wire::ReplicaRequest request;
};

// A read of the replicas' change feeds (Coordinator::start_feed): each
// replica's page, or nullopt when it did not answer one in time.
// The set it read is the coordinator's (its version, N and W): a read
// started with positions of another N reads nothing.
struct FeedResult {
  Status status;  // ok, or why no feed can be read (permission_denied, wrong_cluster)
  uint64_t config = 0;
  int n = 0, w = 0;
  std::vector<std::optional<wire::ReplicaReply>> pages{};
};

using OpResult = std::variant<WriteResult, ReadResult, ScanResult, FeedResult>;

struct Completion {
  OpId op;
  OpResult result;
};

class Coordinator {
 public:
  Coordinator(CoordinatorOptions options, HybridClock& clock);
  ~Coordinator();

  const CoordinatorOptions& options() const { return options_; }

  OpId start_write(std::string key, std::string value, bool tombstone, const Fence& fence, uint64_t now_ms);
  OpId start_fence(const Fence& fence, uint64_t now_ms);
  // With a fence (lock and token), a fenced read (QuorumStore::get): every
  // replica asked takes the fence before it answers.
  OpId start_read(std::string key, uint64_t now_ms, const Fence& fence = {});
  // A prefix read (QuorumStore::scan): lists a page of keys on R replicas,
  // then decides each with a read that starts from their answers.
  OpId start_scan(std::string prefix, std::string after, size_t limit, uint64_t now_ms);
  // A page of every replica's change feed (docs/protocol.md "changes"),
  // from `after[i]` on replica i (N of them): done when every replica
  // answered, or (unless `wait_for_all`) hedge_ms after the start with R
  // pages, or at the timeout, with those that did. Watchers merge them
  // (client/watch_state.h).
  OpId start_feed(std::string prefix, std::vector<uint64_t> after, uint64_t now_ms, bool wait_for_all = false);

  void on_reply(int replica, const wire::ReplicaReply& reply, uint64_t now_ms);
  // The request could not be sent (the replica is not connected).
  void on_unreachable(int replica, uint64_t request_id, uint64_t now_ms);
  void on_tick(uint64_t now_ms);

  // When on_tick must run next; nullopt when nothing waits on time.
  std::optional<uint64_t> next_deadline_ms() const;
  // What to send now: held-back commits and purges go with the next requests
  // (commits inside the writes to the same replica) or once they are due.
  std::vector<Send> take_sends();
  // Makes the held-back sends due now (a store closes).
  void release_held_back() { lazy_due_ms_ = 0; }
  std::vector<Completion> take_completions();
  // The config certificates replicas handed back since the last call, each
  // once: they keep a newer replica set than options().config
  // (stale_config). Checking one and moving to its set is the caller's job.
  std::vector<std::string> take_newer_configs() { return std::exchange(newer_configs_, {}); }
  // Operations not finished, plus one while sends are held back (a closing
  // store waits for both).
  size_t in_flight() const;
  // Requests of unfinished operations not yet answered: a finished
  // operation's are forgotten, answered or not.
  size_t pending_requests() const { return pending_.size(); }

  // "" when the state keeps the invariants every call keeps, whatever replicas
  // answer, else the first one it breaks: every pending request belongs to an
  // unfinished operation, which lists it; a write not finished still needs
  // acknowledgements and can still get them; a read's outstanding replicas and
  // repairs are pending requests. Walks every operation: the simulators call
  // it after every step, debug builds after every reply, refusal and tick.
  std::string check_invariants() const;

 private:
  // tests/unit/coordinator_test.cc breaks the state on purpose:
  // check_invariants() must report each invariant broken (its negative control).
  friend struct CoordinatorTestAccess;

  struct WriteOp;
  struct ReadOp;
  struct ScanOp;
  struct FeedOp;

  void note_time(uint64_t now_ms) { now_ms_ = std::max(now_ms_, now_ms); }
  uint64_t send(OpId op, int replica, wire::ReplicaRequestBody body, bool repair = false);
  void send_untracked(int replica, wire::ReplicaRequestBody body);
  // Gives the replica this set's certificate, at most once per hedge_ms.
  void install_config(int replica);
  void carry_commits();
  void on_write_reply(WriteOp& op, const wire::ReplicaReply& reply);
  void decide_write(OpId id, WriteOp& op, uint64_t now_ms);
  void finish_write(OpId id, WriteOp& op, Status status);
  void on_read_reply(OpId id, ReadOp& op, int replica, const wire::ReplicaReply* reply, bool repair);
  void advance_read(OpId id, ReadOp& op, uint64_t now_ms);
  // Walks the versions seen, newest first; true when the read could decide.
  bool decide_read(OpId id, ReadOp& op);
  void ask(OpId id, ReadOp& op, int replica, std::string floor_of);
  void choose(OpId id, ReadOp& op, const std::optional<wire::Version>& v);
  std::optional<wire::Certificate> certificate_of(const ReadOp& op, const wire::Version& v) const;
  void finish_read(OpId id, ReadOp& op, Status status);
  // coordinator_scan.cc
  void list_page(OpId id, ScanOp& op, uint64_t now_ms);
  void ask_scan(OpId id, ScanOp& op, int replica);
  void on_scan_reply(ScanOp& op, int replica, const wire::ReplicaReply* reply);
  void advance_scan(OpId id, ScanOp& op, uint64_t now_ms);
  // Starts a read of every key the page lists, from the answers.
  void read_page(OpId id, ScanOp& op, uint64_t now_ms);
  // A read of the scan's page ended.
  void on_key_read(OpId scan, const std::string& key, ReadResult result, uint64_t now_ms);
  // Every key of the page is read: its entries, then the next page or the end.
  void page_read(OpId id, ScanOp& op, uint64_t now_ms);
  void finish_scan(OpId id, ScanOp& op, Status status);
  std::string check_scans() const;
  // coordinator_feed.cc
  void ask_feed(OpId id, FeedOp& op, int replica);
  void on_feed_reply(FeedOp& op, int replica, const wire::ReplicaReply* reply);
  void advance_feed(OpId id, FeedOp& op, uint64_t now_ms);
  void finish_feed(OpId id, FeedOp& op, Status status);
  std::string check_feeds() const;
  void drop_pending(OpId op);

  CoordinatorOptions options_;
  HybridClock& clock_;
  uint64_t next_request_id_ = 1;
  OpId next_op_ = 1;
  struct Pending {
    OpId op;
    int replica;
    bool repair;  // a read's repair write, not its read
    std::vector<wire::CommitRequest> carried{};  // commits the request carries
  };
  std::map<uint64_t, Pending> pending_;  // by request id
  // The ids of each op's requests, so that finishing an op finds them without
  // a walk over every pending request. Some may be answered (gone) already.
  std::unordered_map<OpId, std::vector<uint64_t>> requests_of_;
  std::map<OpId, WriteOp> writes_;
  std::map<OpId, ReadOp> reads_;
  std::map<OpId, ScanOp> scans_;
  std::map<OpId, FeedOp> feeds_;
  std::vector<Send> sends_;
  std::vector<Send> lazy_sends_;  // commits and purges, held back
  // Per replica: false once it refused carried commits (older than them).
  std::vector<bool> carries_;
  uint64_t lazy_due_ms_ = 0;
  std::vector<std::optional<uint64_t>> installed_ms_;  // per replica: when install_config last went
  std::vector<std::string> newer_configs_;
  uint64_t now_ms_ = 0;           // the latest time any call brought
  std::vector<Completion> completions_;
};

}  // namespace palisade::client
