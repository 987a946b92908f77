#include "client/lock_session.h"

#include <algorithm>

namespace palisade::client {
namespace {

// No lease is longer than this (a bad reply must not overflow the arithmetic).
constexpr uint64_t kMaxLeaseMs = uint64_t{1} << 40;
// How long a late answer to an open_session or a timed-out acquire is still
// acted on (closing the stray session, releasing the stray grant).
constexpr uint64_t kRememberStrayMs = 120'000;

uint64_t add(uint64_t a, uint64_t b) { return a > LockSession::kNever - b ? LockSession::kNever : a + b; }

}  // namespace

std::string_view state_name(SessionState state) {
  switch (state) {
    case SessionState::kOpening:
      return "opening";
    case SessionState::kSafe:
      return "safe";
    case SessionState::kJeopardy:
      return "jeopardy";
    case SessionState::kExpired:
      return "expired";
    case SessionState::kClosed:
      return "closed";
  }
  return "unknown";
}

uint64_t lease_end(uint64_t sent_ms, uint64_t lease_ms, uint64_t max_drift_ppm) {
  const uint64_t ppm = std::min<uint64_t>(max_drift_ppm, 999'999);
  const uint64_t lease = std::min(lease_ms, kMaxLeaseMs);
  return add(sent_ms, lease * (1'000'000 - ppm) / (1'000'000 + ppm));
}

LockSession::LockSession(LockSessionOptions options, uint64_t now_ms) : options_(options), nodes_(options.nodes) {
  send_session_request(now_ms);
}

void LockSession::set_endpoints(std::vector<std::string> endpoints) {
  endpoints_ = std::move(endpoints);
  keys_.assign(endpoints_.size(), std::string());
  in_group_.assign(endpoints_.size(), 1);
}

void LockSession::learn_members(const wire::LockReply& reply) {
  // Without the endpoints of the first nodes, a new one's index is unknown.
  if (reply.members_version <= members_version_ || reply.members.empty() || endpoints_.size() != nodes_) return;
  members_version_ = reply.members_version;
  for (const wire::MemberInfo& m : reply.members) {
    auto known = std::find(endpoints_.begin(), endpoints_.end(), m.address);
    if (known == endpoints_.end()) {
      add_node(m.address, m.key);
    } else if (!m.key.empty()) {
      keys_[static_cast<size_t>(known - endpoints_.begin())] = m.key;
    }
  }
  // The nodes the driver was given stay: their endpoints may be other names
  // (a proxy, a DNS name) for the addresses the group records.
  for (size_t i = options_.nodes; i < endpoints_.size(); ++i) {
    in_group_[i] = std::any_of(reply.members.begin(), reply.members.end(),
                               [&](const wire::MemberInfo& m) { return m.address == endpoints_[i]; });
  }
  if (!in_group_[target_ % nodes_]) target_ = next_node(target_);
}

size_t LockSession::add_node(const std::string& endpoint, const std::string& key) {
  endpoints_.push_back(endpoint);
  keys_.push_back(key);
  in_group_.push_back(1);
  return nodes_++;
}

size_t LockSession::next_node(size_t node) const {
  if (nodes_ == 0) return 0;
  for (size_t step = 1; step <= nodes_; ++step) {
    const size_t next = (node + step) % nodes_;
    if (next >= in_group_.size() || in_group_[next]) return next;
  }
  return (node + 1) % nodes_;
}

// ---- Session requests: open_session, then keep_alive ----

void LockSession::send_session_request(uint64_t now) {
  if (nodes_ == 0) return;
  const uint64_t id = new_request_id();
  wire::LockRequest request{
      .id = id,
      .body = wire::OpenSessionRequest{.lease_ms = options_.session_lease_ms, .members_version = members_version_}};
  Kind kind = Kind::kOpen;
  if (session_ != 0) {
    kind = Kind::kKeepAlive;
    request.body = wire::KeepAliveRequest{.epoch = epoch_, .session = session_, .members_version = members_version_};
  }
  sent_[id] = Sent{.kind = kind, .call = 0, .at = now, .node = target_, .epoch = epoch_, .orphan = {}};
  session_request_ = id;
  // A KeepAlive unanswered for a third of a short lease already goes to the
  // next node, so that two more tries fit before the deadline.
  uint64_t timeout = options_.request_timeout_ms;
  if (kind == Kind::kKeepAlive && lease_ms_ > 0) timeout = std::min(timeout, std::max<uint64_t>(1, lease_ms_ / 3));
  session_retry_at_ = add(now, timeout);
  out_.push_back({target_, std::move(request)});
}

void LockSession::on_session_reply(const Sent& sent, uint64_t request_id, size_t node, const wire::LockReply& reply,
                                   uint64_t now) {
  const Code code = reply.status.code();
  const bool latest = request_id == session_request_;
  if (code == Code::kNotMaster) {
    if (!latest) return;  // an older request: its successor is on its way
    ask_again(follow_hint(node, reply, sent.epoch), now);
    return;
  }
  heard_master(node, reply, now);
  if (code == Code::kStaleEpoch) {
    if (!latest) return;
    ask_again(reply.epoch > sent.epoch, now);
    return;
  }
  if (code == Code::kBadRequest && sent.kind == Kind::kOpen && session_ == 0) {
    // The master will not open the session we ask for (a lease out of its
    // range, or a master that predates per-session leases): asking again
    // cannot help.
    open_error_ = reply.status;
    expire("the lock group refused to open the session: " + reply.status.message());
    return;
  }
  if (code == Code::kNoSession && sent.kind == Kind::kKeepAlive) {
    expire("the lock group does not know session " + std::to_string(session_) + ": " + reply.status.message());
    return;
  }
  if (!reply.status.is_ok() || (sent.kind == Kind::kOpen && reply.session == 0)) {
    // Not an answer we can use: ask again after the usual timeout.
    return;
  }
  learn_members(reply);
  if (sent.kind == Kind::kOpen) {
    if (session_ != 0) {
      // A second open_session (sent to another node after a timeout) also
      // succeeded: close the session nobody uses.
      if (reply.session != session_) close_stray(node, reply.session);
      return;
    }
    session_ = reply.session;
  }
  lease_ms_ = std::min(reply.lease_ms, kMaxLeaseMs);
  deadline_ = std::max(deadline_, lease_end(lease_start(sent.at, now), lease_ms_, options_.max_drift_ppm));
  if (state_ == SessionState::kOpening || (state_ == SessionState::kJeopardy && now < deadline_)) {
    set_state(SessionState::kSafe);
  }
  session_request_ = 0;
  session_send_at_ = add(now, lease_ms_ / 3);
  if (sent.kind == Kind::kOpen) {
    for (auto& [id, call] : calls_) {
      if (call.request == 0) send_call(call, id, now);
    }
  }
}

void LockSession::ask_again(bool at_once, uint64_t now) {
  if (at_once) return send_session_request(now);
  session_request_ = 0;
  session_send_at_ = add(now, options_.retry_backoff_ms);
}

void LockSession::close_stray(size_t node, uint64_t session) {
  // Built in place: moving a request trips GCC 12's -Wmaybe-uninitialized
  // (a false positive on the variant's alternatives, wire/message_codec.h).
  Outgoing& out = out_.emplace_back();
  out.node = node;
  out.request.id = new_request_id();
  out.request.body = wire::CloseSessionRequest{.epoch = epoch_, .session = session};
}

// ---- Replies and timers ----

void LockSession::on_reply(size_t node, const wire::LockReply& reply, uint64_t now_ms) {
  auto it = sent_.find(reply.id);
  if (it == sent_.end()) return;
  const Sent sent = it->second;
  if (!sent.orphan.empty()) {
    // The answer to an acquire that already ended with Timeout: a grant nobody
    // will use is given back.
    sent_.erase(it);
    if (reply.status.is_ok() && held_.count(sent.orphan) == 0 && session_ != 0 && live()) {
      release_orphan(sent.orphan, now_ms);
    }
    return;
  }
  if (!live()) {
    // Expired or closed: only a late open_session is still worth an answer.
    if (sent.kind == Kind::kOpen && reply.status.is_ok() && reply.session != 0 && reply.session != session_) {
      close_stray(node, reply.session);
    }
    sent_.erase(it);
    return;
  }
  if (reply.status.code() == Code::kWrongCluster) return wrong_cluster(node, reply.status);
  check_deadline(now_ms);
  if (!live()) return;
  if (sent.call == 0) {
    on_session_reply(sent, reply.id, node, reply, now_ms);
  } else {
    on_call_reply(sent, reply.id, node, reply, now_ms);
  }
  check_deadline(now_ms);
}

void LockSession::wrong_cluster(size_t node, const Status& why) {
  const std::string at = node < endpoints_.size() ? endpoints_[node] : "lock group node " + std::to_string(node);
  Status refusal(Code::kWrongCluster, at + " is not a node of this cluster: " + why.message());
  if (session_ == 0) open_error_ = refusal;
  set_state(SessionState::kExpired);
  end_all_calls(refusal);
}

std::vector<Outgoing> LockSession::take_outgoing() {
  for (Outgoing& o : out_) o.request.cluster = options_.cluster_id;
  return std::exchange(out_, {});
}

void LockSession::on_unreachable(size_t node, uint64_t request_id, uint64_t now_ms) {
  (void)node;
  const uint64_t retry = add(now_ms, options_.retry_backoff_ms);
  if (request_id == session_request_) {
    session_retry_at_ = std::min(session_retry_at_, retry);
    return;
  }
  auto it = sent_.find(request_id);
  if (it == sent_.end() || it->second.call == 0) return;
  auto c = calls_.find(it->second.call);
  if (c != calls_.end() && c->second.request == request_id) {
    c->second.resend_at = std::min(c->second.resend_at, retry);
    c->second.rotate = true;
  }
}

void LockSession::tick(uint64_t now_ms) {
  check_deadline(now_ms);
  if (!live()) return;
  // Calls: give up, or ask again.
  std::vector<uint64_t> ids;
  ids.reserve(calls_.size());
  for (const auto& [id, call] : calls_) ids.push_back(id);
  for (uint64_t id : ids) {
    auto it = calls_.find(id);
    if (it == calls_.end()) continue;
    Call& call = it->second;
    if (now_ms >= call.give_up_at) {
      give_up(id, now_ms);
    } else if (call.request != 0 && now_ms >= call.resend_at) {
      if (call.rotate) moved_away_from(call.node);
      send_call(call, id, now_ms);
    }
    if (!live()) return;
  }
  // The session request.
  if (session_request_ != 0) {
    if (now_ms >= session_retry_at_) {
      auto it = sent_.find(session_request_);
      if (it != sent_.end()) moved_away_from(it->second.node);
      send_session_request(now_ms);
    }
  } else if (now_ms >= session_send_at_) {
    send_session_request(now_ms);
  }
  prune(now_ms);
}

uint64_t LockSession::next_timer_ms() const {
  if (!live()) return kNever;
  uint64_t t = session_request_ != 0 ? session_retry_at_ : session_send_at_;
  if (state_ == SessionState::kSafe) t = std::min(t, deadline_);
  if (state_ == SessionState::kJeopardy) t = std::min(t, jeopardy_end_);
  for (const auto& [id, call] : calls_) {
    t = std::min(t, call.give_up_at);
    if (call.request != 0) t = std::min(t, call.resend_at);
  }
  return t;
}

// ---- Calls ----

uint64_t LockSession::acquire(std::string lock, LockMode mode, uint64_t lock_delay_ms, uint64_t wait_ms,
                              uint64_t now_ms) {
  if (lock_delay_ms > wire::kMaxLockDelayMs) {
    const uint64_t id = next_call_++;
    done_.push_back({id, Status(Code::kBadRequest, "lock-delay of " + std::to_string(lock_delay_ms) + " ms (at most " +
                                                       std::to_string(wire::kMaxLockDelayMs) + ")")});
    return id;
  }
  // A clean-up release of the same lock still on its way would take the new grant away.
  std::erase_if(calls_, [&](const auto& c) {
    return c.second.internal && c.second.kind == Kind::kRelease && c.second.lock == lock;
  });
  Call call;
  call.kind = Kind::kAcquire;
  call.lock = std::move(lock);
  call.mode = mode;
  call.lock_delay_ms = lock_delay_ms;
  call.wait_ms = wait_ms;
  return start_call(std::move(call), now_ms);
}

uint64_t LockSession::release(std::string lock, uint64_t now_ms) {
  held_.erase(lock);
  for (auto& [id, call] : calls_) {
    if (call.kind == Kind::kAcquire && call.lock == lock) call.released = true;
  }
  Call call;
  call.kind = Kind::kRelease;
  call.lock = std::move(lock);
  return start_call(std::move(call), now_ms);
}

uint64_t LockSession::release_grant(std::string lock, uint64_t token, uint64_t now_ms) {
  auto held = held_.find(lock);
  if (held != held_.end() && held->second == token) return release(std::move(lock), now_ms);
  const uint64_t id = next_call_++;
  done_.push_back({id, Status::ok()});
  return id;
}

uint64_t LockSession::check_sequencer(std::string sequencer, uint64_t now_ms) {
  Call call;
  call.kind = Kind::kCheck;
  call.lock = std::move(sequencer);
  return start_call(std::move(call), now_ms);
}

uint64_t LockSession::current_grant(std::string lock, uint64_t now_ms) {
  Call call;
  call.kind = Kind::kGrant;
  call.lock = std::move(lock);
  return start_call(std::move(call), now_ms);
}

uint64_t LockSession::close(uint64_t now_ms) {
  if (state_ == SessionState::kOpening || state_ == SessionState::kClosed) {
    // Nothing to close on the lock group (a session opened later is closed as a stray).
    const uint64_t id = next_call_++;
    closed();
    done_.push_back({id, Status::ok()});
    return id;
  }
  Call call;
  call.kind = Kind::kClose;
  return start_call(std::move(call), now_ms);
}

uint64_t LockSession::start_call(Call call, uint64_t now) {
  const uint64_t id = next_call_++;
  if (state_ == SessionState::kExpired) {
    done_.push_back({id, Status(Code::kNoSession, "the session expired")});
    return id;
  }
  if (state_ == SessionState::kClosed) {
    done_.push_back({id, Status(Code::kNoSession, "the session is closed")});
    return id;
  }
  call.wait_end = add(now, call.wait_ms);
  call.give_up_at = add(call.wait_end, options_.call_timeout_ms);
  auto [it, inserted] = calls_.emplace(id, std::move(call));
  send_call(it->second, id, now);
  return id;
}

void LockSession::send_call(Call& call, uint64_t id, uint64_t now) {
  if (call.kind != Kind::kCheck && call.kind != Kind::kGrant && session_ == 0) {
    call.request = 0;  // sent once the session is open
    return;
  }
  if (nodes_ == 0) return;
  const uint64_t rid = new_request_id();
  wire::LockRequest request{.id = rid, .body = {}};
  uint64_t wait = 0;
  switch (call.kind) {
    case Kind::kAcquire:
      // A resent waiting acquire waits only what is left (at least 1 ms, so that
      // the answer is still timeout rather than busy).
      if (call.wait_ms > 0) wait = std::max<uint64_t>(1, call.wait_end > now ? call.wait_end - now : 0);
      request.body = wire::AcquireRequest{.epoch = epoch_,
                                          .session = session_,
                                          .lock = call.lock,
                                          .mode = call.mode,
                                          .lock_delay_ms = call.lock_delay_ms,
                                          .wait_ms = wait,
                                          .call = id};
      break;
    case Kind::kRelease:
      request.body = wire::ReleaseRequest{.epoch = epoch_, .session = session_, .lock = call.lock, .call = id};
      break;
    case Kind::kCheck:
      request.body = wire::CheckSequencerRequest{.sequencer = call.lock};
      break;
    case Kind::kGrant:
      request.body = wire::CurrentGrantRequest{.lock = call.lock};
      break;
    case Kind::kClose:
      request.body = wire::CloseSessionRequest{.epoch = epoch_, .session = session_};
      break;
    case Kind::kOpen:
    case Kind::kKeepAlive:
      return;  // not calls
  }
  sent_[rid] = Sent{.kind = call.kind, .call = id, .at = now, .node = target_, .epoch = epoch_, .orphan = {}};
  call.request = rid;
  call.node = target_;
  call.rotate = true;
  // The master answers a waiting acquire only when granted or when the wait ran out.
  call.resend_at = add(add(now, wait), options_.request_timeout_ms);
  out_.push_back({target_, std::move(request), id});
}

void LockSession::on_call_reply(const Sent& sent, uint64_t request_id, size_t node, const wire::LockReply& reply,
                                uint64_t now) {
  auto it = calls_.find(sent.call);
  if (it == calls_.end()) return;
  const uint64_t id = it->first;
  const bool latest = it->second.request == request_id;
  const Code code = reply.status.code();
  if (code == Code::kNotMaster) {
    if (!latest) return;
    if (follow_hint(node, reply, sent.epoch)) {
      send_call(it->second, id, now);
    } else {
      it->second.resend_at = add(now, options_.retry_backoff_ms);
      it->second.rotate = false;
    }
    return;
  }
  heard_master(node, reply, now);  // may resend other calls, never erases one
  Call& call = it->second;
  if (code == Code::kStaleEpoch) {
    if (!latest) return;
    if (reply.epoch > sent.epoch) {
      send_call(call, id, now);
    } else {
      call.resend_at = add(now, options_.retry_backoff_ms);
      call.rotate = false;
    }
    return;
  }
  if (code == Code::kNoSession) {
    expire("the lock group does not know session " + std::to_string(session_) + ": " + reply.status.message());
    return;
  }
  if (!reply.status.is_ok()) return finish(id, reply.status);
  switch (call.kind) {
    case Kind::kAcquire: {
      if (call.released) {
        // The reply may predate the release (which the group then applied
        // after it, freeing the lock) or follow it (a waiting acquire granted
        // later): either way the session must not count on holding the lock.
        const std::string lock = call.lock;
        finish(id, Status(Code::kCancelled, "lock '" + lock + "' was released while this acquire was on its way"));
        return release_orphan(lock, now);
      }
      // The grant is no longer than the session lease the master had left.
      deadline_ = std::min(deadline_, lease_end(lease_start(sent.at, now), reply.lease_ms, options_.max_drift_ppm));
      held_[call.lock] = reply.token;
      GrantInfo grant{.lock = call.lock, .mode = reply.mode, .token = reply.token, .sequencer = reply.sequencer};
      return finish(id, Status::ok(), std::move(grant));
    }
    case Kind::kCheck:
      return finish(id, Status::ok(), std::nullopt, reply.current);
    case Kind::kGrant:
      if (reply.token == 0) return finish(id, Status::ok());  // free
      return finish(id, Status::ok(),
                    GrantInfo{.lock = call.lock, .mode = reply.mode, .token = reply.token, .sequencer = {}});
    case Kind::kClose:
      finish(id, Status::ok());
      return closed();
    default:
      return finish(id, Status::ok());
  }
}

void LockSession::finish(uint64_t id, Status status, std::optional<GrantInfo> grant, bool current) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  const bool internal = it->second.internal;
  calls_.erase(it);
  std::erase_if(sent_, [&](const auto& s) { return s.second.call == id && s.second.orphan.empty(); });
  if (!internal) done_.push_back({id, std::move(status), std::move(grant), current});
}

void LockSession::cancel(uint64_t call, uint64_t now_ms) {
  auto it = calls_.find(call);
  if (it == calls_.end() || it->second.internal) return;
  give_up(call, now_ms, Status(Code::kCancelled, it->second.kind == Kind::kAcquire
                                                     ? "the acquire of '" + it->second.lock + "' was cancelled"
                                                     : "the call was cancelled"));
}

void LockSession::give_up(uint64_t id, uint64_t now, std::optional<Status> why) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  const Call& call = it->second;
  // A waiting acquire ran out of its wait; any other call found no master.
  const bool waited = call.kind == Kind::kAcquire && call.wait_ms > 0;
  const Code code = why ? why->code() : waited ? Code::kTimeout : Code::kUnavailable;
  std::string what = why      ? why->message()
                     : waited ? "no grant of '" + call.lock + "' within the wait of " + std::to_string(call.wait_ms) + " ms"
                              : "no lock group master answered within " + std::to_string(options_.call_timeout_ms) + " ms";
  if (call.kind == Kind::kAcquire && !call.internal && held_.count(call.lock) == 0) {
    // The lock may have been granted all the same (the answer lost, or on its
    // way): give it back, now and whenever a late grant turns up.
    const std::string lock = call.lock;
    for (auto& [rid, s] : sent_) {
      if (s.call == id) s.orphan = lock;
    }
    finish(id, Status(code, std::move(what)));
    release_orphan(lock, now);
    return;
  }
  const bool close = call.kind == Kind::kClose;
  const bool release = call.kind == Kind::kRelease && !why;
  const std::string lock = call.lock;
  finish(id, Status(code, std::move(what)));
  // The owner is done with the session all the same: kept alive by KeepAlives
  // nobody needs, it would hold its locks for ever. The group expires it.
  if (close) closed();
  // The session still holds the lock as far as the group knows, and would
  // until it ends, keeping everyone else waiting: it goes on releasing it in
  // the background until a master applies the release (unless an acquire of
  // the lock comes first, and takes the grant back).
  if (release) release_orphan(lock, now);
}

void LockSession::release_orphan(const std::string& lock, uint64_t now) {
  for (const auto& [id, call] : calls_) {
    if (call.kind == Kind::kRelease && call.lock == lock) return;  // one is on its way
    // A newer acquire of the lock is in flight: the group answers it with any
    // grant the session has, so a release sent now (numbered after it) would
    // take the lock from under that acquire. It owns whatever was granted.
    if (call.kind == Kind::kAcquire && !call.internal && call.lock == lock) return;
  }
  Call call;
  call.kind = Kind::kRelease;
  call.lock = lock;
  call.internal = true;
  start_call(std::move(call), now);
}

// ---- Routing ----

std::optional<size_t> LockSession::hinted_node(const wire::LockReply& reply) const {
  if (reply.master_endpoint.empty()) return std::nullopt;
  for (size_t i = 0; i < endpoints_.size() && i < nodes_; ++i) {
    if (endpoints_[i] == reply.master_endpoint) return i;
  }
  return std::nullopt;
}

void LockSession::heard_master(size_t node, const wire::LockReply& reply, uint64_t now) {
  epoch_ = std::max(epoch_, reply.epoch);
  hops_ = 0;
  target_ = node;
  if (master_ == node) return;
  master_ = node;
  // The master moved: calls waiting for an answer elsewhere ask it at once.
  for (auto& [id, call] : calls_) {
    if (call.request != 0 && call.node != node) send_call(call, id, now);
  }
}

bool LockSession::follow_hint(size_t node, const wire::LockReply& reply, uint64_t sent_epoch) {
  const std::optional<size_t> hint = hinted_node(reply);
  if (hint == node) {
    // The node names itself master: it refused the epoch as too new (take its
    // own), or it is not ready to serve yet (ask it again in a moment).
    target_ = node;
    if (reply.epoch != 0 && reply.epoch < sent_epoch) {
      epoch_ = reply.epoch;
      if (hops_ < nodes_) {
        ++hops_;
        return true;
      }
    }
    hops_ = 0;
    return false;
  }
  if (hint) {
    target_ = *hint;
    if (hops_ < nodes_) {
      ++hops_;
      return true;
    }
    hops_ = 0;
    return false;
  }
  moved_away_from(node);
  return false;
}

void LockSession::moved_away_from(size_t node) {
  if (target_ == node) target_ = next_node(node);
}

// ---- State ----

void LockSession::set_state(SessionState state) {
  if (state == state_) return;
  state_ = state;
  events_.push_back(state);
}

void LockSession::check_deadline(uint64_t now) {
  if (state_ == SessionState::kSafe && now >= deadline_) {
    jeopardy_end_ = add(deadline_, options_.grace_ms);
    set_state(SessionState::kJeopardy);
    // Ask at once rather than at the next regular KeepAlive.
    if (session_request_ == 0) session_send_at_ = std::min(session_send_at_, now);
  }
  if (state_ == SessionState::kJeopardy && now >= jeopardy_end_) {
    expire("no KeepAlive was answered within the grace period of " + std::to_string(options_.grace_ms) + " ms");
  }
}

void LockSession::end_all_calls(const Status& why) {
  for (const auto& [id, call] : calls_) {
    if (!call.internal) done_.push_back({id, why});
  }
  calls_.clear();
  // Only answers to open_session are still worth reading (to close a stray session).
  std::erase_if(sent_, [](const auto& s) { return s.second.kind != Kind::kOpen; });
  session_request_ = 0;
  held_.clear();
}

void LockSession::expire(std::string why) {
  if (!live()) return;
  set_state(SessionState::kExpired);
  end_all_calls(Status(Code::kNoSession, "session " + std::to_string(session_) + " expired: " + why));
}

void LockSession::closed() {
  if (state_ == SessionState::kClosed) return;
  set_state(SessionState::kClosed);
  end_all_calls(Status(Code::kNoSession, "the session was closed"));
}

void LockSession::prune(uint64_t now) {
  std::erase_if(sent_, [&](const auto& entry) {
    const Sent& s = entry.second;
    if (entry.first == session_request_) return false;
    if (!s.orphan.empty() || s.kind == Kind::kOpen) return add(s.at, kRememberStrayMs) <= now;
    // A late KeepAlive answer can extend the deadline only while it is ahead.
    if (s.kind == Kind::kKeepAlive) return lease_end(s.at, lease_ms_, options_.max_drift_ppm) <= now;
    return false;  // a call's: dropped when the call ends
  });
}

}  // namespace palisade::client
