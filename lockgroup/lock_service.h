// The lock service of one palisade-lockd node, sans-I/O (docs/design.md "Lock group"):
// it answers client requests, runs the PaxosNode that replicates the lock table,
// and, while master, keeps the session leases, lock-delays and waits on its own
// monotonic clock and ends them with logged commands.
//
// Driver contract (the daemon's loop and the simulator both follow it): feed
// requests, peer messages and ticks; call flush() once per loop turn (it
// proposes the commands batched so far: group commit); send
// take_early_peer_messages() if it likes; commit the storage; call synced();
// then send take_peer_messages() and take_replies(). If the commit fails, drop
// the outputs and rebuild the service from storage.
//
// Thread safety: none; one thread owns a service.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "wire/lock_protocol.h"
#include "auth/cluster_key.h"
#include "auth/sequencer_signer.h"
#include "base/random.h"
#include "lockgroup/lock_events.h"
#include "lockgroup/lock_table.h"
#include "lockgroup/paxos_node.h"

namespace palisade::lockgroup {

struct LockServiceOptions {
  PaxosOptions paxos;              // members, timing and the negative control
  std::map<NodeId, std::string> endpoints;  // the cluster file's, for nodes the membership does not name
  std::string group;               // the lock group id, in every sequencer
  ClusterKey key;  // the group's sequencer key is derived from it
  uint64_t session_lease_ms = 12000;  // for sessions that do not choose their own
  size_t snapshot_every = 10000;   // applied slots between snapshots
  size_t max_in_flight = 4;        // slots proposed and not yet chosen
  size_t max_batch = 4096;         // commands per slot
  uint64_t seed = 0;               // command tags
  // A replica set paused this long under one master is made serving again
  // (a replacement that did not finish: docs/design.md "The replica set").
  uint64_t replica_pause_timeout_ms = 60000;
  // The cluster file's [[replica]] list (version 0, config/cluster_keys.h's
  // file_replica_set): while the table records no set, get_replicas serves
  // it signed, so that a client whose file names only the lock group finds
  // the replicas before the first change of the set. Empty: nothing served.
  wire::ReplicaSet file_replicas{};
  // Negative control for the simulator: a new master's first slot is an
  // empty no-op, as before epochs, so an expiry an older master timed still
  // applies when recovery chooses it after a newer master renewed the session.
  bool broken_no_master_epoch = false;
};

// A request from a client; `route` is the driver's handle to answer it.
// `identity`: who sent it (the CURVE identity; empty on plaintext links): a
// session is used only by the identity that opened it. `sees_all`: the status
// lists every lock, else only those the identity's sessions hold.
struct ClientRequest {
  uint64_t route = 0;
  wire::LockRequest request;
  std::string identity{};
  bool sees_all = true;
};
struct ClientReply {
  uint64_t route = 0;
  wire::LockReply reply;
};

class LockService {
 public:
  static Result<std::unique_ptr<LockService>> start(const LockServiceOptions& options, PaxosStorage& storage,
                                                    uint64_t now_ms);

  void on_request(ClientRequest request, uint64_t now_ms);
  // Ok, or why the message was refused: a value that is not a batch, a
  // snapshot that does not restore or would lower the grant counter, a ballot
  // or slot out of range. A refused message changes nothing.
  Status on_peer(const PeerMessage& message, uint64_t now_ms);
  void tick(uint64_t now_ms);
  // Proposes the batched commands (when master and the pipeline has room).
  void flush(uint64_t now_ms);

  // A planned stop: a master hands over (PaxosNode::hand_over) and answers
  // what it has pending with not_master; false when not master. The driver
  // then finishes its turn as usual, so that the step-down leaves.
  bool hand_over(uint64_t now_ms);

  // The storage committed: this node's own accepts count as votes now.
  void synced(uint64_t now_ms);

  std::vector<PeerMessage> take_early_peer_messages() { return node_->take_early_messages(); }
  std::vector<PeerMessage> take_peer_messages() { return node_->take_messages(); }
  std::vector<ClientReply> take_replies() { return std::exchange(replies_, {}); }
  // What this node applied as master since the last call, for the log.
  std::vector<LockEvent> take_events() { return std::exchange(events_, {}); }
  uint64_t next_timer_ms() const;

  const PaxosNode& node() const { return *node_; }
  const LockTable& table() const { return table_; }
  // Where `node` is reached: the membership's address, else the cluster file's ("" when unknown).
  std::string address_of(NodeId node) const;
  // Replaces LockServiceOptions::endpoints (the cluster file read again).
  void set_endpoints(std::map<NodeId, std::string> endpoints) { options_.endpoints = std::move(endpoints); }
  // Master only: proposes `nodes` as the lock group's members
  // (docs/design.md "Membership"), when no other change is under way and
  // `version` is the table's members_version(). The change takes effect once
  // chosen; the table's members() then name them.
  // Whom a proposed command answers once applied.
  struct Pending {
    uint64_t route = 0;
    uint64_t request_id = 0;
    uint64_t session = 0;
    bool answer = true;  // false: the master's own command (expiry, delay end), or nobody to answer
    uint64_t members_version = 0;  // open_session: the membership version the client knows
  };
  // `pending`: whom to answer once the change is applied, or dropped because
  // a majority of the new members did not promise in time (unavailable).
  Status change_members(std::vector<LockNode> nodes, uint64_t version, uint64_t now, Pending pending);
  bool is_master(uint64_t now_ms) const { return node_->is_master(now_ms); }
  // Lock-table commands this master proposed (or batched to propose) that the
  // log has not chosen and applied yet: the lock service's queue. 0 on a follower.
  size_t pending_commands() const { return pending_.size(); }

 private:
  LockService(const LockServiceOptions& options, std::unique_ptr<PaxosNode> node);

  // A command waiting for its slot to be chosen, and whom to answer.
  struct Timer {
    uint64_t at = 0;
    std::string lock;
    uint64_t session = 0;  // wait timers
    Token token = 0;       // delay timers
  };

  // Runs after every input: applies what was chosen, tracks mastership.
  void settle(uint64_t now);
  void apply(const Delivery& delivery, uint64_t now);
  void became_master(uint64_t now);
  void lost_mastership();
  void propose(Command command, Pending pending);
  void set_deadline(SessionId session, uint64_t at);
  // The session's lease length: its own choice, else session_lease_ms.
  uint64_t lease_of(SessionId session) const;
  // Ok, or bad_request naming the range, for the lease an open_session asks for.
  Status check_lease_request(uint64_t lease_ms) const;
  void drop_session(SessionId session);
  void answer(const Pending& p, wire::LockReply reply);
  void answer_grant(const Pending& p, const Grant& grant, uint64_t now);
  void note_grant(const Grant& grant, bool again = false);
  wire::LockReply reply_to(uint64_t request_id, Status status) const;
  // Sessions that the master has seen run out: their expiry is proposed once.
  void expire_sessions(uint64_t now);
  void run_timers(uint64_t now);
  // Proposes the paused replica set serving again replica_pause_timeout_ms
  // after this node, as master, first saw it paused (a new master starts the
  // time again: it may have missed the old one's).
  void end_long_pause(uint64_t now);
  // The request's epoch check and session check (it exists, is live, and is
  // `identity`'s); ok when it may go on.
  Status check_session(uint64_t epoch, uint64_t session, std::string_view identity, uint64_t now) const;
  void handle_status(const ClientRequest& r);
  // The config certificate of the table's replica set, else of the file's
  // list (version 0); "" while neither has replicas.
  std::string replica_set_certificate() const;
  // Stale: a set_replicas that replaces `version`, which is not the table's.
  Status stale_replica_set(uint64_t version) const;
  // The members, with their keys, when the table's membership is newer than
  // version `known` (a client's): how long-running clients follow the group.
  void tell_members(wire::LockReply& reply, uint64_t known) const;
  void handle_check_sequencer(const ClientRequest& r, const wire::CheckSequencerRequest& m);

  LockServiceOptions options_;
  SequencerSigner signer_;
  SequencerVerifier verifier_;
  std::unique_ptr<PaxosNode> node_;
  LockTable table_;
  Random rng_;  // request tags; base/random.h
  bool master_ = false;

  // Master-only, in memory (a new master starts them afresh).
  std::map<SessionId, uint64_t> deadlines_;  // session -> lease end, local clock
  std::set<std::pair<uint64_t, SessionId>> by_deadline_;
  std::set<SessionId> expiring_;             // expiry proposed, not applied yet
  std::vector<Timer> delay_timers_;
  std::vector<Timer> wait_timers_;
  uint64_t paused_version_ = 0;  // the paused replica set whose time runs, 0: none
  uint64_t pause_deadline_ = 0;  // when it ends
  std::map<uint64_t, Pending> pending_;      // command tag -> whom to answer
  std::map<std::pair<SessionId, std::string>, Pending> waiting_;  // queued acquires
  std::vector<TaggedCommand> batch_;
  uint64_t staged_tag_ = 0;  // the last membership change proposed
  uint64_t staged_dropped_ = 0;  // node_->staged_dropped() as last seen
  uint64_t snapshot_members_version_ = 0;  // table_.members_version() at the last compaction

  std::vector<ClientReply> replies_;
  std::vector<LockEvent> events_;
};

}  // namespace palisade::lockgroup
