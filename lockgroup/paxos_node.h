// One node of the lock group's multi-Paxos (docs/design.md "Lock group"): acceptor,
// proposer and learner in one sans-I/O class. It takes peer messages and timer
// ticks with the local monotonic time, and returns messages to send and chosen
// values to apply; durable state goes through PaxosStorage.
//
// The driver's contract, after every call that may change state (receive, tick,
// propose, compact): send take_early_messages() at once if it likes; commit the
// storage; call on_synced(); only then send take_messages() and apply
// take_deliveries(). When the commit fails, drop the rest and restart the node
// from storage (it then acts like a node that crashed and came back).
//
// Early messages are the master's accepts under a ballot whose promise is
// already durable, and catch-up traffic: sending them before the master's own
// accept is synced lets its sync and the followers' overlap. The master counts
// its own vote only once on_synced() says the accept is on disk.
//
// Master lease: an acceptor that promises or accepts ballot b of node p promises
// no other node for master_lease_ms of its own clock. The master counts its lease
// from the moment it sent the message a majority answered, shortened by the
// clock drift bound, so it ends before any acceptor's promise does.
//
// Membership changes go through the log (docs/design.md "Membership"): a
// chosen value that changes the members takes effect at the next slot. The
// node learns which values do so from the state machine (members_after), and a
// master asks the new members for their promise before it proposes such a
// value, so that it holds its ballot and its lease in both memberships.
//
// Thread safety: none; one thread owns a node.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/random.h"
#include "palisade/status.h"
#include "lockgroup/paxos_messages.h"
#include "lockgroup/paxos_storage.h"

namespace palisade::lockgroup {

struct PaxosOptions {
  NodeId self = 0;
  // The members before any change went through the log (the cluster file's
  // lock group). A node that joins a running group passes none: it learns
  // them from the snapshot and the values it applies, and never campaigns
  // before it knows itself a member. Taken at the node's first start only:
  // storage keeps them (DurableState::first_members), and later starts use
  // what it kept, whatever they pass.
  Members members{};
  // The members from the next slot on, when a chosen value changes them (the
  // lock table's SetMembers); nullopt when it does not. Unset: membership
  // never changes.
  std::function<std::optional<Members>(std::string_view value)> members_after{};
  // The members a state machine snapshot records; nullopt when it records
  // none (no change went through the log before it).
  std::function<std::optional<Members>(std::string_view snapshot)> members_in_snapshot{};
  // The value of a new master's first own slot, given its ballot (the lock
  // table's MasterEpoch). Unset: an empty no-op.
  std::function<std::string(Ballot ballot)> ready_value{};
  uint64_t group = 0;           // messages of other groups are ignored
  uint64_t master_lease_ms = 4000;
  uint64_t heartbeat_ms = 500;
  uint64_t election_timeout_ms = 1000;
  uint64_t max_drift_ppm = 1000;
  uint64_t seed = 0;                   // election jitter
  // Must grow with every start of this node (and never be 0): the daemon uses
  // its wall clock in microseconds. Peers drop a prepare or catch_up_request
  // not newer, by (incarnation, serial), than the last one they took from
  // this node, and take only the entries of such an accept, so a replayed
  // message cannot renew a lease, hold off an election or ask for another
  // snapshot.
  uint64_t incarnation = 1;
  size_t max_entries_per_message = 64;
  // Negative control for the simulator: acceptors promise whoever asks and
  // nodes campaign while another master's lease runs. Unsafe.
  bool ignore_master_lease = false;
  // Negative control for the simulator: the master's lease lasts
  // master_lease_ms on its own clock, with no margin for a faster acceptor clock.
  bool broken_lease_without_drift_margin = false;
  // Negative control for the simulator: every start takes `members`, not the
  // first members storage kept. Unsafe once the cluster file changes.
  bool broken_first_members_from_options = false;
};

// A chosen value to apply, in slot order; or a snapshot of the state machine
// through `slot` that replaces it (catch-up from a peer, or at start).
struct Delivery {
  Slot slot = 0;
  std::string value;
  bool snapshot = false;
};

class PaxosNode {
 public:
  enum class Role { kFollower, kCandidate, kMaster };

  // Loads the durable state (its snapshot becomes the first delivery).
  static Result<std::unique_ptr<PaxosNode>> start(const PaxosOptions& options, PaxosStorage& storage,
                                                  uint64_t now_ms);

  // Ok, or why the message was refused (a ballot or slot out of range); a
  // refused message changes nothing. (An accept's entries absurdly far ahead
  // are not accepted, the rest of it is; a promise reporting such entries
  // sends the candidate to catch up.) Messages of another group, to another
  // node or from a non-member are ignored (ok), and so are stale or replayed
  // ones (stale_messages()).
  Status receive(const PeerMessage& message, uint64_t now_ms);
  void tick(uint64_t now_ms);
  // Master only: puts `value` into the next slot. False when not master.
  // A value that changes the members (members_after) waits, staged, until a
  // majority of the new members promised this master's ballot, then goes
  // into the next slot; it is dropped when they do not within
  // 2 * master_lease_ms + election_timeout_ms (staged_dropped() counts it).
  // False for such a value while another change is staged or not yet applied
  // (members_settled()).
  bool propose(std::string value, uint64_t now_ms);
  // The state machine through `slot` (applied already) is `snapshot`: the log
  // before it can go.
  void compact(Slot slot, std::string snapshot);

  // Master only (false otherwise): a planned stop. Stops being master at once,
  // gives back its own acceptor's promise, and tells every peer (StepDown) to
  // release the lease it promised for this ballot and that `successor` (the
  // follower heard from last) may campaign at once. Sent with take_messages(),
  // after every accept of the ballot: a peer takes no accept of it after the
  // step-down (an older serial is stale).
  bool hand_over(uint64_t now_ms);

  // The storage committed everything this node wrote so far.
  void on_synced();

  // "" when the node's state keeps the invariants every step keeps, else the
  // first one it breaks. Walks the log: the simulator calls it after every
  // event; debug builds after every receive, tick and proposal.
  std::string check_invariants() const;

  // Each message gets its incarnation and serial here: the driver sends them in
  // the order it takes them.
  std::vector<PeerMessage> take_early_messages();
  std::vector<PeerMessage> take_messages();
  std::vector<Delivery> take_deliveries();
  // When tick() next has something to do.
  uint64_t next_timer_ms() const;

  Role role() const { return role_; }
  // A master that holds a valid lease and has applied every slot before its
  // own first one: it may answer from its state machine.
  bool is_master(uint64_t now_ms) const {
    return role_ == Role::kMaster && ready_ && !walking_ && now_ms < lease_until_;
  }
  // The epoch clients see: the master's ballot, or the highest this node promised.
  Ballot epoch() const { return role_ == Role::kMaster ? ballot_ : promised_; }
  // Who this node believes is master (0: nobody known).
  NodeId master_hint() const;
  // The members as of the applied slot (empty: not known yet, a joining node).
  const Members& members() const { return config_; }
  // The members before any change went through the log, as storage kept them.
  const Members& first_members() const { return first_members_; }
  // Whether this node is one of them. A node that is not never campaigns; a
  // master that applies its own removal hands over and stops leading.
  bool is_member() const;
  // No membership change is staged or proposed and not yet applied.
  bool members_settled() const { return !staged_ && pending_configs_.empty(); }
  // Staged membership changes dropped because the new members did not promise in time.
  uint64_t staged_dropped() const { return staged_dropped_; }
  uint64_t master_lease_until() const { return lease_until_; }
  Slot applied_through() const { return applied_; }
  // Accepted entries above the snapshot; those up to applied_through() are chosen.
  const std::map<Slot, Entry>& log() const { return log_; }
  Slot snapshot_slot() const { return snapshot_slot_; }
  // Prepares, accepts, step-downs and catch-up requests not newer than the last one taken
  // from their sender (replays, or reordered): dropped, or for an accept, only
  // its entries taken.
  uint64_t stale_messages() const { return stale_messages_; }
  // Catch-up requests left unanswered because a snapshot went to that peer
  // less than half a heartbeat ago.
  uint64_t catch_ups_limited() const { return catch_ups_limited_; }
  // The promise on disk is at the highest round a peer accepts: this node can
  // neither lead (no higher ballot is allowed) nor follow (every accept is below
  // its promise). Only emptying or restoring its data directory fixes it.
  bool stuck_at_top_round() const { return stuck_at_top_round_; }
  // Slots proposed by this master and not yet chosen.
  size_t in_flight() const { return role_ == Role::kMaster ? next_slot_ - 1 - applied_ : 0; }

 private:
  // tests/unit/paxos_node_test.cc breaks the state on purpose: check_invariants()
  // must report each invariant broken (its negative control).
  friend struct PaxosNodeTestAccess;

  PaxosNode(const PaxosOptions& options, PaxosStorage& storage);

  void on_prepare(NodeId from, const Prepare& m, uint64_t now);
  void on_promise(NodeId from, const Promise& m, uint64_t now);
  void on_accept(NodeId from, const Accept& m, uint64_t now, bool is_fresh);
  void on_accepted(NodeId from, const Accepted& m, uint64_t now);
  void on_catch_up_request(NodeId from, const CatchUpRequest& m, uint64_t now);
  void on_step_down(NodeId from, const StepDown& m, uint64_t now);
  // The follower whose answer vouches for the latest send time (0: none).
  NodeId likely_successor() const;
  // Whether `message` is newer than the last prepare/accept (or catch-up
  // request) taken from its sender; if so it becomes the last one.
  bool fresh(const PeerMessage& message);
  std::vector<PeerMessage> stamp(std::vector<PeerMessage> messages);
  void on_catch_up(const CatchUp& m);
  // A node outside the members it knows asks one of them, or the node whose
  // ballot it promised, for the chosen values after its applied slot.
  void ask_chosen();
  // BadRequest when a field of `body` could push this node somewhere it cannot
  // leave: a ballot it could never campaign above, slots absurdly far ahead.
  Status check_ranges(const PeerBody& body) const;

  void campaign(uint64_t now);
  void become_master(uint64_t now);
  // The master fixes slots from next_slot_ on from the promises it holds: the
  // highest-ballot value among the promises of each slot's members (a no-op
  // when none), until no promise reports more; then a no-op of its own when
  // it is not ready yet. It stops at a slot whose members' promises are not a
  // majority, and asks them (ask_promises). `fresh`: slots to send too.
  void continue_walk(uint64_t now, std::vector<Slot> fresh);
  // Sends this master's prepare to `members` that have not promised its ballot
  // (again at most every heartbeat unless `force`).
  void ask_promises(const Members& members, uint64_t now, bool force);
  // A staged membership change goes into the next slot once its members promised.
  void try_staged(uint64_t now);
  // The members of `slot`: config_ changed by this master's values before it.
  const Members& members_at(Slot slot) const;
  // Every other node this node talks to: its members, and the new ones of a
  // change staged or in flight.
  std::vector<NodeId> peers() const;
  size_t promisers_in(const Members& members) const;
  // The lease a majority of `members` vouches for (0: none).
  uint64_t lease_of(const Members& members) const;
  // Recomputes the leases from ack_time_: step_lease_until_ over config_,
  // lease_until_ over every membership of a slot in flight as well.
  void update_lease();
  void step_down(uint64_t now);
  void lose_campaign(uint64_t now);
  void promise_ballot(Ballot ballot);
  void lease_to(NodeId node, uint64_t now);
  // This node's acceptor accepts `value` for `slot` in the master's ballot.
  void accept_own(Slot slot, std::string value);
  // Sends each follower the entries it has not acknowledged (or a heartbeat).
  void send_accepts(uint64_t now, const std::vector<Slot>& fresh);
  void note_ack(NodeId from, uint64_t seq);
  void advance_chosen();
  // A master whose own removal was applied hands over and steps down.
  void leave_if_removed();
  // Delivers the accepted entries of `ballot` through `chosen_through`.
  void learn(Slot chosen_through, Ballot ballot, NodeId master, uint64_t now);
  void deliver(const Entry& entry);
  void store_accepted(const Entry& entry);
  void restart_election_timer(uint64_t now);
  uint64_t next_seq(uint64_t now);
  void send(NodeId to, PeerBody body);
  void send_early(NodeId to, PeerBody body);
  std::vector<Entry> accepted_from(Slot from) const;

  PaxosOptions options_;
  PaxosStorage& storage_;
  uint64_t lease_local_ms_;  // the master's lease on its own clock, drift taken off
  Random rng_;  // base/random.h: the simulator's seeds replay with any compiler

  // Acceptor (promised_, log_ and the snapshot are durable).
  Ballot promised_ = 0;
  NodeId lease_owner_ = 0;  // the node this acceptor promised not to undercut; 0: nobody may
  uint64_t lease_owner_until_ = 0;
  Slot snapshot_slot_ = 0;
  std::string snapshot_;
  std::map<Slot, Entry> log_;  // accepted entries above snapshot_slot_

  // Learner.
  Slot applied_ = 0;
  Members config_;  // the members of slot applied_ + 1
  Members first_members_;
  NodeId master_hint_ = 0;
  uint64_t election_at_ = 0;
  uint64_t catch_up_sent_at_ = 0;
  bool catch_up_pending_ = false;
  uint64_t chosen_asks_ = 0;  // ask_chosen() asks its sources in turn

  // Proposer.
  Role role_ = Role::kFollower;
  Ballot ballot_ = 0;
  Ballot highest_seen_ = 0;
  uint64_t campaign_deadline_ = 0;
  std::map<NodeId, Promise> promises_;
  bool ready_ = false;
  Slot ready_slot_ = 0;  // the master's first own slot: ready once it is applied
  Slot next_slot_ = 1;
  std::map<Slot, std::set<NodeId>> votes_;  // unchosen slots -> acceptors that accepted them
  uint64_t seq_ = 0;
  std::map<uint64_t, uint64_t> sent_at_;    // message seq -> local send time
  std::map<NodeId, uint64_t> ack_time_;     // newest send time a node's reply vouches for
  uint64_t lease_until_ = 0;  // the master lease over every membership in flight, local clock
  uint64_t step_lease_until_ = 0;  // the lease over config_ alone: the master steps down past it
  bool walking_ = false;  // still fixing slots from promises (continue_walk)
  bool walk_needs_ready_slot_ = false;  // a new master's walk ends with its own no-op
  std::map<Slot, Members> pending_configs_;  // this master's slots above applied_ that change the members
  std::optional<std::string> staged_;  // a membership change waiting for its members' promises
  Members staged_members_;
  uint64_t staged_until_ = 0;
  uint64_t staged_dropped_ = 0;
  uint64_t asked_at_ = 0;  // when ask_promises last sent
  uint64_t now_ = 0;  // the time of the latest call that passed one
  uint64_t next_heartbeat_ = 0;

  // Replay guard: (incarnation, serial) of the newest message taken per sender.
  uint64_t serial_ = 0;
  std::map<NodeId, std::pair<uint64_t, uint64_t>> last_lead_;      // prepares, accepts and step-downs
  std::map<NodeId, std::pair<uint64_t, uint64_t>> last_catch_up_;  // catch-up requests
  std::map<NodeId, uint64_t> snapshot_sent_at_;                     // local time of the last snapshot sent
  uint64_t stale_messages_ = 0;
  uint64_t catch_ups_limited_ = 0;
  bool stuck_at_top_round_ = false;

  Ballot durable_promised_ = 0;      // promised_ as of the last on_synced()
  std::vector<Slot> unsynced_own_;    // this master's accepts not yet on disk: not yet its votes
  std::vector<PeerMessage> early_out_;
  std::vector<PeerMessage> out_;
  std::vector<Delivery> deliveries_;
};

}  // namespace palisade::lockgroup
