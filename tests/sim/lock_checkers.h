// Checkers of two promises of the lock group that no single node can see
// broken: lock-delay (docs/sessions.md "Lock-delay", docs/design-changes.md
// §11) and fencing tokens that strictly increase over all grants of the group
// (docs/design.md "Lock group", docs/sessions.md "Leases and tokens"). The lock
// simulation feeds them what it sees; they keep their own records, across
// every node and every reboot. Times are global simulated milliseconds.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lockgroup/lock_table.h"
#include "lockgroup/paxos_messages.h"

namespace palisade::sim {

// Lock-delay: when a session expires holding a lock and its expiry leaves the
// lock free, nobody gets the lock until the delay its holder asked for has
// passed (an expiry that leaves shared holders behind starts no delay; a clean
// release or close starts none). The master times the delay on its own clock
// from when it applies the expiry, so no grant of the lock may be applied
// anywhere before the expiry was first applied plus the delay, less what the
// drift bound lets the master's clock run fast (and 1 ms of rounding).
//
// The delay's length is what the holder's client asked for with the acquire
// that was granted (requested()), not what reached the lock table, so a group
// that loses or ignores lock-delays on the way is caught too. Which acquire
// call a holding came from, and whether an expiry left the lock free, come
// from replaying the chosen log, slot by slot, on a lock table of the
// checker's own: the holders are the table's bookkeeping, the delay rule is
// the checker's.
class LockDelayChecker {
 public:
  explicit LockDelayChecker(uint64_t max_drift_ppm) : max_drift_ppm_(max_drift_ppm) {}

  // The client asked for `delay_ms` with acquire call `call` of `session`.
  void requested(lockgroup::SessionId session, uint64_t call, uint64_t delay_ms);
  // The commands of the next chosen slot; `applied_ms`: when some node first applied it.
  void apply(const std::vector<lockgroup::TaggedCommand>& batch, uint64_t applied_ms);
  // The slots since the last apply() are lost: continue from `table`, the
  // lock table of a node that applied the slot before the next apply().
  void restart_from(const lockgroup::LockTable& table);
  // `lock` was granted with `token` no later than `seen_ms` (a lock table showed it then).
  void granted(const std::string& lock, lockgroup::Token token, uint64_t seen_ms);

  std::vector<std::string> take_violations() { return std::exchange(violations_, {}); }
  uint64_t started() const { return started_; }      // lock-delays the log started
  uint64_t contested() const { return contested_; }  // of them, ones another acquire ran into
  uint64_t gaps() const { return gaps_; }            // restart_from() calls

 private:
  struct Delay {
    lockgroup::Token token = 0;  // the grant the expiry took away; later grants have larger tokens
    lockgroup::SessionId session = 0;
    uint64_t start_ms = 0;
    uint64_t delay_ms = 0;
    bool contested = false;
  };
  using Key = std::pair<lockgroup::SessionId, std::string>;  // (session, lock)

  // Before ExpireSession{session} is applied: the delays its expiry starts
  // if it applies (one an older master timed may be void: kStaleEpoch).
  std::vector<std::pair<std::string, Delay>> expiring(lockgroup::SessionId session, uint64_t at_ms) const;
  void start(const std::string& lock, const Delay& d);
  uint64_t delay_of(lockgroup::SessionId session, const std::string& lock, const lockgroup::LockState& l) const;
  void judge(const std::string& lock, const Delay& d, lockgroup::Token token, uint64_t granted_ms);

  uint64_t max_drift_ppm_;
  lockgroup::LockTable table_;
  // (session, call) -> the delay the client asked for
  std::map<std::pair<lockgroup::SessionId, uint64_t>, uint64_t> requested_;
  std::map<Key, uint64_t> holding_call_;  // the acquire call a holding came from
  std::map<Key, uint64_t> queued_call_;   // the acquire call a wait came from
  std::map<std::string, std::vector<Delay>> delays_;
  std::map<std::string, std::map<lockgroup::Token, uint64_t>> grants_;  // lock -> token -> earliest time seen
  std::set<std::pair<std::string, lockgroup::Token>> reported_;
  std::vector<std::string> violations_;
  uint64_t started_ = 0, contested_ = 0, gaps_ = 0;
};

// Tokens: a token belongs to one grant, of one lock, applied in one slot, and
// a larger token to a grant in the same slot or a later one. Each node's lock
// table is shown after every step with the slots it applied since it was last
// shown; a token it shows for the first time (or again, after the lock was
// free) was granted in one of those slots. The records are global, so a node
// that reboots or restores a snapshot and hands out a token again is caught.
class TokenChecker {
 public:
  // Node `node` starts again (it rebooted): what it shows next may be old.
  void restart(int node) { nodes_.erase(node); }
  // Node `node`'s lock table, having applied slots through `through`, all of
  // them after `after` since it was last shown (0: unknown, e.g. it restored a snapshot).
  void observe(int node, const lockgroup::LockTable& table, lockgroup::Slot after, lockgroup::Slot through);
  std::vector<std::string> take_violations() { return std::exchange(violations_, {}); }

 private:
  struct Seen {
    lockgroup::Token token = 0;
    bool free_since = false;  // the node showed the lock free after that token
  };
  struct Grant {
    std::string lock;
    lockgroup::Slot first = 0, last = 0;  // the grant was applied in a slot in [first, last]
  };
  void record(int node, const std::string& lock, lockgroup::Token token, lockgroup::Slot first, lockgroup::Slot last);

  std::map<int, std::map<std::string, Seen>> nodes_;
  std::map<lockgroup::Token, Grant> grants_;
  std::set<lockgroup::Token> reported_;
  std::vector<std::string> violations_;
};

}  // namespace palisade::sim
