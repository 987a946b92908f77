// The lock table: the replicated state machine of the lock group (docs/design.md
// "Lock group"). Deterministic and pure: every node applies the same chosen commands
// in the same order and reaches the same state. No clocks, no I/O: durations
// (lock-delay, wait) are stored as durations, and the master times them on its
// own clock and ends them with logged commands (EndDelay, CancelWait, ExpireSession).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "palisade/lock_mode.h"
#include "palisade/status.h"
#include "wire/replica_set.h"

namespace palisade::lockgroup {

using SessionId = uint64_t;  // from 1; 0 means none
using Token = uint64_t;      // from 1

// ---- Commands (the master proposes them; every node applies them) ----
// `lease_ms`: the session lease the client chose; 0 means the cluster's
// default (`session_lease_ms`). The master checked its range before proposing;
// the table keeps it so that any later master renews the session with it.
// `identity`: who opened it (the CURVE identity; empty on plaintext links):
// only that identity may use the session, and its grants name it.
struct OpenSession {
  uint64_t lease_ms = 0;
  std::string identity{};
  friend bool operator==(const OpenSession&, const OpenSession&) = default;
};
// A clean close: the session's locks are released without lock-delay.
struct CloseSession {
  SessionId session = 0;
  friend bool operator==(const CloseSession&, const CloseSession&) = default;
};
// The master saw the session's lease run out: its locks are released with the
// lock-delay each was acquired with; its waits are dropped.
// `epoch` (here, in EndDelay and CancelWait): the epoch of the master whose
// clock made the command. Such a command is void (kStaleEpoch) once a newer
// master's MasterEpoch was applied: that master timed everything afresh, and
// Paxos recovery may choose an old master's command long after it was made.
// 0: from a node older than epochs in commands (always applied).
struct ExpireSession {
  SessionId session = 0;
  uint64_t epoch = 0;
  friend bool operator==(const ExpireSession&, const ExpireSession&) = default;
};
struct Acquire {
  SessionId session = 0;
  std::string lock;
  LockMode mode = LockMode::kExclusive;
  uint64_t lock_delay_ms = 0;  // applied if this session expires while holding it
  bool wait = false;           // queue behind the holders instead of answering Busy
  uint64_t wait_ms = 0;        // how long the master lets it wait (it times it)
  uint64_t call = 0;           // see below
  friend bool operator==(const Acquire&, const Acquire&) = default;
};
struct Release {
  SessionId session = 0;
  std::string lock;
  uint64_t call = 0;
  friend bool operator==(const Release&, const Release&) = default;
};
// `call`: the client's number for the call, increasing within a session; a
// retry repeats it. An acquire or release of a lock with a lower number than
// one already applied for the same session and lock is a late duplicate (a
// delayed message) and changes nothing (kStaleCall): otherwise a release sent
// long ago could free a later grant. The same number again was answered
// already, so it changes nothing either: an acquire reports the hold or wait
// the first one left, else kBusy without a wait (as the first answer) and
// kWaitEnded with one (its wait ran out); a release frees nothing. 0: unordered.
// Ends the lock-delay of `lock` started by the expiry that took `token` away.
// Ignored when the lock is not in that delay (a duplicate, or a later expiry).
struct EndDelay {
  std::string lock;
  Token token = 0;
  uint64_t epoch = 0;
  friend bool operator==(const EndDelay&, const EndDelay&) = default;
};
// The master ended a wait: drops `session`'s queued acquire of `lock`, if any.
struct CancelWait {
  SessionId session = 0;
  std::string lock;
  uint64_t epoch = 0;
  friend bool operator==(const CancelWait&, const CancelWait&) = default;
};

// A new master's first command (the value of its first own slot, before any
// command it makes): from here on, commands made by the clocks of masters of
// older epochs are void. Epochs are the masters' ballots.
struct MasterEpoch {
  uint64_t epoch = 0;
  friend bool operator==(const MasterEpoch&, const MasterEpoch&) = default;
};

// A node of the lock group as its membership records it.
struct LockNode {
  uint32_t id = 0;  // 1..255
  std::string address;  // where peers and clients reach it
  std::string key{};  // its CURVE public key (Z85) on a secure cluster, else empty
  friend bool operator==(const LockNode&, const LockNode&) = default;
};
// The lock group's members from the next slot on (docs/design.md "Membership"):
// the Paxos node reads it too (members_after), so a master proposes it alone
// in its batch. Nodes sorted by id, no id twice, 1 to 255 of them.
struct SetMembers {
  std::vector<LockNode> nodes{};
  friend bool operator==(const SetMembers&, const SetMembers&) = default;
};

// The replica set record from now on (docs/design.md "The replica set"). The
// master proposes it with the version after the one it checked; applied only
// when that is still the next version (kStaleVersion otherwise: another change
// was applied first), so that of two changes of one version only one applies.
struct SetReplicas {
  wire::ReplicaSet set;
  friend bool operator==(const SetReplicas&, const SetReplicas&) = default;
};

using Command = std::variant<OpenSession, CloseSession, ExpireSession, Acquire, Release, EndDelay, CancelWait,
                             SetMembers, SetReplicas, MasterEpoch>;

// One Paxos value: the commands the master batched into one slot, each tagged
// with an id the master chose so that it can find whom to answer.
struct TaggedCommand {
  uint64_t tag = 0;
  Command command;
  friend bool operator==(const TaggedCommand&, const TaggedCommand&) = default;
};
std::string encode_batch(const std::vector<TaggedCommand>& batch);
// BadRequest/Malformed when the bytes are not a batch (a bug or corruption).
Result<std::vector<TaggedCommand>> decode_batch(std::string_view bytes);

// The lock group's node ids a Paxos value makes from the next slot on, when it
// changes them (a batch of one SetMembers); nullopt otherwise. The Paxos
// node's members_after.
std::optional<std::vector<uint32_t>> members_after(std::string_view value);
// The node ids a lock table snapshot records; nullopt when it records none
// (or is not a snapshot). The Paxos node's members_in_snapshot.
std::optional<std::vector<uint32_t>> members_in_snapshot(std::string_view snapshot);

// ---- What applying produces ----
enum class Outcome : uint8_t {
  kOk,  // done (OpenSession: `session` is the new id; Acquire: granted)
  kQueued,  // Acquire with wait: queued behind the holders
  kBusy,  // Acquire without wait: held by another session in a conflicting mode
  kDelayed,  // Acquire without wait: free but in lock-delay
  kNoSession,  // the session does not exist (expired or closed)
  kNotHeld,  // Release of a lock the session does not hold
  kConflict,  // Acquire of a lock the session holds in the other mode
  kStaleCall,  // Acquire or Release older than a call already applied, or a repeat (see `call`)
  kWaitEnded,  // a repeat of an Acquire with wait whose wait ended (ran out) unanswered by a grant
  kStaleVersion,  // SetReplicas whose version is not the one after the table's
  kStaleEpoch,  // ExpireSession, EndDelay or CancelWait of an epoch older than the table's: changed nothing
};
std::string_view outcome_name(Outcome outcome);

// A grant. Tokens come from one counter over all locks: each grant that takes a
// lock from free to held takes the next value; a shared holder joining a held
// lock gets the lock's current token.
struct Grant {
  SessionId session = 0;
  std::string lock;
  LockMode mode = LockMode::kExclusive;
  Token token = 0;
  friend bool operator==(const Grant&, const Grant&) = default;
};

// The answer to one command.
struct CommandResult {
  uint64_t tag = 0;
  Outcome outcome = Outcome::kOk;
  SessionId session = 0;        // OpenSession: the new session
  std::optional<Grant> grant{};  // Acquire answered kOk
  std::vector<std::string> released{};  // CloseSession, ExpireSession: the locks the session held
  bool again = false;  // Acquire answered kOk: the session held the lock already, and keeps that grant
  friend bool operator==(const CommandResult&, const CommandResult&) = default;
};

// Something the master must start timing after a command was applied.
struct DelayStarted {
  std::string lock;
  Token token = 0;  // the token the expiry took away; EndDelay names it
  uint64_t delay_ms = 0;
  friend bool operator==(const DelayStarted&, const DelayStarted&) = default;
};

struct Effects {
  std::vector<CommandResult> results;  // one per command, in order
  std::vector<Grant> woken;            // queued acquires granted by this batch
  std::vector<DelayStarted> delays;    // lock-delays this batch started
  friend bool operator==(const Effects&, const Effects&) = default;
};

// ---- The state ----
struct Waiter {
  SessionId session = 0;
  LockMode mode = LockMode::kExclusive;
  uint64_t lock_delay_ms = 0;
  uint64_t wait_ms = 0;
  friend bool operator==(const Waiter&, const Waiter&) = default;
};

struct LockState {
  LockMode mode = LockMode::kExclusive;
  std::map<SessionId, uint64_t> holders;  // session -> its lock-delay in ms
  Token token = 0;                        // of the current (or last) grant
  uint64_t delay_ms = 0;                  // > 0: free but in lock-delay
  std::deque<Waiter> waiters;             // FIFO
  friend bool operator==(const LockState&, const LockState&) = default;
};

// The open sessions, each with the lease length it chose (0: the cluster's default).
using Sessions = std::map<SessionId, uint64_t>;

class LockTable {
 public:
  // Applies one chosen batch. Deterministic.
  Effects apply(const std::vector<TaggedCommand>& batch);

  bool has_session(SessionId session) const { return sessions_.count(session) != 0; }
  const Sessions& sessions() const { return sessions_; }
  // The lease length `session` chose; 0 for the cluster's default or an unknown session.
  uint64_t session_lease_ms(SessionId session) const;
  // The identity that opened `session`; empty when none (or an unknown session).
  std::string_view session_identity(SessionId session) const;
  const std::map<std::string, LockState, std::less<>>& locks() const { return locks_; }
  // The lock's state; nullptr when it is free, not delayed and has no waiters.
  const LockState* lock(std::string_view name) const;
  // The locks `session` holds and the ones it waits for.
  std::vector<std::string> held_by(SessionId session) const;
  std::vector<std::string> waited_by(SessionId session) const;
  Token grant_counter() const { return grant_counter_; }
  // Whether `token` is the current token of `lock` held in `mode` (CheckSequencer).
  bool is_current(std::string_view lock, LockMode mode, Token token) const;
  // The lock group's members as the last SetMembers set them (empty before
  // any: the cluster file's), and how many SetMembers were applied.
  const std::vector<LockNode>& members() const { return members_; }
  uint64_t members_version() const { return members_version_; }
  // The replica set as the last SetReplicas made it; version 0 before any
  // (the cluster file's [[replica]] list stands).
  const wire::ReplicaSet& replica_set() const { return replica_set_; }
  // The newest master epoch applied (MasterEpoch); 0 before any.
  uint64_t epoch() const { return epoch_; }

  // "" when the table keeps every invariant apply() keeps (a snapshot that
  // breaks one is corrupt), else the first one it breaks.
  std::string check_invariants() const;

  // The whole state, for log compaction and catch-up.
  std::string snapshot() const;
  // Replaces the state (Corrupt when the bytes are not a snapshot; then unchanged).
  Status restore(std::string_view bytes);

  friend bool operator==(const LockTable&, const LockTable&) = default;

 private:
  CommandResult apply_one(uint64_t tag, const Command& command, Effects& effects);
  // Grants queued acquires at the head of `name`'s queue while they can be granted.
  void wake(const std::string& name, Effects& effects);
  // Drops the lock's entry when nothing about it is left to remember.
  void forget_if_idle(const std::string& name);
  // How `call` compares with the last one applied for the session and lock; records a new one.
  enum class CallAge { kNew, kRepeat, kStale };
  CallAge call_age(SessionId session, const std::string& lock, uint64_t call);

  SessionId next_session_ = 1;
  Token grant_counter_ = 0;
  Sessions sessions_;
  std::map<SessionId, std::string> identities_;  // sessions opened by an identity
  std::map<std::string, LockState, std::less<>> locks_;
  std::map<std::pair<SessionId, std::string>, uint64_t> calls_;  // the last call applied
  std::vector<LockNode> members_;
  uint64_t members_version_ = 0;
  wire::ReplicaSet replica_set_;
  uint64_t epoch_ = 0;
};

}  // namespace palisade::lockgroup
