#include "lockgroup/lock_service.h"

#include <algorithm>

#include "auth/config_certificate.h"
#include "base/check.h"
#include "lockgroup/peer_checks.h"

namespace palisade::lockgroup {

namespace {

std::string_view role_name(PaxosNode::Role role) {
  switch (role) {
    case PaxosNode::Role::kMaster:
      return "master";
    case PaxosNode::Role::kCandidate:
      return "candidate";
    case PaxosNode::Role::kFollower:
      return "follower";
  }
  return "follower";
}

Status wait_ran_out(const std::string& lock) { return Status(Code::kTimeout, "the wait for '" + lock + "' ran out"); }

}  // namespace

Result<std::unique_ptr<LockService>> LockService::start(const LockServiceOptions& options, PaxosStorage& storage,
                                                        uint64_t now_ms) {
  PaxosOptions paxos = options.paxos;
  paxos.members_after = members_after;
  paxos.members_in_snapshot = members_in_snapshot;
  if (!options.broken_no_master_epoch) {
    paxos.ready_value = [](Ballot ballot) { return encode_batch({{.tag = 0, .command = MasterEpoch{ballot}}}); };
  }
  auto node = PaxosNode::start(paxos, storage, now_ms);
  if (!node.is_ok()) return node.status();
  std::unique_ptr<LockService> service(new LockService(options, std::move(node).value()));
  service->settle(now_ms);
  return service;
}

LockService::LockService(const LockServiceOptions& options, std::unique_ptr<PaxosNode> node)
    : options_(options),
      signer_(options.key, options.group),
      verifier_(signer_.verifier()),
      node_(std::move(node)),
      rng_(options.seed) {}

// ---- Requests ----

wire::LockReply LockService::reply_to(uint64_t request_id, Status status) const {
  wire::LockReply reply;
  reply.id = request_id;
  reply.status = std::move(status);
  reply.epoch = node_->epoch();
  reply.master = node_->master_hint();
  reply.master_endpoint = address_of(reply.master);
  return reply;
}

std::string LockService::address_of(NodeId node) const {
  for (const LockNode& n : table_.members()) {
    if (n.id == node) return n.address;
  }
  auto it = options_.endpoints.find(node);
  return it == options_.endpoints.end() ? std::string() : it->second;
}

void LockService::on_request(ClientRequest r, uint64_t now) {
  const uint64_t id = r.request.id;
  auto refuse = [&](Status status) { replies_.push_back({r.route, reply_to(id, std::move(status))}); };
  auto pending = [&](uint64_t session) { return Pending{.route = r.route, .request_id = id, .session = session}; };
  // A session past its deadline has expired, even before tick() proposes the
  // expiry: a release or close now would free its locks without lock-delay.
  auto past_deadline = [&](uint64_t session) {
    auto it = deadlines_.find(session);
    return it != deadlines_.end() && now >= it->second;
  };

  if (std::holds_alternative<wire::LockStatusRequest>(r.request.body)) return handle_status(r);
  if (std::holds_alternative<wire::GetReplicasRequest>(r.request.body)) {
    wire::LockReply reply = reply_to(id, Status::ok());
    reply.config = replica_set_certificate();
    replies_.push_back({r.route, std::move(reply)});
    return;
  }
  if (!node_->is_master(now)) {
    return refuse(Status(Code::kNotMaster, node_->master_hint() ? "ask the master this reply names"
                                                                : "no master is known: retry soon"));
  }
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, wire::FindMasterRequest>) {
          refuse(Status::ok());
        } else if constexpr (std::is_same_v<T, wire::CheckSequencerRequest>) {
          handle_check_sequencer(r, m);
        } else if constexpr (std::is_same_v<T, wire::CurrentGrantRequest>) {
          wire::LockReply reply = reply_to(id, Status::ok());
          if (const LockState* lock = table_.lock(m.lock); lock != nullptr && !lock->holders.empty()) {
            reply.token = lock->token;
            reply.mode = lock->mode;
          }
          replies_.push_back({r.route, std::move(reply)});
        } else if constexpr (std::is_same_v<T, wire::OpenSessionRequest>) {
          if (m.epoch > node_->epoch()) return refuse(Status(Code::kNotMaster, "the call names a newer epoch"));
          if (Status s = check_lease_request(m.lease_ms); !s.is_ok()) return refuse(std::move(s));
          Pending p = pending(0);
          p.members_version = m.members_version;
          propose(OpenSession{.lease_ms = m.lease_ms, .identity = r.identity}, p);
        } else if constexpr (std::is_same_v<T, wire::KeepAliveRequest>) {
          Status s = check_session(m.epoch, m.session, r.identity, now);
          if (!s.is_ok()) return refuse(std::move(s));
          const uint64_t lease = lease_of(m.session);
          set_deadline(m.session, now + lease);
          wire::LockReply reply = reply_to(id, Status::ok());
          reply.lease_ms = lease;
          tell_members(reply, m.members_version);
          replies_.push_back({r.route, std::move(reply)});
        } else if constexpr (std::is_same_v<T, wire::CloseSessionRequest>) {
          Status s = check_session(m.epoch, m.session, r.identity, now);
          if (s.code() == Code::kStaleEpoch || s.code() == Code::kNotMaster || s.code() == Code::kPermissionDenied ||
              past_deadline(m.session)) {
            return refuse(std::move(s));
          }
          propose(CloseSession{.session = m.session}, pending(m.session));
        } else if constexpr (std::is_same_v<T, wire::AcquireRequest>) {
          Status s = check_session(m.epoch, m.session, r.identity, now);
          if (!s.is_ok()) return refuse(std::move(s));
          propose(Acquire{.session = m.session,
                          .lock = m.lock,
                          .mode = m.mode,
                          .lock_delay_ms = m.lock_delay_ms,
                          .wait = m.wait_ms > 0,
                          .wait_ms = m.wait_ms,
                          .call = m.call},
                  pending(m.session));
        } else if constexpr (std::is_same_v<T, wire::ReleaseRequest>) {
          Status s = check_session(m.epoch, m.session, r.identity, now);
          if (s.code() == Code::kStaleEpoch || s.code() == Code::kNotMaster || s.code() == Code::kPermissionDenied ||
              past_deadline(m.session)) {
            return refuse(std::move(s));
          }
          propose(Release{.session = m.session, .lock = m.lock, .call = m.call}, pending(m.session));
        } else if constexpr (std::is_same_v<T, wire::SetMembersRequest>) {
          std::vector<LockNode> nodes;
          for (const wire::MemberInfo& n : m.nodes) nodes.push_back({n.id, n.address, n.key});
          if (Status s = change_members(std::move(nodes), m.version, now, pending(0)); !s.is_ok()) {
            refuse(std::move(s));
          }
        } else if constexpr (std::is_same_v<T, wire::SetReplicasRequest>) {
          const uint64_t current = table_.replica_set().version;
          if (m.version != current) return refuse(stale_replica_set(m.version));
          propose(SetReplicas{.set = {.version = current + 1,
                                      .phase = m.phase,
                                      .replicas = m.replicas,
                                      .write_quorum = m.write_quorum,
                                      .read_quorum = m.read_quorum}},
                  pending(0));
        }
      },
      r.request.body);
}

Status LockService::check_lease_request(uint64_t lease_ms) const {
  if (lease_ms == 0) return Status::ok();  // the cluster's default
  const uint64_t min = std::max(wire::kMinSessionLeaseMs, 2 * options_.paxos.heartbeat_ms);
  const uint64_t max = wire::kMaxSessionLeaseMs;
  if (lease_ms >= min && lease_ms <= max) return Status::ok();
  return Status(Code::kBadRequest, "lease_ms " + std::to_string(lease_ms) +
                                       " is outside the range this lock group allows, " + std::to_string(min) +
                                       " to " + std::to_string(max) + " ms");
}

uint64_t LockService::lease_of(SessionId session) const {
  const uint64_t own = table_.session_lease_ms(session);
  return own != 0 ? own : options_.session_lease_ms;
}

Status LockService::check_session(uint64_t epoch, uint64_t session, std::string_view identity, uint64_t now) const {
  if (epoch < node_->epoch()) {
    return Status(Code::kStaleEpoch,
                  "epoch " + std::to_string(epoch) + " is older than the master's " + std::to_string(node_->epoch()));
  }
  if (epoch > node_->epoch()) return Status(Code::kNotMaster, "the call names a newer epoch");
  auto it = deadlines_.find(session);
  if (!table_.has_session(session) || it == deadlines_.end()) {
    return Status(Code::kNoSession, "session " + std::to_string(session) + " does not exist");
  }
  if (now >= it->second) return Status(Code::kNoSession, "session " + std::to_string(session) + " has expired");
  // Session ids are no secret (status lists them): another identity that
  // names one must not keep it alive, release its locks or take locks in it.
  if (table_.session_identity(session) != identity) {
    return Status(Code::kPermissionDenied,
                  "session " + std::to_string(session) + " is not one identity '" + std::string(identity) + "' opened");
  }
  return Status::ok();
}

void LockService::handle_check_sequencer(const ClientRequest& r, const wire::CheckSequencerRequest& m) {
  auto seq = verifier_.verify(m.sequencer);
  if (!seq.is_ok()) {
    replies_.push_back({r.route, reply_to(r.request.id, seq.status())});
    return;
  }
  wire::LockReply reply = reply_to(r.request.id, Status::ok());
  reply.current = table_.is_current(seq.value().lock, seq.value().mode, seq.value().token);
  replies_.push_back({r.route, std::move(reply)});
}

void LockService::handle_status(const ClientRequest& r) {
  wire::LockReply reply = reply_to(r.request.id, Status::ok());
  reply.node = options_.paxos.self;
  reply.role = role_name(node_->role());
  reply.applied_slot = node_->applied_through();
  reply.sessions = table_.sessions().size();
  reply.members_version = table_.members_version();
  if (table_.members_version() > 0) {
    tell_members(reply, 0);
  } else {
    for (NodeId id : node_->members()) reply.members.push_back({id, address_of(id)});
  }
  const auto& locks = table_.locks();
  const auto& after = std::get<wire::LockStatusRequest>(r.request.body).after;
  for (auto it = locks.upper_bound(after); it != locks.end(); ++it) {
    const auto& [name, lock] = *it;
    if (reply.locks.size() >= wire::kMaxStatusLocks) break;
    wire::LockInfo info{.name = name, .mode = lock.mode, .token = lock.token, .holders = {}, .waiters = lock.waiters.size(),
                        .delay_ms = lock.delay_ms};
    bool own = false;
    for (const auto& [session, delay] : lock.holders) {
      info.holders.push_back(session);
      const std::string_view identity = table_.session_identity(session);
      info.identities.emplace_back(identity);
      own |= !r.identity.empty() && identity == r.identity;
    }
    if (!r.sees_all && !own) continue;
    if (std::all_of(info.identities.begin(), info.identities.end(), [](const auto& id) { return id.empty(); })) {
      info.identities.clear();  // a cluster without identities
    }
    if (!r.sees_all) info.waiters = 0;  // whose they are is not this identity's business
    reply.locks.push_back(std::move(info));
  }
  replies_.push_back({r.route, std::move(reply)});
}

// ---- Proposing ----

void LockService::propose(Command command, Pending pending) {
  uint64_t tag = rng_.next();
  batch_.push_back({tag, std::move(command)});
  pending_[tag] = pending;
}

void LockService::flush(uint64_t now) {
  if (!batch_.empty() && !node_->is_master(now)) lost_mastership();
  while (!batch_.empty() && node_->in_flight() < options_.max_in_flight) {
    size_t n = std::min(batch_.size(), options_.max_batch);
    std::vector<TaggedCommand> chunk(std::make_move_iterator(batch_.begin()),
                                     std::make_move_iterator(batch_.begin() + static_cast<ptrdiff_t>(n)));
    batch_.erase(batch_.begin(), batch_.begin() + static_cast<ptrdiff_t>(n));
    PALISADE_CHECK(node_->propose(encode_batch(chunk), now));
  }
  settle(now);
}

std::string LockService::replica_set_certificate() const {
  const wire::ReplicaSet& set = table_.replica_set().version == 0 ? options_.file_replicas : table_.replica_set();
  if (set.replicas.empty()) return {};
  return sign_config_certificate(signer_, set);
}

Status LockService::stale_replica_set(uint64_t version) const {
  return Status(Code::kStale, "the replica set is at version " + std::to_string(table_.replica_set().version) +
                                  ", not " + std::to_string(version) + ": read it again");
}

void LockService::tell_members(wire::LockReply& reply, uint64_t known) const {
  if (table_.members_version() <= known) return;
  reply.members_version = table_.members_version();
  for (const LockNode& n : table_.members()) reply.members.push_back({n.id, n.address, n.key});
}

Status LockService::change_members(std::vector<LockNode> nodes, uint64_t version, uint64_t now, Pending pending) {
  if (!node_->is_master(now)) return Status(Code::kNotMaster, "only the master changes the members");
  if (!node_->members_settled()) return Status(Code::kUnavailable, "another membership change is under way");
  if (version != table_.members_version()) {
    return Status(Code::kStale, "the membership is at version " + std::to_string(table_.members_version()) + ", not " +
                                    std::to_string(version) + ": read it again");
  }
  const uint64_t tag = rng_.next();
  std::string value = encode_batch({{tag, SetMembers{std::move(nodes)}}});
  // The value must decode as it will when applied: the checks of read_nodes.
  if (auto decoded = decode_batch(value); !decoded.is_ok()) return decoded.status();
  PALISADE_CHECK(node_->propose(std::move(value), now));
  pending_[tag] = pending;
  staged_tag_ = tag;
  staged_dropped_ = node_->staged_dropped();
  settle(now);
  return Status::ok();
}

bool LockService::hand_over(uint64_t now) {
  const bool was_master = node_->hand_over(now);
  settle(now);
  return was_master;
}

void LockService::synced(uint64_t now) {
  node_->on_synced();
  settle(now);
}

// ---- Time ----

Status LockService::on_peer(const PeerMessage& message, uint64_t now) {
  Status s = check_peer_values(message, table_, node_->applied_through());
  if (s.is_ok()) s = node_->receive(message, now);
  settle(now);
  return s;
}

void LockService::tick(uint64_t now) {
  node_->tick(now);
  settle(now);
  if (!master_) return;
  expire_sessions(now);
  run_timers(now);
  end_long_pause(now);
}

uint64_t LockService::next_timer_ms() const {
  uint64_t t = node_->next_timer_ms();
  if (!master_) return t;
  if (!by_deadline_.empty()) t = std::min(t, by_deadline_.begin()->first);
  for (const Timer& timer : delay_timers_) t = std::min(t, timer.at);
  for (const Timer& timer : wait_timers_) t = std::min(t, timer.at);
  if (paused_version_ != 0) t = std::min(t, pause_deadline_);
  return t;
}

void LockService::set_deadline(SessionId session, uint64_t at) {
  auto [it, inserted] = deadlines_.try_emplace(session, at);
  if (!inserted) {
    by_deadline_.erase({it->second, session});
    it->second = at;
  }
  by_deadline_.insert({at, session});
}

void LockService::drop_session(SessionId session) {
  auto it = deadlines_.find(session);
  if (it != deadlines_.end()) {
    by_deadline_.erase({it->second, session});
    deadlines_.erase(it);
  }
  expiring_.erase(session);
}

void LockService::expire_sessions(uint64_t now) {
  for (auto it = by_deadline_.begin(); it != by_deadline_.end() && it->first <= now; ++it) {
    if (expiring_.insert(it->second).second)
      propose(ExpireSession{.session = it->second, .epoch = node_->epoch()}, {.answer = false});
  }
}

void LockService::run_timers(uint64_t now) {
  auto due = [now](const Timer& t) { return t.at <= now; };
  for (const Timer& t : delay_timers_) {
    if (due(t)) propose(EndDelay{.lock = t.lock, .token = t.token, .epoch = node_->epoch()}, {.answer = false});
  }
  std::erase_if(delay_timers_, due);
  for (const Timer& t : wait_timers_) {
    if (due(t)) propose(CancelWait{.session = t.session, .lock = t.lock, .epoch = node_->epoch()}, {.answer = false});
  }
  std::erase_if(wait_timers_, due);
}

void LockService::end_long_pause(uint64_t now) {
  const wire::ReplicaSet& set = table_.replica_set();
  if (set.phase != wire::ReplicaPhase::kPaused) {
    paused_version_ = 0;
    return;
  }
  if (paused_version_ != set.version) {  // a pause this master has not timed yet
    paused_version_ = set.version;
    pause_deadline_ = now + options_.replica_pause_timeout_ms;
    return;
  }
  if (now < pause_deadline_ || pause_deadline_ == UINT64_MAX) return;
  // The same replicas, serving: at apply time it is stale if the replacement
  // committed its new set first, and then nothing changes.
  wire::ReplicaSet serving = set;
  serving.version = set.version + 1;
  serving.phase = wire::ReplicaPhase::kServing;
  propose(SetReplicas{.set = std::move(serving)}, {.answer = false});
  pause_deadline_ = UINT64_MAX;  // proposed once
}

// ---- Applying what was chosen ----

void LockService::settle(uint64_t now) {
  for (const Delivery& d : node_->take_deliveries()) apply(d, now);
  const bool master = node_->is_master(now);
  if (node_->staged_dropped() != staged_dropped_) {
    // The change was never proposed. A master that stepped down answers
    // not_master below, as for all it had pending, so that the client asks
    // the next one; one that is still master waited for the new members.
    staged_dropped_ = node_->staged_dropped();
    if (auto it = pending_.find(staged_tag_); master && it != pending_.end()) {
      answer(it->second,
             reply_to(it->second.request_id,
                      Status(Code::kUnavailable, "a majority of the new members did not answer the master")));
      pending_.erase(it);
    }
  }
  if (master && !master_) became_master(now);
  if (!master && master_) lost_mastership();
  // Every node compacts, followers too: their logs would grow for ever. And
  // at once after a change of the members: a node starts again with its
  // snapshot's members (else its first ones), which may all be gone by then.
  if (node_->applied_through() >= node_->snapshot_slot() + options_.snapshot_every ||
      table_.members_version() != snapshot_members_version_) {
    node_->compact(node_->applied_through(), table_.snapshot());
    snapshot_members_version_ = table_.members_version();
  }
}

void LockService::became_master(uint64_t now) {
  master_ = true;
  // Deadlines were in the old master's memory only: every session gets a fresh
  // lease of its own length (the grace that lets sessions live through a
  // failover), and every delay and wait restarts in full.
  for (const auto& entry : table_.sessions()) set_deadline(entry.first, now + lease_of(entry.first));
  for (const auto& [name, lock] : table_.locks()) {
    if (lock.delay_ms > 0) delay_timers_.push_back({.at = now + lock.delay_ms, .lock = name, .token = lock.token});
    for (const Waiter& w : lock.waiters) {
      wait_timers_.push_back({.at = now + w.wait_ms, .lock = name, .session = w.session});
    }
  }
}

void LockService::lost_mastership() {
  master_ = false;
  // Commands already proposed may still be chosen: the answer says "ask again",
  // and acquire and release are idempotent for a session.
  for (const auto& [tag, p] : pending_) {
    if (p.answer) answer(p, reply_to(p.request_id, Status(Code::kNotMaster, "this node stopped being master")));
  }
  for (const auto& [key, p] : waiting_) {
    answer(p, reply_to(p.request_id, Status(Code::kNotMaster, "this node stopped being master")));
  }
  pending_.clear();
  waiting_.clear();
  batch_.clear();
  deadlines_.clear();
  by_deadline_.clear();
  expiring_.clear();
  delay_timers_.clear();
  wait_timers_.clear();
  // A pause's end it proposed may be lost with the mastership: timed again
  // from its next start, as a new master times it.
  paused_version_ = 0;
}

void LockService::answer(const Pending& p, wire::LockReply reply) {
  if (p.answer) replies_.push_back({p.route, std::move(reply)});
}

void LockService::answer_grant(const Pending& p, const Grant& grant, uint64_t now) {
  // The session must still be alive at the moment of the grant; the client's
  // lease ends no later than the master's.
  auto it = deadlines_.find(grant.session);
  if (it == deadlines_.end() || now >= it->second) {
    answer(p, reply_to(p.request_id, Status(Code::kNoSession, "the session expired as the lock was granted")));
    return;
  }
  wire::LockReply reply = reply_to(p.request_id, Status::ok());
  reply.token = grant.token;
  reply.mode = grant.mode;
  reply.sequencer = signer_.sign(Sequencer{.group = options_.group,
                                           .lock = grant.lock,
                                           .mode = grant.mode,
                                           .token = grant.token,
                                           .identity = std::string(table_.session_identity(grant.session))});
  reply.lease_ms = it->second - now;
  answer(p, std::move(reply));
}

void LockService::note_grant(const Grant& grant, bool again) {
  events_.push_back({.kind = LockEvent::Kind::kGranted,
                     .session = grant.session,
                     .lock = grant.lock,
                     .mode = grant.mode,
                     .token = grant.token,
                     .again = again});
}

void LockService::apply(const Delivery& delivery, uint64_t now) {
  if (delivery.snapshot) {
    Status s = table_.restore(delivery.value);
    PALISADE_CHECK(s.is_ok());  // from this node's disk, or checked on arrival (peer_checks.h)
    return;
  }
  if (delivery.value.empty()) return;  // a no-op
  auto batch = decode_batch(delivery.value);
  PALISADE_CHECK(batch.is_ok());  // checksummed on disk, and checked on arrival (peer_checks.h)
  Effects effects = table_.apply(batch.value());
  if (!master_) return;  // followers keep the state; only the master answers

  for (size_t i = 0; i < batch.value().size(); ++i) {
    const Command& command = batch.value()[i].command;
    const CommandResult& result = effects.results[i];
    Pending p{.answer = false};
    if (auto it = pending_.find(result.tag); it != pending_.end()) {
      p = it->second;
      pending_.erase(it);
    }
    wire::LockReply reply = reply_to(p.request_id, Status::ok());
    std::visit(
        [&](const auto& c) {
          using T = std::decay_t<decltype(c)>;
          if constexpr (std::is_same_v<T, OpenSession>) {
            const uint64_t lease = lease_of(result.session);
            set_deadline(result.session, now + lease);
            reply.session = result.session;
            reply.lease_ms = lease;
            tell_members(reply, p.members_version);
            answer(p, std::move(reply));
          } else if constexpr (std::is_same_v<T, CloseSession> || std::is_same_v<T, ExpireSession>) {
            if (result.outcome == Outcome::kStaleEpoch) return;  // an older master's: this one times the session
            if (result.outcome == Outcome::kOk) {
              events_.push_back({.kind = std::is_same_v<T, CloseSession> ? LockEvent::Kind::kClosed
                                                                         : LockEvent::Kind::kExpired,
                                 .session = c.session,
                                 .locks = result.released});
            }
            drop_session(c.session);
            std::erase_if(waiting_, [&](const auto& w) { return w.first.first == c.session; });
            answer(p, std::move(reply));
          } else if constexpr (std::is_same_v<T, Acquire>) {
            switch (result.outcome) {
              case Outcome::kOk:
                note_grant(*result.grant, result.again);
                return answer_grant(p, *result.grant, now);
              case Outcome::kQueued: {
                if (p.answer) waiting_[{c.session, c.lock}] = p;
                // Another acquire of a queued session (a retry, a duplicate)
                // stays behind the first one's wait: one timer, the first's.
                const bool timed = std::any_of(wait_timers_.begin(), wait_timers_.end(), [&](const Timer& t) {
                  return t.session == c.session && t.lock == c.lock;
                });
                if (!timed) wait_timers_.push_back({.at = now + c.wait_ms, .lock = c.lock, .session = c.session});
                return;
              }
              case Outcome::kBusy:
                return answer(p, reply_to(p.request_id, Status(Code::kBusy, "lock '" + c.lock + "' is held")));
              case Outcome::kDelayed:
                return answer(p, reply_to(p.request_id,
                                          Status(Code::kBusy, "lock '" + c.lock + "' is in lock-delay")));
              case Outcome::kStaleCall:
                return answer(p, reply_to(p.request_id, Status(Code::kStale, "a later call of this session on '" +
                                                                                  c.lock + "' was applied")));
              case Outcome::kWaitEnded:  // what the first one was answered
                return answer(p, reply_to(p.request_id, wait_ran_out(c.lock)));
              case Outcome::kConflict:
                return answer(p, reply_to(p.request_id, Status(Code::kBadRequest,
                                                               "the session holds '" + c.lock +
                                                                   "' in the other mode")));
              default:
                return answer(p, reply_to(p.request_id, Status(Code::kNoSession, "the session does not exist")));
            }
          } else if constexpr (std::is_same_v<T, Release>) {
            if (result.outcome == Outcome::kNoSession) {
              return answer(p, reply_to(p.request_id, Status(Code::kNoSession, "the session does not exist")));
            }
            if (result.outcome == Outcome::kStaleCall) {
              return answer(p, reply_to(p.request_id, Status(Code::kStale, "a later call of this session on '" +
                                                                               c.lock + "' was applied")));
            }
            reply.released = result.outcome == Outcome::kOk;
            if (reply.released) {
              events_.push_back({.kind = LockEvent::Kind::kReleased, .session = c.session, .lock = c.lock});
            }
            answer(p, std::move(reply));
          } else if constexpr (std::is_same_v<T, SetMembers>) {
            reply.members_version = table_.members_version();
            answer(p, std::move(reply));
          } else if constexpr (std::is_same_v<T, SetReplicas>) {
            if (result.outcome == Outcome::kStaleVersion) {
              return answer(p, reply_to(p.request_id, stale_replica_set(c.set.version - 1)));
            }
            reply.config = replica_set_certificate();
            answer(p, std::move(reply));
          } else if constexpr (std::is_same_v<T, CancelWait>) {
            if (result.outcome == Outcome::kStaleEpoch) return;  // an older master's: this one times the wait
            auto w = waiting_.find({c.session, c.lock});
            if (w != waiting_.end()) {
              answer(w->second, reply_to(w->second.request_id, wait_ran_out(c.lock)));
              waiting_.erase(w);
            }
          }
        },
        command);
  }
  for (const Grant& grant : effects.woken) {
    note_grant(grant);
    // A grant the same batch released again (the session's release came
    // after the release that woke it) is nobody's answer: the session's
    // waiting acquire, if any, is a later one, queued behind the next holder.
    const LockState* lock = table_.lock(grant.lock);
    if (lock == nullptr || lock->token != grant.token || lock->holders.count(grant.session) == 0) continue;
    std::erase_if(wait_timers_, [&](const Timer& t) { return t.session == grant.session && t.lock == grant.lock; });
    auto w = waiting_.find({grant.session, grant.lock});
    if (w == waiting_.end()) continue;  // the client asks again and gets the grant then
    Pending p = w->second;
    waiting_.erase(w);
    answer_grant(p, grant, now);
  }
  for (const DelayStarted& d : effects.delays) {
    delay_timers_.push_back({.at = now + d.delay_ms, .lock = d.lock, .token = d.token});
  }
}

}  // namespace palisade::lockgroup
