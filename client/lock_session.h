// The client side of a lock-group session, sans-I/O (docs/design.md
// "Sessions and leases"): finds the master, opens the session, schedules KeepAlives, keeps
// the local lease deadline, and runs acquire/release/check calls with retries
// across failovers. LockClient wires it to ZeroMQ and CLOCK_BOOTTIME; the
// simulator wires it to simulated nodes and clocks.
//
// The local deadline is started *before* each KeepAlive is sent and shortened by
// the clock drift bound, so it never ends later than the master's. When it
// passes, the session is in jeopardy; a KeepAlive answered within the grace
// period makes it safe again, otherwise (or on no_session) it is expired.
// KeepAlives go a third of the session's lease apart (the lease the master
// answered with, the session's own length when it chose one).
//
// Routing: requests go to the current master guess (node 0 at first). A node
// that is not master answers not_master with the master it knows of: the next
// request goes there at once (when set_endpoints can map the hint; at most
// `nodes` hops in a row, then after retry_backoff_ms), else to the next node
// after retry_backoff_ms. A request unanswered for request_timeout_ms moves the
// guess to the next node. Any other answer names the node that sent it master;
// when the guess changes that way, calls waiting on another node are resent to
// it at once.
//
// Epochs: replies from a master (every code but not_master) carry the master's
// epoch, and the session keeps the highest it saw. Not_master replies carry what
// a follower promised, which may be a ballot that never won, so they are not
// adopted; except when a node names itself master and refuses the call's epoch
// as too new: then its epoch is taken as is.
//
// Thread safety: none; one thread owns a session core.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wire/lock_protocol.h"
#include "palisade/lock_mode.h"
#include "palisade/status.h"

namespace palisade::client {

struct LockSessionOptions {
  size_t nodes = 0;                    // lockd nodes, addressed by index 0..nodes-1
  uint64_t request_timeout_ms = 1000;  // resend (to the next node) after this
  uint64_t grace_ms = 45000;           // jeopardy lasts at most this long
  uint64_t max_drift_ppm = 1000;
  // A call still unanswered this long after it started (plus its wait, for a
  // waiting acquire) ends: Timeout for a waiting acquire, else Unavailable. An
  // acquire that ends so is given back (a release, and another for any grant
  // that turns up later).
  uint64_t call_timeout_ms = 10000;
  // Pause before asking again after a not_master without a usable hint, or a
  // send the driver could not make (on_unreachable).
  uint64_t retry_backoff_ms = 50;
  // The session lease to ask for (wire::kMinSessionLeaseMs..kMaxSessionLeaseMs,
  // and at least twice the group's heartbeat); 0: the cluster's default. The
  // session follows whatever lease the master answers with.
  uint64_t session_lease_ms = 0;
  // The cluster's id (base/cluster_id.h), named by every request; empty:
  // none. A node that answers wrong_cluster ends the session at once (kExpired;
  // open_error() and every call's end say which node and which ids): a
  // client pointed at another cluster's daemons must not go on with them.
  std::string cluster_id{};
  // Negative control for the simulator: the local lease deadline counts from
  // the reply's arrival, not from the request's send, so a reply the network
  // held back stretches it past the master's.
  bool broken_lease_from_reply = false;
};

enum class SessionState : uint8_t { kOpening, kSafe, kJeopardy, kExpired, kClosed };
std::string_view state_name(SessionState state);

// A granted lock as the session core sees it.
struct GrantInfo {
  std::string lock;
  LockMode mode = LockMode::kExclusive;
  uint64_t token = 0;
  std::string sequencer;
};

// The end of a call started by acquire/release/check_sequencer/current_grant/close.
struct CallDone {
  uint64_t call = 0;
  Status status;
  // acquire, ok; current_grant, ok, while the lock is held (no sequencer)
  std::optional<GrantInfo> grant{};
  bool current = false;              // check_sequencer, ok
};

// A message to send to the node with index `node`.
struct Outgoing {
  size_t node = 0;
  wire::LockRequest request;
  uint64_t call = 0;  // the call it serves; 0: a session request
};

// The local deadline a lease of `lease_ms` gives to a request sent at `sent_ms`:
// sent_ms + lease_ms * (1e6 - ppm) / (1e6 + ppm), rounded down (the master's
// clock may run `ppm` fast while ours runs `ppm` slow).
uint64_t lease_end(uint64_t sent_ms, uint64_t lease_ms, uint64_t max_drift_ppm);

class LockSession {
 public:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

  // Starts opening the session at once (take_outgoing has the first request).
  LockSession(LockSessionOptions options, uint64_t now_ms);

  // The driver maps endpoints in not_master hints to node indexes with this
  // (set once at start): index of each endpoint.
  void set_endpoints(std::vector<std::string> endpoints);
  // The nodes as the session knows them now: those set at start, then every
  // member a session reply named that was not among them, appended (indexes
  // never change). A hint only ever names a node the session knows: an
  // address the group gives may be unreachable under that name here (behind
  // a proxy, without its key), and the session would follow it in circles. The driver reaches node i at endpoints()[i], with
  // key_of(i) when the group gave its public key (else its own, if any).
  const std::vector<std::string>& endpoints() const { return endpoints_; }
  std::string key_of(size_t node) const { return node < keys_.size() ? keys_[node] : std::string(); }
  // The lock group's membership version the session last learnt (0: none).
  uint64_t members_version() const { return members_version_; }

  void on_reply(size_t node, const wire::LockReply& reply, uint64_t now_ms);
  // The driver could not hand request `request_id` to `node` (not connected):
  // treated as a timeout after retry_backoff_ms rather than request_timeout_ms.
  void on_unreachable(size_t node, uint64_t request_id, uint64_t now_ms);
  void tick(uint64_t now_ms);

  // Calls; each ends with one CallDone (possibly at once, in take_done). wait_ms
  // 0: answer busy at once. Calls made before the session is open wait for it;
  // after it expired or closed they end with no_session.
  uint64_t acquire(std::string lock, LockMode mode, uint64_t lock_delay_ms, uint64_t wait_ms, uint64_t now_ms);
  // When no master answers it within call_timeout it ends unavailable, and
  // the session goes on releasing the lock in the background while it lives
  // (until an acquire of the lock, which gets the grant back if still held).
  uint64_t release(std::string lock, uint64_t now_ms);
  // release(lock) if this session's grant of `lock` is still the one with
  // `token`; else the call ends at once, ok, releasing nothing: that grant was
  // released already, and a newer grant of the lock must not be.
  uint64_t release_grant(std::string lock, uint64_t token, uint64_t now_ms);
  uint64_t check_sequencer(std::string sequencer, uint64_t now_ms);
  // The master's grant of `lock` now (CallDone::grant), none while it is free.
  uint64_t current_grant(std::string lock, uint64_t now_ms);
  // Closes the session cleanly (its locks are released without lock-delay).
  // When no master answers it within call_timeout, it ends unavailable and the
  // session is closed here all the same: no more KeepAlives, so the lock group
  // expires it after its lease (its locks then get their lock-delay).
  uint64_t close(uint64_t now_ms);
  // Ends call `call` at once with Cancelled, if it has not ended. An acquire's
  // grant that turns up later is given back.
  void cancel(uint64_t call, uint64_t now_ms);

  // What to send; every request names options.cluster_id.
  std::vector<Outgoing> take_outgoing();
  std::vector<CallDone> take_done() { return std::exchange(done_, {}); }
  // State changes, in order (kSafe after kOpening or kJeopardy, kExpired, kClosed).
  std::vector<SessionState> take_events() { return std::exchange(events_, {}); }
  bool has_events() const { return !events_.empty(); }
  // When tick must run next; kNever when nothing is scheduled.
  uint64_t next_timer_ms() const;

  SessionState state() const { return state_; }
  // Why the session could not be opened (the master refused the open_session
  // as bad_request, e.g. a lease out of its range, or a node answered
  // wrong_cluster: the session is kExpired); ok otherwise.
  const Status& open_error() const { return open_error_; }
  uint64_t session() const { return session_; }
  uint64_t epoch() const { return epoch_; }
  // The node requests go to now.
  size_t master_guess() const { return target_; }
  // Local lease deadline (same clock as now_ms); leases are valid before it.
  uint64_t lease_deadline() const { return deadline_; }
  bool lease_valid(uint64_t now_ms) const { return state_ == SessionState::kSafe && now_ms < deadline_; }
  // Calls not yet ended (internal clean-up releases included).
  size_t calls_in_flight() const { return calls_.size(); }

 private:
  enum class Kind : uint8_t { kOpen, kKeepAlive, kAcquire, kRelease, kCheck, kGrant, kClose };

  struct Call {
    Kind kind = Kind::kAcquire;
    std::string lock;  // acquire, release, current_grant; check_sequencer: the sequencer
    LockMode mode = LockMode::kExclusive;
    uint64_t lock_delay_ms = 0;
    uint64_t wait_ms = 0;
    uint64_t wait_end = 0;    // acquire: when its wait runs out
    uint64_t give_up_at = 0;  // ends with Timeout then
    uint64_t resend_at = 0;   // kNever: not sent (waits for the session)
    uint64_t request = 0;     // the latest request sent, 0 when none
    size_t node = 0;          // where it went
    bool rotate = true;       // at resend_at: a timeout (move the guess on), not a backoff
    bool internal = false;    // no CallDone: a clean-up release
    // Acquire: release() of its lock was called after it, so whatever grant it
    // reports was given back (or is given back now), not held.
    bool released = false;
  };

  // A request in flight, by id.
  struct Sent {
    Kind kind = Kind::kOpen;
    uint64_t call = 0;  // 0: a session request (open, keep_alive)
    uint64_t at = 0;
    size_t node = 0;
    uint64_t epoch = 0;
    std::string orphan;  // an acquire whose call timed out: release a late grant of this lock
  };

  // Session requests.
  void send_session_request(uint64_t now);
  void on_session_reply(const Sent& sent, uint64_t request_id, size_t node, const wire::LockReply& reply, uint64_t now);
  // After a not_master or stale_epoch: the session request goes again now, or after the backoff.
  void ask_again(bool at_once, uint64_t now);
  // Closes a session opened by a duplicate open_session (fire and forget).
  void close_stray(size_t node, uint64_t session);
  // Calls.
  uint64_t start_call(Call call, uint64_t now);
  // Sends (again) to the master guess; a call that needs the session waits for it.
  void send_call(Call& call, uint64_t id, uint64_t now);
  void on_call_reply(const Sent& sent, uint64_t request_id, size_t node, const wire::LockReply& reply, uint64_t now);
  void finish(uint64_t id, Status status, std::optional<GrantInfo> grant = std::nullopt, bool current = false);
  // Ends a call that ran out of time (or, with `why`, was cancelled).
  void give_up(uint64_t id, uint64_t now, std::optional<Status> why = std::nullopt);
  void release_orphan(const std::string& lock, uint64_t now);

  // Routing.
  // The next node in turn, skipping those the membership left out.
  size_t next_node(size_t node) const;
  // A session reply that names a newer membership: new members are appended
  // to the nodes, and the others are asked no more.
  void learn_members(const wire::LockReply& reply);
  // Appends a node the session did not know; its index.
  size_t add_node(const std::string& endpoint, const std::string& key);
  std::optional<size_t> hinted_node(const wire::LockReply& reply) const;
  // A master answered from `node`; resends calls waiting elsewhere when the guess moves.
  void heard_master(size_t node, const wire::LockReply& reply, uint64_t now);
  // After a not_master: where to ask next, and whether at once.
  bool follow_hint(size_t node, const wire::LockReply& reply, uint64_t sent_epoch);
  void moved_away_from(size_t node);

  // State.
  bool live() const {
    return state_ == SessionState::kOpening || state_ == SessionState::kSafe || state_ == SessionState::kJeopardy;
  }
  void set_state(SessionState state);
  void check_deadline(uint64_t now);
  // When a lease answered at `now` to a request sent at `sent` starts.
  uint64_t lease_start(uint64_t sent, uint64_t now) const { return options_.broken_lease_from_reply ? now : sent; }
  void end_all_calls(const Status& why);
  // A node answered wrong_cluster: the session ends, every call with WrongCluster.
  void wrong_cluster(size_t node, const Status& why);
  void expire(std::string why);
  void closed();
  void prune(uint64_t now);
  uint64_t new_request_id() { return next_request_++; }

  LockSessionOptions options_;
  SessionState state_ = SessionState::kOpening;
  uint64_t session_ = 0;
  uint64_t epoch_ = 0;
  uint64_t deadline_ = 0;
  uint64_t jeopardy_end_ = 0;  // kJeopardy: expiry
  uint64_t lease_ms_ = 0;      // from the last ok session reply
  Status open_error_;

  size_t nodes_ = 0;  // options_.nodes, then more as members are learnt
  std::vector<std::string> endpoints_;
  std::vector<std::string> keys_;  // by node, from the membership: "" when not given
  std::vector<char> in_group_;  // by node: 0 once a membership left it out
  uint64_t members_version_ = 0;
  size_t target_ = 0;             // where requests go
  std::optional<size_t> master_;  // the node a master answered from last
  size_t hops_ = 0;               // hints followed at once in a row

  // The session request in flight (open or keep_alive): 0 when none.
  uint64_t session_request_ = 0;
  uint64_t session_retry_at_ = 0;  // in flight: unanswered then, ask (the next node) again
  uint64_t session_send_at_ = 0;   // none in flight: send the next one then

  uint64_t next_request_ = 1;
  uint64_t next_call_ = 1;
  std::map<uint64_t, Sent> sent_;   // by request id
  std::map<uint64_t, Call> calls_;  // by call id
  std::map<std::string, uint64_t> held_;  // locks granted to this session and not released -> their token

  std::vector<Outgoing> out_;
  std::vector<CallDone> done_;
  std::vector<SessionState> events_;
};

}  // namespace palisade::client
