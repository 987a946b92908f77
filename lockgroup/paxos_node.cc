#include "lockgroup/paxos_node.h"

#include <algorithm>

#include "base/check.h"

namespace palisade::lockgroup {

namespace {

constexpr uint64_t kMillion = 1'000'000;
// How far past its applied slot a node takes accepted entries. A new master
// fills every slot up to the highest one a promise reported, so one entry
// absurdly far ahead would have it propose without end: a candidate that gets
// such a promise does not lead but catches up first (it is that far behind),
// and such an entry in an accept is not accepted (the master resends it; not
// accepting is always safe).
constexpr Slot kMaxSlotsAhead = Slot{1} << 20;
// No slot beyond this: applied_ + 1 must never wrap.
constexpr Slot kMaxSlot = Slot{1} << 62;

Status out_of_range(const std::string& what) { return Status(Code::kBadRequest, what); }

bool has(const Members& members, NodeId node) {
  return std::find(members.begin(), members.end(), node) != members.end();
}
size_t quorum_of(const Members& members) { return members.size() / 2 + 1; }

Status check_ballot(std::string_view name, Ballot b) {
  if (ballot_in_range(b)) return Status::ok();
  return out_of_range(std::string(name) + " " + std::to_string(b) + " has round " + std::to_string(ballot_round(b)) +
                      ", above the highest allowed " + std::to_string(kMaxRound));
}

}  // namespace

PaxosNode::PaxosNode(const PaxosOptions& options, PaxosStorage& storage)
    : options_(options),
      storage_(storage),
      // The acceptor's promise lasts master_lease_ms on its clock, which may run
      // max_drift_ppm slower than ours: end ours early enough (and 1 ms more for rounding).
      lease_local_ms_(
          options.broken_lease_without_drift_margin
              ? options.master_lease_ms
              : options.master_lease_ms * (kMillion - options.max_drift_ppm) / (kMillion + options.max_drift_ppm) - 1),
      rng_(options.seed ^ (uint64_t{options.self} * 0x9e3779b97f4a7c15ULL)) {}

Result<std::unique_ptr<PaxosNode>> PaxosNode::start(const PaxosOptions& options, PaxosStorage& storage,
                                                    uint64_t now_ms) {
  PALISADE_CHECK(std::is_sorted(options.members.begin(), options.members.end()) &&
                 std::adjacent_find(options.members.begin(), options.members.end()) == options.members.end());
  PALISADE_CHECK(options.heartbeat_ms > 0 && options.heartbeat_ms < options.master_lease_ms);
  auto state = storage.load();
  if (!state.is_ok()) return state.status();
  std::unique_ptr<PaxosNode> node(new PaxosNode(options, storage));
  DurableState& s = state.value();
  node->promised_ = s.promised;
  node->durable_promised_ = s.promised;
  node->highest_seen_ = s.promised;
  node->snapshot_slot_ = s.snapshot_slot;
  node->snapshot_ = std::move(s.snapshot);
  node->log_ = std::move(s.accepted);
  node->applied_ = s.snapshot_slot;
  if (!s.first_members || options.broken_first_members_from_options) {
    s.first_members = options.members;
    storage.set_first_members(options.members);  // committed with the node's first step
  }
  node->first_members_ = std::move(*s.first_members);
  node->config_ = node->first_members_;
  if (s.snapshot_slot > 0 && options.members_in_snapshot) {
    if (auto members = options.members_in_snapshot(node->snapshot_)) node->config_ = std::move(*members);
  }
  if (s.snapshot_slot > 0) node->deliveries_.push_back({s.snapshot_slot, node->snapshot_, true});
  // Whatever this node promised before it stopped is forgotten: it promises
  // nobody for a whole lease, which outlasts any promise it may have made.
  node->lease_owner_ = 0;
  node->lease_owner_until_ = now_ms + options.master_lease_ms;
  node->restart_election_timer(now_ms);
  return node;
}

NodeId PaxosNode::master_hint() const {
  if (role_ == Role::kMaster) return options_.self;
  return master_hint_;
}

bool PaxosNode::is_member() const { return has(config_, options_.self); }

const Members& PaxosNode::members_at(Slot slot) const {
  auto it = pending_configs_.lower_bound(slot);  // the first change at or after `slot`
  if (it == pending_configs_.begin()) return config_;
  return std::prev(it)->second;
}

std::vector<NodeId> PaxosNode::peers() const {
  std::set<NodeId> all(config_.begin(), config_.end());
  for (const auto& [slot, members] : pending_configs_) all.insert(members.begin(), members.end());
  if (staged_) all.insert(staged_members_.begin(), staged_members_.end());
  all.erase(options_.self);
  return {all.begin(), all.end()};
}

size_t PaxosNode::promisers_in(const Members& members) const {
  size_t n = 0;
  for (NodeId m : members) n += promises_.count(m);
  return n;
}

Status PaxosNode::check_ranges(const PeerBody& body) const {
  auto entries = [&](std::string_view name, const std::vector<Entry>& list, Slot limit) {
    for (const Entry& e : list) {
      if (Status s = check_ballot(std::string(name) + " ballot", e.ballot); !s.is_ok()) return s;
      if (e.slot > limit) {
        return out_of_range(std::string(name) + " slot " + std::to_string(e.slot) + " is beyond slot " +
                            std::to_string(limit) + " (applied through " + std::to_string(applied_) + ")");
      }
    }
    return Status::ok();
  };
  return std::visit(
      [&](const auto& m) -> Status {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Prepare>) return check_ballot("prepare ballot", m.ballot);
        if constexpr (std::is_same_v<T, Promise>) {
          if (Status s = check_ballot("promise ballot", m.ballot); !s.is_ok()) return s;
          if (Status s = check_ballot("promised ballot", m.promised); !s.is_ok()) return s;
          if (m.snapshot_slot > kMaxSlot) {
            return out_of_range("promise snapshot slot " + std::to_string(m.snapshot_slot) + " is beyond slot " +
                                std::to_string(kMaxSlot));
          }
          // Entries far ahead are no reason to refuse: on_promise catches up instead.
          return entries("accepted entry", m.accepted, kMaxSlot);
        }
        if constexpr (std::is_same_v<T, Accept>) return check_ballot("accept ballot", m.ballot);
        if constexpr (std::is_same_v<T, Accepted>) {
          if (Status s = check_ballot("accepted ballot", m.ballot); !s.is_ok()) return s;
          return check_ballot("promised ballot", m.promised);
        }
        if constexpr (std::is_same_v<T, CatchUpRequest>) return Status::ok();
        if constexpr (std::is_same_v<T, StepDown>) return check_ballot("step-down ballot", m.ballot);
        if constexpr (std::is_same_v<T, CatchUp>) {
          if (m.snapshot_slot > kMaxSlot) {
            return out_of_range("catch-up snapshot slot " + std::to_string(m.snapshot_slot) + " is beyond slot " +
                                std::to_string(kMaxSlot));
          }
          return entries("chosen entry", m.chosen, kMaxSlot);
        }
      },
      body);
}

Status PaxosNode::receive(const PeerMessage& message, uint64_t now_ms) {
  now_ = std::max(now_, now_ms);
  // Any node of the group is heard, members or not: views of the membership
  // differ while a change spreads, and one that lags learns it from the others.
  if (message.group != options_.group || message.to != options_.self || message.from == options_.self) {
    return Status::ok();
  }
  if (Status s = check_ranges(message.body); !s.is_ok()) return s;
  const bool is_fresh = fresh(message);
  if (!is_fresh) {
    ++stale_messages_;
    // Dropped, as the network may drop it; but a stale accept still brings
    // its entries (on_accept), so that reordering costs no resends.
    if (!std::holds_alternative<Accept>(message.body)) return Status::ok();
  }
  const NodeId from = message.from;
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Prepare>) on_prepare(from, m, now_ms);
        if constexpr (std::is_same_v<T, Promise>) on_promise(from, m, now_ms);
        if constexpr (std::is_same_v<T, Accept>) on_accept(from, m, now_ms, is_fresh);
        if constexpr (std::is_same_v<T, Accepted>) on_accepted(from, m, now_ms);
        if constexpr (std::is_same_v<T, CatchUpRequest>) on_catch_up_request(from, m, now_ms);
        if constexpr (std::is_same_v<T, CatchUp>) on_catch_up(m);
        if constexpr (std::is_same_v<T, StepDown>) on_step_down(from, m, now_ms);
      },
      message.body);
  PALISADE_DCHECK_INVARIANTS(check_invariants());
  return Status::ok();
}

bool PaxosNode::fresh(const PeerMessage& message) {
  // A prepare or accept renews the sender's lease and restarts the election
  // timer; a catch-up request may cost a whole snapshot. Each does so only
  // when newer than the last of its kind from that sender: a replay (the
  // frames are signed, not encrypted, and nothing else dates them) or a
  // message overtaken by a newer one does not. A step-down counts with them:
  // an accept sent before it arrives stale after it, and renews no lease the
  // step-down released. Other messages are answers that a duplicate cannot harm.
  std::map<NodeId, std::pair<uint64_t, uint64_t>>* last = nullptr;
  if (std::holds_alternative<Prepare>(message.body) || std::holds_alternative<Accept>(message.body) ||
      std::holds_alternative<StepDown>(message.body)) {
    last = &last_lead_;
  } else if (std::holds_alternative<CatchUpRequest>(message.body)) {
    last = &last_catch_up_;
  } else {
    return true;
  }
  const std::pair<uint64_t, uint64_t> stamp{message.incarnation, message.serial};
  auto [it, inserted] = last->try_emplace(message.from, stamp);
  if (inserted) return true;
  if (stamp <= it->second) return false;
  it->second = stamp;
  return true;
}

std::vector<PeerMessage> PaxosNode::stamp(std::vector<PeerMessage> messages) {
  for (PeerMessage& m : messages) {
    m.incarnation = options_.incarnation;
    m.serial = ++serial_;
  }
  return messages;
}

void PaxosNode::tick(uint64_t now) {
  now_ = std::max(now_, now);
  for (auto it = sent_at_.begin(); it != sent_at_.end() && it->second + 2 * options_.master_lease_ms < now;) {
    it = sent_at_.erase(it);
  }
  switch (role_) {
    case Role::kMaster:
      if (now >= step_lease_until_) {
        step_down(now);  // a majority stopped answering: another node may be master soon
        break;
      }
      if (staged_ && now >= staged_until_) {
        staged_.reset();  // its new members did not promise: the change is dropped
        ++staged_dropped_;
      }
      if (walking_) ask_promises(members_at(next_slot_), now, false);
      if (staged_) ask_promises(staged_members_, now, false);
      if (now >= next_heartbeat_) send_accepts(now, {});
      break;
    case Role::kCandidate:
      if (now >= campaign_deadline_) lose_campaign(now);
      break;
    case Role::kFollower:
      if (now >= election_at_ && !is_member()) {
        // Not a member (yet, or any more) as far as it knows: it never
        // campaigns, but it may have missed the change that made it one.
        ask_chosen();
        restart_election_timer(now);
      } else if (now >= election_at_) {
        bool leased_elsewhere = lease_owner_ != options_.self && now < lease_owner_until_;
        if (leased_elsewhere && !options_.ignore_master_lease) {
          // Wait out the promise, plus jitter so that the nodes do not all try at once.
          election_at_ = lease_owner_until_ +
                         rng_.uniform(0, options_.election_timeout_ms);
        } else {
          campaign(now);
        }
      }
      break;
  }
  PALISADE_DCHECK_INVARIANTS(check_invariants());
}

bool PaxosNode::propose(std::string value, uint64_t now_ms) {
  now_ = std::max(now_, now_ms);
  if (!is_master(now_ms)) return false;
  if (options_.members_after && !value.empty()) {
    if (std::optional<Members> members = options_.members_after(value)) {
      if (!members_settled()) return false;
      staged_ = std::move(value);
      staged_members_ = std::move(*members);
      staged_until_ = now_ms + 2 * options_.master_lease_ms + options_.election_timeout_ms;
      ask_promises(staged_members_, now_ms, true);
      try_staged(now_ms);
      PALISADE_DCHECK_INVARIANTS(check_invariants());
      return true;
    }
  }
  Slot slot = next_slot_++;
  accept_own(slot, std::move(value));
  send_accepts(now_ms, {slot});
  advance_chosen();
  PALISADE_DCHECK_INVARIANTS(check_invariants());
  return true;
}

std::string PaxosNode::check_invariants() const {
  // Acceptor: a promise only rises. (An entry may hold a ballot above it: a
  // chosen entry learnt by catch-up keeps the ballot it was chosen in, and
  // after a restart it is not known to be chosen.)
  if (durable_promised_ > promised_) return "the promise on disk is above the promise";
  if (promised_ > highest_seen_) return "the promise is above the highest ballot seen";
  if (ballot_ > promised_) return "its own ballot is above its promise";
  if (snapshot_slot_ > applied_) return "the snapshot is above the applied slot";
  for (const auto& [slot, entry] : log_) {
    const std::string where = "log slot " + std::to_string(slot) + ": ";
    if (entry.slot != slot) return where + "holds the entry of slot " + std::to_string(entry.slot);
    if (slot <= snapshot_slot_) return where + "not above the snapshot";
  }
  // Proposer: it leads only its own ballots, and counts votes only for slots not yet chosen.
  if (role_ != Role::kFollower && ballot_node(ballot_) != options_.self) return "leads another node's ballot";
  if (role_ != Role::kMaster && (staged_ || !pending_configs_.empty() || walking_)) {
    return "membership changes or a walk kept while not master";
  }
  if (!pending_configs_.empty() && pending_configs_.begin()->first <= applied_) {
    return "a membership change kept for an applied slot";
  }
  if (role_ == Role::kMaster) {
    if (next_slot_ <= applied_) return "a master's next slot is already applied";
    if (!pending_configs_.empty() && pending_configs_.rbegin()->first >= next_slot_) {
      return "a membership change kept for a slot not proposed";
    }
    if (ready_ && applied_ < ready_slot_) return "ready before its first own slot is applied";
    if (!votes_.empty() && votes_.begin()->first <= applied_) return "votes kept for an applied slot";
  }
  return {};
}

bool PaxosNode::hand_over(uint64_t now) {
  if (role_ != Role::kMaster) return false;
  const Ballot ballot = ballot_;
  const NodeId successor = likely_successor();
  // No longer master before anything leaves: the leases the peers release
  // were promised to this ballot, and nothing here relies on them any more.
  step_down(now);
  if (lease_owner_ == options_.self) lease_owner_until_ = now;
  if (successor == 0) return true;  // a group of one: nobody to tell
  for (NodeId m : config_) {
    if (m != options_.self) send(m, StepDown{.ballot = ballot, .successor = successor});
  }
  return true;
}

NodeId PaxosNode::likely_successor() const {
  NodeId best = 0;
  uint64_t best_time = 0;
  for (NodeId m : config_) {
    if (m == options_.self) continue;
    auto it = ack_time_.find(m);
    const uint64_t t = it == ack_time_.end() ? 0 : it->second;
    if (best == 0 || t > best_time) {
      best = m;
      best_time = t;
    }
  }
  return best;
}

void PaxosNode::compact(Slot slot, std::string snapshot) {
  PALISADE_CHECK(slot <= applied_);
  if (slot <= snapshot_slot_) return;
  storage_.put_snapshot(slot, snapshot);
  snapshot_slot_ = slot;
  snapshot_ = std::move(snapshot);
  log_.erase(log_.begin(), log_.upper_bound(slot));
}

std::vector<PeerMessage> PaxosNode::take_early_messages() { return stamp(std::exchange(early_out_, {})); }
std::vector<PeerMessage> PaxosNode::take_messages() { return stamp(std::exchange(out_, {})); }

void PaxosNode::on_synced() {
  durable_promised_ = promised_;
  for (Slot s : unsynced_own_) {
    auto it = votes_.find(s);
    if (role_ == Role::kMaster && it != votes_.end()) it->second.insert(options_.self);
  }
  unsynced_own_.clear();
  advance_chosen();
}
std::vector<Delivery> PaxosNode::take_deliveries() { return std::exchange(deliveries_, {}); }

uint64_t PaxosNode::next_timer_ms() const {
  switch (role_) {
    case Role::kMaster: {
      // A staged change or a walk asks its members again each heartbeat
      // (ask_promises), due even while proposals keep moving the heartbeat.
      const uint64_t ask_again = staged_ || walking_ ? asked_at_ + options_.heartbeat_ms : UINT64_MAX;
      return std::min({next_heartbeat_, step_lease_until_, staged_ ? staged_until_ : UINT64_MAX, ask_again});
    }
    case Role::kCandidate:
      return campaign_deadline_;
    case Role::kFollower:
      return election_at_;
  }
  return election_at_;
}

// ---- Acceptor ----

void PaxosNode::on_prepare(NodeId from, const Prepare& m, uint64_t now) {
  highest_seen_ = std::max(highest_seen_, m.ballot);
  // A member asked by a node outside its membership (one removed that did
  // not learn it) sends the chosen values too: once the node applies its
  // removal it stops campaigning.
  if (is_member() && !has(config_, from)) on_catch_up_request(from, {m.from_slot}, now);
  bool repeat = m.ballot == promised_ && ballot_node(m.ballot) == from;  // a duplicated prepare
  bool leased_elsewhere = lease_owner_ != from && now < lease_owner_until_ && !options_.ignore_master_lease;
  if (ballot_node(m.ballot) != from || (m.ballot <= promised_ && !repeat) || leased_elsewhere) {
    send(from, Promise{.ballot = m.ballot, .ok = false, .promised = promised_, .seq = m.seq});
    return;
  }
  if (role_ != Role::kFollower && ballot_ < m.ballot) step_down(now);
  promise_ballot(m.ballot);
  lease_to(from, now);
  restart_election_timer(now);
  send(from, Promise{.ballot = m.ballot,
                     .ok = true,
                     .promised = promised_,
                     .seq = m.seq,
                     .snapshot_slot = snapshot_slot_,
                     .accepted = accepted_from(m.from_slot)});
}

void PaxosNode::on_accept(NodeId from, const Accept& m, uint64_t now, bool is_fresh) {
  highest_seen_ = std::max(highest_seen_, m.ballot);
  // A ballot above the promise is a promise too, and would end the lease
  // this acceptor promised another node: only its prepare may do that. (Its
  // master got no majority of the members it leases to, or it would have
  // none: it counted members it did not know were replaced.)
  const bool leased_elsewhere = lease_owner_ != from && now < lease_owner_until_ && !options_.ignore_master_lease;
  if (ballot_node(m.ballot) != from || m.ballot < promised_ || (m.ballot > promised_ && leased_elsewhere)) {
    // Refused for a lease (one it promised, or its start-up wait): the sender
    // leads a newer ballot all the same, and clients may be sent to it.
    if (ballot_node(m.ballot) == from && m.ballot > promised_) master_hint_ = from;
    send(from, Accepted{.ballot = m.ballot, .ok = false, .promised = promised_, .seq = m.seq});
    return;
  }
  if (role_ != Role::kFollower) step_down(now);  // m.ballot >= promised_ >= our own ballot
  promise_ballot(m.ballot);
  master_hint_ = from;
  // A stale accept (a replay, or one overtaken by a newer prepare or accept
  // of this sender) renews no lease and restarts no timer, and its reply
  // carries no seq: it vouches for no send time of the master's.
  if (is_fresh) {
    lease_to(from, now);
    restart_election_timer(now);
  }
  Accepted reply{.ballot = m.ballot, .ok = true, .promised = promised_, .seq = is_fresh ? m.seq : 0};
  const Slot ahead = std::min(applied_ + kMaxSlotsAhead, kMaxSlot);
  for (const Entry& e : m.entries) {
    if (e.ballot != m.ballot || e.slot > ahead) continue;
    // A slot applied here is chosen, and a master only ever proposes the chosen
    // value for it: acknowledging it without storing is the same. An entry
    // already stored as is is not written again (a replay costs no sync).
    auto stored = log_.find(e.slot);
    if (e.slot > applied_ && (stored == log_.end() || !(stored->second == e))) store_accepted(e);
    reply.slots.push_back(e.slot);
  }
  learn(m.chosen_through, m.ballot, from, now);
  send(from, std::move(reply));
}

void PaxosNode::promise_ballot(Ballot ballot) {
  if (ballot == promised_) return;
  PALISADE_CHECK(ballot > promised_);
  promised_ = ballot;
  storage_.set_promised(ballot);
}

void PaxosNode::lease_to(NodeId node, uint64_t now) {
  lease_owner_ = node;
  lease_owner_until_ = now + options_.master_lease_ms;
}

void PaxosNode::store_accepted(const Entry& entry) {
  if (entry.slot <= snapshot_slot_) return;
  log_[entry.slot] = entry;
  storage_.put_accepted(entry);
}

std::vector<Entry> PaxosNode::accepted_from(Slot from) const {
  std::vector<Entry> entries;
  for (auto it = log_.lower_bound(from); it != log_.end(); ++it) entries.push_back(it->second);
  return entries;
}

// ---- Learner ----

void PaxosNode::learn(Slot chosen_through, Ballot ballot, NodeId master, uint64_t now) {
  while (applied_ < chosen_through) {
    auto it = log_.find(applied_ + 1);
    // Only an entry of the master's ballot is the value it says is chosen.
    if (it == log_.end() || it->second.ballot != ballot) {
      if (!catch_up_pending_ || now >= catch_up_sent_at_ + options_.heartbeat_ms) {
        catch_up_pending_ = true;
        catch_up_sent_at_ = now;
        send_early(master, CatchUpRequest{.from_slot = applied_ + 1});
      }
      return;
    }
    deliver(it->second);
  }
}

void PaxosNode::deliver(const Entry& entry) {
  PALISADE_CHECK(entry.slot == applied_ + 1);
  applied_ = entry.slot;
  deliveries_.push_back({entry.slot, entry.value, false});
  if (options_.members_after && !entry.value.empty()) {
    if (std::optional<Members> members = options_.members_after(entry.value)) config_ = std::move(*members);
  }
  pending_configs_.erase(applied_);
}

void PaxosNode::on_catch_up_request(NodeId from, const CatchUpRequest& m, uint64_t now) {
  CatchUp reply;
  Slot from_slot = m.from_slot;
  if (from_slot <= snapshot_slot_ && snapshot_slot_ > 0) {
    // The snapshot can be 64 MiB: at most one per peer every half heartbeat
    // (a learner asks again after a whole one when the answer got lost).
    auto sent = snapshot_sent_at_.find(from);
    if (sent != snapshot_sent_at_.end() && now < sent->second + options_.heartbeat_ms / 2) {
      ++catch_ups_limited_;
      return;
    }
    snapshot_sent_at_[from] = now;
    reply.snapshot_slot = snapshot_slot_;
    reply.snapshot = snapshot_;
    from_slot = snapshot_slot_ + 1;
  }
  // Only applied slots are known chosen here.
  for (auto it = log_.lower_bound(from_slot);
       it != log_.end() && it->first <= applied_ && reply.chosen.size() < options_.max_entries_per_message; ++it) {
    reply.chosen.push_back(it->second);
  }
  if (reply.snapshot_slot == 0 && reply.chosen.empty()) return;
  send_early(from, std::move(reply));  // chosen values: nothing here needs to be on this node's disk first
}

void PaxosNode::on_step_down(NodeId from, const StepDown& m, uint64_t now) {
  // Only a promise of that very ballot is released: a step-down of an older
  // ballot of the sender (a replay, or a late one) says nothing of a later one.
  if (ballot_node(m.ballot) != from || m.ballot != promised_) return;
  master_hint_ = 0;
  if (lease_owner_ != from) {
    // It restarted since it promised (and promises nobody for a lease): it
    // keeps that wait, which the step-down says nothing about.
    restart_election_timer(now);
    return;
  }
  lease_owner_until_ = now;
  if (m.successor == options_.self) {
    // Even before the change that made it a member reaches it: it leads the
    // members it knows, which fix that change, then the new ones. (Asking
    // for the change first, as ask_chosen does, costs a timeout.)
    campaign(now);
  } else {
    restart_election_timer(now);  // the successor goes first; if it does not, this node will
  }
}

void PaxosNode::on_catch_up(const CatchUp& m) {
  catch_up_pending_ = false;
  // Only a follower learns this way. A master that asked while it was a
  // follower needs no answer: it leads only once every promise it counts is
  // compacted no further than applied_, and its own accepts get those slots
  // chosen with the same values. Installing the snapshot now would drop slots
  // that votes_ and its proposals still refer to.
  const bool news = m.snapshot_slot > applied_ ||
                    (!m.chosen.empty() && m.chosen.front().slot <= applied_ + 1 && m.chosen.back().slot > applied_);
  // A candidate that gets chosen values it lacks is behind: it learns them
  // instead (a removed node learns so that it was removed).
  if (role_ == Role::kCandidate && news) lose_campaign(now_);
  if (role_ != Role::kFollower) return;
  if (m.snapshot_slot > applied_) {
    storage_.put_snapshot(m.snapshot_slot, m.snapshot);
    snapshot_slot_ = m.snapshot_slot;
    snapshot_ = m.snapshot;
    log_.erase(log_.begin(), log_.upper_bound(m.snapshot_slot));
    applied_ = m.snapshot_slot;
    if (options_.members_in_snapshot) {
      if (auto members = options_.members_in_snapshot(m.snapshot)) config_ = std::move(*members);
    }
    deliveries_.push_back({m.snapshot_slot, m.snapshot, true});
  }
  for (const Entry& e : m.chosen) {
    if (e.slot != applied_ + 1) continue;
    // Storing a chosen value is safe under any ballot: a later prepare finds
    // the chosen value as the highest-ballot one anyway.
    store_accepted(e);
    deliver(e);
  }
}

void PaxosNode::ask_chosen() {
  // The members it knows chose what came after its applied slot, and the
  // node whose ballot it promised last led it (a node that joins knows no
  // members yet). When the only nodes that know of a change are outside the
  // new members (a master that removed itself), no master is left to tell
  // them: each asks in turn, one a timeout, as a node that stays removed
  // does for ever.
  std::vector<NodeId> sources;
  for (NodeId m : config_) {
    if (m != options_.self) sources.push_back(m);
  }
  const NodeId led = ballot_node(promised_);
  if (led != 0 && led != options_.self && !has(config_, led)) sources.push_back(led);
  if (sources.empty()) return;
  send_early(sources[chosen_asks_++ % sources.size()], CatchUpRequest{.from_slot = applied_ + 1});
}

// ---- Proposer ----

void PaxosNode::lose_campaign(uint64_t now) {
  role_ = Role::kFollower;
  // This node's acceptor promised itself not to help anyone else for a lease.
  // It never became master, so nothing depends on that promise: give it up, or
  // rival candidates each hold their own acceptor and none gets a majority.
  if (lease_owner_ == options_.self) lease_owner_until_ = now;
  // Back off over a wider window, so that the rivals spread out.
  uint64_t t = options_.election_timeout_ms;
  election_at_ = now + t + rng_.uniform(0, 3 * t);
}

void PaxosNode::restart_election_timer(uint64_t now) {
  uint64_t t = options_.election_timeout_ms;
  election_at_ = now + t + rng_.uniform(0, t);
}

uint64_t PaxosNode::next_seq(uint64_t now) {
  sent_at_[++seq_] = now;
  return seq_;
}

void PaxosNode::send(NodeId to, PeerBody body) {
  out_.push_back(PeerMessage{.from = options_.self, .to = to, .group = options_.group, .body = std::move(body)});
}

void PaxosNode::send_early(NodeId to, PeerBody body) {
  early_out_.push_back(PeerMessage{.from = options_.self, .to = to, .group = options_.group, .body = std::move(body)});
}

void PaxosNode::campaign(uint64_t now) {
  uint64_t round = std::max(ballot_round(promised_), ballot_round(highest_seen_)) + 1;
  // Peers refuse rounds above kMaxRound (2^48 elections away from round 1), and
  // this node refuses peers' ballots above it; only a promise written to disk
  // before those checks existed gets here. Such a node can neither lead nor
  // follow: every accept it gets is below its promise, and it refuses them. It
  // must not wrap the round and abort; the driver tells the operator to stop
  // it (stuck_at_top_round()): emptying its directory would forget what it
  // accepted before it got stuck, which a later majority may need.
  if (round > kMaxRound) {
    stuck_at_top_round_ = true;
    restart_election_timer(now);
    return;
  }
  ballot_ = make_ballot(round, options_.self);
  highest_seen_ = ballot_;
  promise_ballot(ballot_);
  lease_to(options_.self, now);
  role_ = Role::kCandidate;
  ready_ = false;
  campaign_deadline_ = now + options_.election_timeout_ms;
  promises_.clear();
  ack_time_.clear();
  votes_.clear();
  lease_until_ = 0;
  step_lease_until_ = 0;
  master_hint_ = 0;
  uint64_t seq = next_seq(now);
  promises_[options_.self] = Promise{.ballot = ballot_,
                                     .ok = true,
                                     .promised = ballot_,
                                     .seq = seq,
                                     .snapshot_slot = snapshot_slot_,
                                     .accepted = accepted_from(applied_ + 1)};
  ack_time_[options_.self] = now;
  for (NodeId m : config_) {
    if (m != options_.self) send(m, Prepare{.ballot = ballot_, .from_slot = applied_ + 1, .seq = seq});
  }
  if (promisers_in(config_) >= quorum_of(config_)) become_master(now);
}

void PaxosNode::on_promise(NodeId from, const Promise& m, uint64_t now) {
  highest_seen_ = std::max(highest_seen_, m.promised);
  if (role_ == Role::kFollower || m.ballot != ballot_) return;
  if (!m.ok) {
    if (m.promised > ballot_) role_ == Role::kMaster ? step_down(now) : lose_campaign(now);
    return;  // else a lease elsewhere: other acceptors may still say yes
  }
  const Slot ahead = std::min(applied_ + kMaxSlotsAhead, kMaxSlot);
  const bool far_entry =
      std::any_of(m.accepted.begin(), m.accepted.end(), [&](const Entry& e) { return e.slot > ahead; });
  // The promiser compacted slots this node has not fixed, or accepted slots
  // too far ahead to fill: catch up before leading. (Dropping the far entries
  // instead would be unsafe: one of them may be chosen.) A master has fixed
  // the slots below next_slot_ (from promises of their own members, so with
  // their chosen values); one compacted past them is chosen with a value it
  // cannot know: it was elected by members it did not know were replaced.
  const Slot fixed_through = role_ == Role::kMaster ? next_slot_ - 1 : applied_;
  if (m.snapshot_slot > fixed_through || far_entry) {
    if (role_ == Role::kMaster) {
      step_down(now);
    } else {
      lose_campaign(now);
    }
    catch_up_pending_ = true;
    catch_up_sent_at_ = now;
    send(from, CatchUpRequest{.from_slot = applied_ + 1});
    return;
  }
  if (role_ == Role::kMaster) {
    // A member of a membership this master reached since it was elected
    // (continue_walk, a staged change): its promise lets the master fix that
    // membership's slots.
    if (promises_.count(from)) return;
    promises_[from] = m;
    note_ack(from, m.seq);
    if (walking_) {
      continue_walk(now, {});
    } else {
      try_staged(now);
    }
    return;
  }
  promises_[from] = m;
  note_ack(from, m.seq);
  if (promisers_in(config_) >= quorum_of(config_)) become_master(now);
}

void PaxosNode::become_master(uint64_t now) {
  role_ = Role::kMaster;
  master_hint_ = options_.self;
  ready_ = false;
  next_slot_ = applied_ + 1;
  pending_configs_.clear();
  walking_ = true;
  walk_needs_ready_slot_ = true;
  continue_walk(now, {});
}

void PaxosNode::continue_walk(uint64_t now, std::vector<Slot> fresh) {
  while (walking_) {
    // Copied: accept_own may add a change to pending_configs_.
    const Members members = members_at(next_slot_);
    if (promisers_in(members) < quorum_of(members)) {
      ask_promises(members, now, true);
      break;
    }
    // Every slot some promiser of these members accepted may have been chosen:
    // propose the value of the highest ballot again. Slots none of them
    // accepted were not chosen: fill them with no-ops.
    std::map<Slot, const Entry*> best;
    for (const auto& [node, promise] : promises_) {
      if (!has(members, node)) continue;
      for (const Entry& e : promise.accepted) {
        if (e.slot < next_slot_) continue;
        auto& b = best[e.slot];
        if (b == nullptr || e.ballot > b->ballot) b = &e;
      }
    }
    if (best.empty()) {
      walking_ = false;
      if (walk_needs_ready_slot_) {
        // A value of our own: once it is applied, so is everything before it.
        ready_slot_ = next_slot_++;
        accept_own(ready_slot_, options_.ready_value ? options_.ready_value(ballot_) : std::string());
        fresh.push_back(ready_slot_);
      }
      break;
    }
    const Slot last = best.rbegin()->first;
    while (next_slot_ <= last) {
      const Slot slot = next_slot_++;
      auto it = best.find(slot);
      accept_own(slot, it == best.end() ? std::string() : it->second->value);
      fresh.push_back(slot);
      if (pending_configs_.count(slot)) break;  // the slots after it have other members
    }
  }
  if (!walking_) promises_.clear();
  update_lease();
  if (!fresh.empty()) send_accepts(now, fresh);
  advance_chosen();
}

void PaxosNode::ask_promises(const Members& members, uint64_t now, bool force) {
  if (!force && now < asked_at_ + options_.heartbeat_ms) return;
  asked_at_ = now;
  if (has(members, options_.self) && !promises_.count(options_.self)) {
    // Its own acceptor promised this ballot when it campaigned.
    promises_[options_.self] =
        Promise{.ballot = ballot_, .ok = true, .promised = ballot_, .accepted = accepted_from(next_slot_)};
  }
  uint64_t seq = next_seq(now);
  for (NodeId m : members) {
    if (m == options_.self || promises_.count(m)) continue;
    send(m, Prepare{.ballot = ballot_, .from_slot = next_slot_, .seq = seq});
  }
}

void PaxosNode::try_staged(uint64_t now) {
  if (!staged_ || promisers_in(staged_members_) < quorum_of(staged_members_)) return;
  // The members of the slots after this one promised this ballot: the master
  // fixes those slots from their promises before it proposes anything else.
  const Slot slot = next_slot_++;
  accept_own(slot, std::move(*staged_));
  staged_.reset();
  walking_ = true;
  walk_needs_ready_slot_ = false;
  continue_walk(now, {slot});
}

void PaxosNode::step_down(uint64_t now) {
  role_ = Role::kFollower;
  ready_ = false;
  votes_.clear();
  promises_.clear();
  pending_configs_.clear();
  if (staged_) ++staged_dropped_;
  staged_.reset();
  walking_ = false;
  lease_until_ = 0;
  step_lease_until_ = 0;
  master_hint_ = 0;
  restart_election_timer(now);
}

void PaxosNode::accept_own(Slot slot, std::string value) {
  if (options_.members_after && !value.empty()) {
    if (std::optional<Members> members = options_.members_after(value)) pending_configs_[slot] = std::move(*members);
  }
  Entry e{.slot = slot, .ballot = ballot_, .value = std::move(value)};
  store_accepted(e);
  votes_[slot] = {};  // this node's vote counts once the accept is synced
  unsynced_own_.push_back(slot);
}

void PaxosNode::send_accepts(uint64_t now, const std::vector<Slot>& fresh) {
  uint64_t seq = next_seq(now);
  // This node's acceptor renews its promise to itself with every message.
  lease_to(options_.self, now);
  ack_time_[options_.self] = now;
  for (NodeId m : peers()) {
    Accept accept{.ballot = ballot_, .seq = seq, .chosen_through = applied_};
    if (!fresh.empty()) {
      for (Slot s : fresh) accept.entries.push_back(log_.at(s));
    } else {
      // A heartbeat carries again what this follower has not acknowledged.
      for (const auto& [slot, voters] : votes_) {
        if (accept.entries.size() >= options_.max_entries_per_message) break;
        if (!voters.count(m)) accept.entries.push_back(log_.at(slot));
      }
    }
    // Safe before this node's own sync only when its ballot's promise is on
    // disk: a node that forgot its promise could reuse the ballot after a restart.
    if (durable_promised_ == ballot_) {
      send_early(m, std::move(accept));
    } else {
      send(m, std::move(accept));
    }
  }
  next_heartbeat_ = now + options_.heartbeat_ms;
  note_ack(options_.self, seq);
}

void PaxosNode::note_ack(NodeId from, uint64_t seq) {
  auto sent = sent_at_.find(seq);
  if (sent == sent_at_.end()) return;
  uint64_t& t = ack_time_[from];
  t = std::max(t, sent->second);
  update_lease();
}

uint64_t PaxosNode::lease_of(const Members& members) const {
  // The lease holds from the quorum-th most recent vouched-for send time.
  std::vector<uint64_t> times;
  for (NodeId m : members) {
    auto it = ack_time_.find(m);
    times.push_back(it == ack_time_.end() ? 0 : it->second);
  }
  if (times.empty()) return 0;
  std::sort(times.rbegin(), times.rend());
  const uint64_t start = times[quorum_of(members) - 1];
  return start > 0 ? start + lease_local_ms_ : 0;
}

void PaxosNode::update_lease() {
  // Any member of a membership in flight may campaign in it once the slots
  // before are chosen: the master answers only while a majority of each
  // vouches for it.
  step_lease_until_ = lease_of(config_);
  lease_until_ = step_lease_until_;
  for (const auto& [slot, members] : pending_configs_) lease_until_ = std::min(lease_until_, lease_of(members));
}

void PaxosNode::on_accepted(NodeId from, const Accepted& m, uint64_t now) {
  highest_seen_ = std::max(highest_seen_, m.promised);
  if (role_ != Role::kMaster || m.ballot != ballot_) return;
  if (!m.ok) {
    if (m.promised > ballot_) step_down(now);
    return;
  }
  note_ack(from, m.seq);
  for (Slot s : m.slots) {
    auto it = votes_.find(s);
    if (it != votes_.end()) it->second.insert(from);
  }
  advance_chosen();
}

void PaxosNode::advance_chosen() {
  const Slot was_applied = applied_;
  for (auto it = votes_.find(applied_ + 1); it != votes_.end(); it = votes_.find(applied_ + 1)) {
    const Members& members = members_at(it->first);
    size_t votes = 0;
    for (NodeId voter : it->second) votes += has(members, voter);
    if (votes < quorum_of(members)) break;
    votes_.erase(it);
    deliver(log_.at(applied_ + 1));
  }
  if (role_ == Role::kMaster && applied_ >= ready_slot_ && !walking_) ready_ = true;
  if (applied_ != was_applied && role_ == Role::kMaster) {
    update_lease();
    leave_if_removed();
  }
}

void PaxosNode::leave_if_removed() {
  // Its own removal is applied: the new members may elect a master as soon as
  // its lease on them ends; hand_over ends it now.
  if (role_ == Role::kMaster && !is_member()) hand_over(now_);
}

}  // namespace palisade::lockgroup
