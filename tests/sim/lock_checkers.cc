#include "tests/sim/lock_checkers.h"

#include <algorithm>
#include <iterator>
#include <variant>

namespace palisade::sim {

using lockgroup::LockState;
using lockgroup::SessionId;
using lockgroup::Slot;
using lockgroup::Token;

namespace {

std::string u(uint64_t v) { return std::to_string(v); }

}  // namespace

// ---- LockDelayChecker ----

void LockDelayChecker::requested(SessionId session, uint64_t call, uint64_t delay_ms) {
  requested_[{session, call}] = delay_ms;
}

void LockDelayChecker::apply(const std::vector<lockgroup::TaggedCommand>& batch, uint64_t applied_ms) {
  for (const lockgroup::TaggedCommand& tc : batch) {
    const auto* acquire = std::get_if<lockgroup::Acquire>(&tc.command);
    bool held = false, queued = false;
    if (acquire != nullptr) {
      if (const LockState* l = table_.lock(acquire->lock)) {
        held = l->holders.count(acquire->session) != 0;
        queued = std::any_of(l->waiters.begin(), l->waiters.end(),
                             [&](const lockgroup::Waiter& w) { return w.session == acquire->session; });
      }
      for (Delay& d : delays_[acquire->lock]) {
        if (!d.contested && acquire->session != d.session && applied_ms < d.start_ms + d.delay_ms) {
          d.contested = true;
          ++contested_;
        }
      }
    }
    SessionId ended = 0;
    std::vector<std::pair<std::string, Delay>> starting;
    if (const auto* expire = std::get_if<lockgroup::ExpireSession>(&tc.command)) {
      starting = expiring(expire->session, applied_ms);
      ended = expire->session;
    } else if (const auto* close = std::get_if<lockgroup::CloseSession>(&tc.command)) {
      ended = close->session;
    }

    const lockgroup::Effects effects = table_.apply({tc});
    const lockgroup::CommandResult& result = effects.results.front();
    if (result.outcome == lockgroup::Outcome::kStaleEpoch) {
      ended = 0;  // void: the session lives on, and no delay starts
    } else {
      for (const auto& [lock, d] : starting) start(lock, d);
    }
    if (acquire != nullptr) {
      const Key key{acquire->session, acquire->lock};
      if (result.grant && !held) holding_call_[key] = acquire->call;
      if (result.outcome == lockgroup::Outcome::kQueued && !queued) queued_call_[key] = acquire->call;
      if (result.grant) granted(result.grant->lock, result.grant->token, applied_ms);
    }
    for (const lockgroup::Grant& g : effects.woken) {
      const Key key{g.session, g.lock};
      if (auto q = queued_call_.find(key); q != queued_call_.end()) {
        holding_call_[key] = q->second;
        queued_call_.erase(q);
      } else {
        holding_call_.erase(key);  // unknown (a gap): the table's own record of the delay counts
      }
      granted(g.lock, g.token, applied_ms);
    }
    if (ended != 0) {
      const Key from{ended, std::string()}, to{ended + 1, std::string()};
      holding_call_.erase(holding_call_.lower_bound(from), holding_call_.lower_bound(to));
      queued_call_.erase(queued_call_.lower_bound(from), queued_call_.lower_bound(to));
      requested_.erase(requested_.lower_bound({ended, 0}), requested_.lower_bound({ended + 1, 0}));
    }
  }
}

void LockDelayChecker::restart_from(const lockgroup::LockTable& table) {
  table_ = table;
  holding_call_.clear();
  queued_call_.clear();
  ++gaps_;
}

std::vector<std::pair<std::string, LockDelayChecker::Delay>> LockDelayChecker::expiring(SessionId session,
                                                                                        uint64_t at_ms) const {
  std::vector<std::pair<std::string, Delay>> starting;
  for (const auto& [name, l] : table_.locks()) {
    // Only the expiry that leaves the lock free starts a delay (design-changes §11).
    if (l.holders.size() != 1 || l.holders.count(session) == 0) continue;
    const uint64_t delay_ms = delay_of(session, name, l);
    if (delay_ms != 0) starting.emplace_back(name, Delay{l.token, session, at_ms, delay_ms, false});
  }
  return starting;
}

void LockDelayChecker::start(const std::string& lock, const Delay& d) {
  ++started_;
  delays_[lock].push_back(d);
  const auto& grants = grants_[lock];
  for (auto g = grants.upper_bound(d.token); g != grants.end(); ++g) judge(lock, d, g->first, g->second);
}

uint64_t LockDelayChecker::delay_of(SessionId session, const std::string& lock, const LockState& l) const {
  if (auto call = holding_call_.find({session, lock}); call != holding_call_.end()) {
    if (auto asked = requested_.find({session, call->second}); asked != requested_.end()) return asked->second;
  }
  return l.holders.at(session);  // not a call the simulation made, or the log had a gap
}

void LockDelayChecker::granted(const std::string& lock, Token token, uint64_t seen_ms) {
  auto [it, fresh] = grants_[lock].try_emplace(token, seen_ms);
  if (!fresh) {
    if (seen_ms >= it->second) return;
    it->second = seen_ms;
  }
  auto delays = delays_.find(lock);
  if (delays == delays_.end()) return;
  for (const Delay& d : delays->second) judge(lock, d, token, seen_ms);
}

void LockDelayChecker::judge(const std::string& lock, const Delay& d, Token token, uint64_t granted_ms) {
  if (token <= d.token) return;  // granted before the expiry
  // The master's clock may run fast by the drift bound; 1 ms for rounding to whole milliseconds.
  const uint64_t slack_ms = (d.delay_ms * max_drift_ppm_ + 999'999) / 1'000'000 + 1;
  if (granted_ms + slack_ms >= d.start_ms + d.delay_ms) return;
  if (!reported_.insert({lock, token}).second) return;
  violations_.push_back("lock-delay: " + lock + " granted with token " + u(token) + " by " + u(granted_ms) + " ms, " +
                        u(granted_ms - std::min(granted_ms, d.start_ms)) + " ms after session " + u(d.session) +
                        " expired holding it (token " + u(d.token) + ") at " + u(d.start_ms) +
                        " ms with a lock-delay of " + u(d.delay_ms) + " ms");
}

// ---- TokenChecker ----

void TokenChecker::observe(int node, const lockgroup::LockTable& table, Slot after, Slot through) {
  auto& seen = nodes_[node];
  for (auto& [name, s] : seen) {
    if (table.lock(name) == nullptr) s.free_since = true;
  }
  for (const auto& [name, l] : table.locks()) {
    if (l.token == 0) continue;
    Seen& s = seen[name];
    const bool held = !l.holders.empty();
    if (l.token < s.token) {
      violations_.push_back("lock " + name + " token went from " + u(s.token) + " to " + u(l.token) + " on lockd " +
                            std::to_string(node));
      continue;
    }
    // A new grant; or the same token again after the lock was free, which only a grant from free can do.
    if (l.token > s.token || (held && s.free_since)) {
      record(node, name, l.token, after + 1, through);
      s = Seen{l.token, false};
    }
    if (!held) s.free_since = true;
  }
}

void TokenChecker::record(int node, const std::string& lock, Token token, Slot first, Slot last) {
  const std::string where = " (lockd " + std::to_string(node) + ")";
  auto report = [&](const std::string& what) {
    if (reported_.insert(token).second) violations_.push_back(what + where);
  };
  auto [it, fresh] = grants_.try_emplace(token, Grant{lock, first, last});
  Grant& g = it->second;
  if (!fresh) {
    if (g.lock != lock) return report("token " + u(token) + " granted for both " + g.lock + " and " + lock);
    if (std::max(g.first, first) > std::min(g.last, last)) {
      return report("token " + u(token) + " of " + lock + " granted twice: in slots " + u(g.first) + ".." + u(g.last) +
                    " and again in slots " + u(first) + ".." + u(last));
    }
    g.first = std::max(g.first, first);
    g.last = std::min(g.last, last);
  }
  // Strictly increasing: a smaller token was granted in the same slot or an earlier one.
  for (auto o = grants_.begin(); o != it; ++o) {
    if (o->second.first > g.last) {
      return report("token " + u(token) + " of " + lock + " granted by slot " + u(g.last) + ", before token " +
                    u(o->first) + " of " + o->second.lock + " (slot " + u(o->second.first) + " or later)");
    }
  }
  for (auto o = std::next(it); o != grants_.end(); ++o) {
    if (o->second.last < g.first) {
      return report("token " + u(token) + " of " + lock + " granted in slot " + u(g.first) + " or later, after token " +
                    u(o->first) + " of " + o->second.lock + " (by slot " + u(o->second.last) + ")");
    }
  }
}

}  // namespace palisade::sim
