// The lock table (docs/design.md "Lock group"): grants, tokens, queues, lock-delay,
// sessions, the batch codec and snapshots. Random cases come from fixed seeds so
// a failure reproduces.
#include "lockgroup/lock_table.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <msgpack.hpp>

#include "tests/support/printers.h"

namespace Catch {
template <>
struct StringMaker<palisade::lockgroup::Outcome> {
  static std::string convert(palisade::lockgroup::Outcome o) { return std::string(palisade::lockgroup::outcome_name(o)); }
};
template <>
struct StringMaker<palisade::lockgroup::Grant> {
  static std::string convert(const palisade::lockgroup::Grant& g) {
    return "{session " + std::to_string(g.session) + ", '" + g.lock + "', " + std::string(palisade::mode_name(g.mode)) +
           ", token " + std::to_string(g.token) + "}";
  }
};
}  // namespace Catch

namespace palisade::lockgroup {
namespace {

constexpr uint64_t kSeed = 0x10c4'7ab1'e000'0001;
constexpr LockMode kEx = LockMode::kExclusive;
constexpr LockMode kSh = LockMode::kShared;
constexpr bool kWait = true;

Acquire acquire(SessionId s, std::string lock, LockMode mode, bool wait = false, uint64_t lock_delay_ms = 0) {
  return Acquire{s, std::move(lock), mode, lock_delay_ms, wait, /*wait_ms=*/1000};
}

// Applies commands one batch at a time and keeps the last batch's effects.
struct Table {
  LockTable table;
  Effects effects;
  uint64_t next_tag = 1;

  CommandResult run(Command command) {
    effects = table.apply({{next_tag++, std::move(command)}});
    REQUIRE(effects.results.size() == 1);
    return effects.results[0];
  }
  Outcome outcome(Command command) { return run(std::move(command)).outcome; }
  SessionId open() { return run(OpenSession{}).session; }
  Grant grant(Command command) {
    CommandResult r = run(std::move(command));
    REQUIRE(r.outcome == Outcome::kOk);
    REQUIRE(r.grant.has_value());
    return *r.grant;
  }
  const LockState& lock(const std::string& name) const {
    const LockState* l = table.lock(name);
    REQUIRE(l != nullptr);
    return *l;
  }
};

// ---- Sessions, grants and tokens.

TEST_CASE("lock table: session ids start at 1 and are never reused", "[lock_table]") {
  Table t;
  CHECK(t.open() == 1);
  CHECK(t.open() == 2);
  CHECK(t.outcome(CloseSession{2}) == Outcome::kOk);
  CHECK(t.outcome(ExpireSession{1}) == Outcome::kOk);
  CHECK(t.open() == 3);
  CHECK(t.table.sessions() == Sessions{{3, 0}});
  CHECK(t.outcome(CloseSession{2}) == Outcome::kNoSession);
  CHECK(t.outcome(ExpireSession{1}) == Outcome::kNoSession);
}

TEST_CASE("lock table: a session keeps the lease length it opened with", "[lock_table]") {
  Table t;
  SessionId a = t.run(OpenSession{}).session;
  SessionId b = t.run(OpenSession{30000}).session;
  CHECK(t.table.sessions() == Sessions{{a, 0}, {b, 30000}});
  CHECK(t.table.session_lease_ms(a) == 0);  // the cluster's default
  CHECK(t.table.session_lease_ms(b) == 30000);
  CHECK(t.table.session_lease_ms(99) == 0);
  // Through a snapshot, and through the log (a node that replays it, as a new
  // master does, knows each session's length).
  LockTable restored;
  REQUIRE(restored.restore(t.table.snapshot()).is_ok());
  CHECK(restored == t.table);
  CHECK(restored.session_lease_ms(b) == 30000);
  auto replayed = decode_batch(encode_batch({{1, OpenSession{}}, {2, OpenSession{30000}}}));
  REQUIRE(replayed.is_ok());
  LockTable follower;
  follower.apply(replayed.value());
  CHECK(follower == t.table);
  // The length goes with the session.
  CHECK(t.outcome(CloseSession{b}) == Outcome::kOk);
  CHECK(t.table.session_lease_ms(b) == 0);
}

TEST_CASE("lock table: logs and snapshots from before per-session leases read as the default", "[lock_table]") {
  // An OpenSession was [tag, 0]; it still is for the default, and [tag, 0, lease_ms] otherwise.
  CHECK(encode_batch({{7, OpenSession{}}}) == std::string("\x91\x92\x07\x00", 4));
  CHECK(encode_batch({{7, OpenSession{3000}}}) == std::string("\x91\x93\x07\x00\xcd\x0b\xb8", 7));
  auto old = decode_batch(std::string("\x91\x92\x07\x00", 4));
  REQUIRE(old.is_ok());
  CHECK(old.value() == std::vector<TaggedCommand>{{7, OpenSession{0}}});
  // A snapshot whose sessions all have the default is written as before: no
  // list of leases at the end.
  LockTable t;
  t.apply({{1, OpenSession{}}, {2, OpenSession{}}});
  const std::string plain = t.snapshot();
  t.apply({{3, OpenSession{5000}}});
  const std::string with_leases = t.snapshot();
  CHECK(static_cast<uint8_t>(plain[0]) == 0x97);  // an array of 7
  CHECK(static_cast<uint8_t>(with_leases[0]) == 0x98);
  LockTable restored;
  REQUIRE(restored.restore(with_leases).is_ok());
  CHECK(restored == t);
  REQUIRE(restored.restore(plain).is_ok());
  CHECK(restored.sessions() == Sessions{{1, 0}, {2, 0}});
}

TEST_CASE("lock table: a late duplicate of an older call changes nothing", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open();
  Acquire first = acquire(a, "x", kEx);
  first.call = 1;
  CHECK(t.grant(first).token == 1);
  CHECK(t.grant(first).token == 1);  // a retry of the same call: the same grant
  CHECK(t.outcome(Release{a, "x", 2}) == Outcome::kOk);
  // The first acquire, delayed in the network, arrives after the release.
  CHECK(t.outcome(first) == Outcome::kStaleCall);
  CHECK(t.table.lock("x") == nullptr);
  Acquire again = acquire(a, "x", kEx);
  again.call = 3;
  CHECK(t.grant(again).token == 2);
  // The old release arrives late: it must not free the later grant.
  CHECK(t.outcome(Release{a, "x", 2}) == Outcome::kStaleCall);
  CHECK(t.table.is_current("x", kEx, 2));
  // Calls are ordered per session and lock: another session or lock is not affected.
  Acquire other = acquire(b, "y", kEx);
  other.call = 1;
  CHECK(t.grant(other).token == 3);
  // They survive a snapshot, and go when the session does.
  LockTable copy;
  REQUIRE(copy.restore(t.table.snapshot()).is_ok());
  CHECK(copy == t.table);
  CHECK(t.outcome(CloseSession{a}) == Outcome::kOk);
  SessionId c = t.open();
  Acquire fresh = acquire(c, "x", kEx);
  fresh.call = 1;
  CHECK(t.grant(fresh).token == 4);
  // Call 0 is unordered.
  CHECK(t.outcome(Release{c, "x", 0}) == Outcome::kOk);
  CHECK(t.grant(acquire(c, "x", kEx)).token == 5);
}

TEST_CASE("lock table: a repeated call reports what the first one left, and grants nothing afresh",
          "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open();
  Acquire holder = acquire(a, "x", kEx);
  holder.call = 1;
  t.grant(holder);

  SECTION("after its wait ran out (answered timeout)") {
    Acquire waiting = acquire(b, "x", kEx, kWait);
    waiting.call = 7;
    CHECK(t.outcome(waiting) == Outcome::kQueued);
    CHECK(t.outcome(waiting) == Outcome::kQueued);  // a retry while queued stays queued, once
    CHECK(t.lock("x").waiters.size() == 1);
    t.run(CancelWait{b, "x"});  // the master's wait timer ran out
    CHECK(t.outcome(Release{a, "x", 2}) == Outcome::kOk);
    CHECK(t.effects.woken.empty());
    // A duplicate (or a copy sent to an earlier master) must not take the free lock:
    // the client finished the call and would never release it.
    CHECK(t.outcome(waiting) == Outcome::kWaitEnded);  // answered timeout again, not stale
  }
  SECTION("after it was answered busy") {
    Acquire once = acquire(b, "x", kEx);
    once.call = 7;
    CHECK(t.outcome(once) == Outcome::kBusy);
    CHECK(t.outcome(Release{a, "x", 2}) == Outcome::kOk);
    CHECK(t.outcome(once) == Outcome::kBusy);  // the first answer again
  }
  CHECK(t.table.lock("x") == nullptr);
  CHECK(t.table.held_by(b).empty());
  CHECK(t.table.waited_by(b).empty());
  CHECK(t.table.grant_counter() == 1);
  // A new call of b is applied as usual.
  Acquire next = acquire(b, "x", kEx);
  next.call = 8;
  CHECK(t.grant(next).token == 2);
  // A repeat reports a hold the session got from a wait, as the grant.
  Acquire shared = acquire(a, "y", kSh, kWait);
  shared.call = 3;
  CHECK(t.grant(Acquire{b, "y", kEx, 0, false, 0, 9}).token == 3);
  CHECK(t.outcome(shared) == Outcome::kQueued);
  t.run(Release{b, "y", 10});
  CHECK(t.effects.woken == std::vector<Grant>{{a, "y", kSh, 4}});
  CHECK(t.grant(shared) == Grant{a, "y", kSh, 4});
  // A repeated release frees nothing: the first one left the lock free, and an
  // unordered acquire (call 0) took it since.
  CHECK(t.outcome(Release{b, "x", 11}) == Outcome::kOk);
  t.grant(acquire(b, "x", kEx));
  CHECK(t.outcome(Release{b, "x", 11}) == Outcome::kStaleCall);
  CHECK(t.table.held_by(b) == std::vector<std::string>{"x"});
}

TEST_CASE("lock table: tokens come from one counter over all locks", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open();
  CHECK(t.grant(acquire(a, "x", kEx)) == Grant{a, "x", kEx, 1});
  CHECK(t.grant(acquire(b, "y", kSh)) == Grant{b, "y", kSh, 2});
  CHECK(t.table.is_current("x", kEx, 1));
  CHECK_FALSE(t.table.is_current("x", kSh, 1));
  CHECK_FALSE(t.table.is_current("x", kEx, 2));
  CHECK(t.outcome(Release{a, "x"}) == Outcome::kOk);
  CHECK(t.table.lock("x") == nullptr);  // forgotten, yet its next token is still new
  CHECK_FALSE(t.table.is_current("x", kEx, 1));
  CHECK(t.grant(acquire(b, "x", kEx)) == Grant{b, "x", kEx, 3});
  CHECK(t.table.grant_counter() == 3);
  CHECK(t.table.held_by(b) == std::vector<std::string>{"x", "y"});
  CHECK(t.table.held_by(a).empty());
}

TEST_CASE("lock table: acquire is idempotent", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open(), c = t.open();
  Grant g = t.grant(acquire(a, "x", kEx));
  CHECK_FALSE(t.run(acquire(c, "z", kEx)).again);
  const CommandResult retry = t.run(acquire(a, "x", kEx, kWait));  // a retry after failover
  CHECK(retry.grant == g);
  CHECK(retry.again);
  CHECK(t.table.grant_counter() == 2);
  CHECK(t.outcome(acquire(a, "x", kSh)) == Outcome::kConflict);
  CHECK(t.outcome(acquire(b, "x", kEx, kWait)) == Outcome::kQueued);
  CHECK(t.outcome(acquire(b, "x", kEx, kWait)) == Outcome::kQueued);
  CHECK(t.outcome(acquire(b, "x", kEx)) == Outcome::kQueued);  // still queued, whatever the retry says
  CHECK(t.lock("x").waiters.size() == 1);

  Grant s = t.grant(acquire(a, "y", kSh));
  CHECK(t.grant(acquire(c, "y", kSh)) == Grant{c, "y", kSh, s.token});
  CHECK(t.grant(acquire(c, "y", kSh)) == Grant{c, "y", kSh, s.token});
  CHECK(t.outcome(acquire(c, "y", kEx)) == Outcome::kConflict);
  CHECK(t.lock("y").holders.size() == 2);
  CHECK(t.table.grant_counter() == 3);
}

TEST_CASE("lock table: outcomes of refused commands", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open();
  SessionId gone = 99;
  t.grant(acquire(a, "x", kEx, false, 5000));
  CHECK(t.outcome(acquire(b, "x", kEx)) == Outcome::kBusy);
  CHECK(t.outcome(acquire(b, "x", kSh)) == Outcome::kBusy);
  CHECK(t.outcome(Release{b, "x"}) == Outcome::kNotHeld);
  CHECK(t.outcome(Release{b, "nowhere"}) == Outcome::kNotHeld);
  CHECK(t.table.lock("nowhere") == nullptr);
  for (Command c : std::vector<Command>{CloseSession{gone}, ExpireSession{gone}, acquire(gone, "x", kEx, kWait),
                                        Release{gone, "x"}, CancelWait{gone, "x"}}) {
    CHECK(t.outcome(c) == Outcome::kNoSession);
  }
  CHECK(t.outcome(acquire(0, "z", kEx)) == Outcome::kNoSession);
  CHECK(t.table.lock("z") == nullptr);
  t.run(ExpireSession{a});
  CHECK(t.outcome(acquire(b, "x", kEx)) == Outcome::kDelayed);
  CHECK(t.outcome(acquire(b, "x", kSh)) == Outcome::kDelayed);
  CHECK(t.lock("x").waiters.empty());
}

// ---- Queues.

TEST_CASE("lock table: queued acquires are granted in FIFO order", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open(), c = t.open(), d = t.open();
  t.grant(acquire(a, "x", kEx));
  for (SessionId s : {c, b, d}) CHECK(t.outcome(acquire(s, "x", kEx, kWait)) == Outcome::kQueued);
  CHECK(t.table.waited_by(b) == std::vector<std::string>{"x"});
  Token token = 1;
  SessionId holder = a;
  for (SessionId next : {c, b, d}) {
    CHECK(t.outcome(Release{holder, "x"}) == Outcome::kOk);
    CHECK(t.effects.woken == std::vector<Grant>{{next, "x", kEx, ++token}});
    holder = next;
  }
  CHECK(t.table.waited_by(d).empty());
  t.run(Release{holder, "x"});
  CHECK(t.effects.woken.empty());
  CHECK(t.table.lock("x") == nullptr);
}

TEST_CASE("lock table: shared holders join, and a queued exclusive is not overtaken", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open(), c = t.open(), d = t.open();
  Grant ga = t.grant(acquire(a, "x", kSh));
  CHECK(t.grant(acquire(b, "x", kSh)).token == ga.token);
  CHECK(t.outcome(acquire(c, "x", kEx)) == Outcome::kBusy);
  CHECK(t.outcome(acquire(c, "x", kEx, kWait)) == Outcome::kQueued);
  CHECK(t.outcome(acquire(d, "x", kSh)) == Outcome::kBusy);  // would overtake c
  CHECK(t.outcome(acquire(d, "x", kSh, kWait)) == Outcome::kQueued);
  t.run(Release{a, "x"});
  CHECK(t.effects.woken.empty());
  t.run(Release{b, "x"});
  CHECK(t.effects.woken == std::vector<Grant>{{c, "x", kEx, ga.token + 1}});
  t.run(Release{c, "x"});
  CHECK(t.effects.woken == std::vector<Grant>{{d, "x", kSh, ga.token + 2}});
}

TEST_CASE("lock table: consecutive shared waiters are woken together with one token", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open(), c = t.open(), d = t.open(), e = t.open();
  t.grant(acquire(a, "x", kEx));
  t.run(acquire(b, "x", kSh, kWait));
  t.run(acquire(c, "x", kSh, kWait));
  t.run(acquire(d, "x", kEx, kWait));
  t.run(acquire(e, "x", kSh, kWait));
  t.run(Release{a, "x"});
  CHECK(t.effects.woken == std::vector<Grant>{{b, "x", kSh, 2}, {c, "x", kSh, 2}});
  CHECK(t.lock("x").waiters.size() == 2);
  CHECK(t.lock("x").waiters.front().session == d);
  t.run(Release{b, "x"});
  t.run(Release{c, "x"});
  CHECK(t.effects.woken == std::vector<Grant>{{d, "x", kEx, 3}});
}

TEST_CASE("lock table: close and expire drop the session's waits", "[lock_table]") {
  bool expire = GENERATE(false, true);
  Table t;
  SessionId a = t.open(), b = t.open(), c = t.open();
  t.grant(acquire(a, "x", kSh));
  t.run(acquire(b, "x", kEx, kWait));
  t.run(acquire(c, "x", kSh, kWait));
  t.run(acquire(b, "y", kEx));
  // b stood in front of c: dropping it lets c join a's shared lock.
  t.run(expire ? Command{ExpireSession{b}} : Command{CloseSession{b}});
  CHECK(t.effects.woken == std::vector<Grant>{{c, "x", kSh, 1}});
  CHECK(t.table.waited_by(b).empty());
  CHECK(t.table.held_by(b).empty());
  CHECK(t.table.lock("y") == nullptr);
  CHECK(t.lock("x").waiters.empty());
}

// ---- Epochs: commands made by a master's clock are its epoch's alone.

TEST_CASE("lock table: a command an older master timed is void once a newer master's epoch was applied",
          "[lock_table][epoch]") {
  Table t;
  const SessionId holder = t.open();
  const SessionId waiter = t.open();
  const Token token = t.grant(acquire(holder, "L", kEx, false, 5000)).token;
  REQUIRE(t.outcome(acquire(waiter, "L", kEx, kWait)) == Outcome::kQueued);
  CHECK(t.table.epoch() == 0);
  CHECK(t.outcome(MasterEpoch{0x301}) == Outcome::kOk);
  CHECK(t.table.epoch() == 0x301);

  // Timed by the master of epoch 0x202, chosen after 0x301 took over (and
  // timed these afresh): nothing changes.
  const LockTable before = t.table;
  CHECK(t.outcome(ExpireSession{holder, 0x202}) == Outcome::kStaleEpoch);
  CHECK(t.outcome(CancelWait{waiter, "L", 0x202}) == Outcome::kStaleEpoch);
  CHECK(t.outcome(ExpireSession{waiter, 0x202}) == Outcome::kStaleEpoch);
  CHECK(t.table == before);
  CHECK(t.run(ExpireSession{holder, 0x202}).released.empty());

  // An older master's first slot, chosen late, does not take the epoch back.
  CHECK(t.outcome(MasterEpoch{0x202}) == Outcome::kOk);
  CHECK(t.table.epoch() == 0x301);
  CHECK(t.outcome(ExpireSession{holder, 0x202}) == Outcome::kStaleEpoch);

  // The epoch's own commands apply, and newer ones.
  CHECK(t.outcome(CancelWait{waiter, "L", 0x301}) == Outcome::kOk);
  CHECK(t.lock("L").waiters.empty());
  CHECK(t.outcome(ExpireSession{holder, 0x401}) == Outcome::kOk);
  CHECK(t.lock("L").delay_ms == 5000);
  CHECK(t.outcome(EndDelay{"L", token, 0x202}) == Outcome::kStaleEpoch);
  CHECK(t.lock("L").delay_ms == 5000);
  // Epoch 0: made by a node from before epochs, applied as then.
  CHECK(t.outcome(EndDelay{"L", token}) == Outcome::kOk);
  CHECK(t.table.lock("L") == nullptr);
  CHECK(t.outcome(ExpireSession{waiter}) == Outcome::kOk);
  CHECK_FALSE(t.table.has_session(waiter));
}

TEST_CASE("lock table: CancelWait", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open(), c = t.open();
  t.grant(acquire(a, "x", kSh));
  t.run(acquire(b, "x", kEx, kWait));
  t.run(acquire(c, "x", kSh, kWait));
  CHECK(t.outcome(CancelWait{c, "nowhere"}) == Outcome::kOk);
  CHECK(t.outcome(CancelWait{a, "x"}) == Outcome::kOk);  // a holds, does not wait
  CHECK(t.lock("x").waiters.size() == 2);
  CHECK(t.outcome(CancelWait{b, "x"}) == Outcome::kOk);
  CHECK(t.effects.woken == std::vector<Grant>{{c, "x", kSh, 1}});
  CHECK(t.table.waited_by(b).empty());
  CHECK(t.outcome(CancelWait{b, "x"}) == Outcome::kOk);  // a duplicate
  t.run(CloseSession{b});
  CHECK(t.outcome(CancelWait{b, "x"}) == Outcome::kNoSession);
}

// ---- Lock-delay.

TEST_CASE("lock table: an expiry starts the lock-delay of the lock it frees", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open(), c = t.open();
  Grant g = t.grant(acquire(a, "x", kEx, false, 5000));
  t.run(ExpireSession{a});
  CHECK(t.effects.delays == std::vector<DelayStarted>{{"x", g.token, 5000}});
  CHECK(t.lock("x").delay_ms == 5000);
  CHECK(t.lock("x").holders.empty());
  CHECK_FALSE(t.table.is_current("x", kEx, g.token));
  CHECK(t.outcome(acquire(b, "x", kSh)) == Outcome::kDelayed);
  CHECK(t.outcome(acquire(b, "x", kEx, kWait)) == Outcome::kQueued);
  CHECK(t.outcome(acquire(c, "x", kEx, kWait)) == Outcome::kQueued);

  CHECK(t.outcome(EndDelay{"x", g.token + 1}) == Outcome::kOk);  // not this delay's token: ignored
  CHECK(t.outcome(EndDelay{"y", g.token}) == Outcome::kOk);
  CHECK(t.effects.woken.empty());
  CHECK(t.lock("x").delay_ms == 5000);

  CHECK(t.outcome(EndDelay{"x", g.token}) == Outcome::kOk);
  CHECK(t.effects.woken == std::vector<Grant>{{b, "x", kEx, g.token + 1}});
  CHECK(t.lock("x").delay_ms == 0);
  t.run(Release{b, "x"});
  CHECK(t.effects.woken == std::vector<Grant>{{c, "x", kEx, g.token + 2}});
  t.run(EndDelay{"x", g.token});  // a duplicate changes nothing
  CHECK(t.effects.woken.empty());
  CHECK(t.table.is_current("x", kEx, g.token + 2));
}

TEST_CASE("lock table: close, release and zero delays start no lock-delay", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open();
  t.grant(acquire(a, "x", kEx, false, 5000));
  t.grant(acquire(a, "y", kEx, false, 5000));
  t.grant(acquire(b, "z", kEx, false, 0));
  t.run(Release{a, "x"});
  t.run(CloseSession{a});
  CHECK(t.effects.delays.empty());
  t.run(ExpireSession{b});
  CHECK(t.effects.delays.empty());
  CHECK(t.table.locks().empty());
}

TEST_CASE("lock table: an expiring shared holder delays the lock only when it frees it", "[lock_table]") {
  Table t;
  SessionId a = t.open(), b = t.open(), c = t.open();
  Grant g = t.grant(acquire(a, "x", kSh, false, 7000));
  t.grant(acquire(b, "x", kSh, false, 3000));
  t.run(ExpireSession{a});
  CHECK(t.effects.delays.empty());
  CHECK(t.grant(acquire(c, "x", kSh)).token == g.token);
  t.run(Release{c, "x"});
  t.run(ExpireSession{b});
  CHECK(t.effects.delays == std::vector<DelayStarted>{{"x", g.token, 3000}});  // b's own delay
}

TEST_CASE("lock table: one result per command, in order, with its tag", "[lock_table]") {
  LockTable table;
  Effects e = table.apply({{10, OpenSession{}},
                           {11, OpenSession{}},
                           {12, acquire(1, "x", kEx, false, 100)},
                           {13, acquire(2, "x", kEx, kWait)},
                           {14, ExpireSession{1}},
                           {15, EndDelay{"x", 1}},
                           {16, Release{1, "x"}}});
  std::vector<CommandResult> want = {{10, Outcome::kOk, 1},
                                     {11, Outcome::kOk, 2},
                                     {12, Outcome::kOk, 0, Grant{1, "x", kEx, 1}},
                                     {13, Outcome::kQueued},
                                     {14, Outcome::kOk, 0, std::nullopt, {"x"}},  // the locks it released
                                     {15, Outcome::kOk},
                                     {16, Outcome::kNoSession}};
  CHECK(e.results == want);
  CHECK(e.delays == std::vector<DelayStarted>{{"x", 1, 100}});
  CHECK(e.woken == std::vector<Grant>{{2, "x", kEx, 2}});
  CHECK(table.apply({}).results.empty());
}

TEST_CASE("lock table: a close or expiry names the locks the session held, not those it waited for",
          "[lock_table]") {
  const bool expire = GENERATE(false, true);
  Table t;
  const SessionId a = t.open();
  const SessionId b = t.open();
  t.grant(acquire(a, "shared", kSh));
  t.grant(acquire(b, "shared", kSh));  // still held by b afterwards
  t.grant(acquire(a, "mine", kEx));
  t.grant(acquire(b, "theirs", kEx));
  REQUIRE(t.outcome(acquire(a, "theirs", kEx, kWait)) == Outcome::kQueued);
  const CommandResult r = t.run(expire ? Command{ExpireSession{a}} : Command{CloseSession{a}});
  CHECK(r.outcome == Outcome::kOk);
  CHECK(r.released == std::vector<std::string>{"mine", "shared"});
  CHECK(t.run(CloseSession{a}).released.empty());  // gone already
}

// ---- A random run against a model of the holders.

const std::vector<std::string> kLocks = {"a", "b", "c"};

struct Model {
  std::map<std::string, std::map<SessionId, LockMode>> holders;
  std::map<std::string, Token> token;
  Token max_token = 0;
  std::map<std::string, int> seen;  // how often each kind of event happened

  void grant(const Grant& g) {
    INFO("grant " << Catch::StringMaker<Grant>::convert(g));
    auto& h = holders[g.lock];
    if (h.empty()) {
      REQUIRE(g.token == max_token + 1);  // from free: the next value of the counter
      max_token = token[g.lock] = g.token;
      ++seen["grant from free"];
    } else {
      REQUIRE(g.token == token[g.lock]);
      if (h.count(g.session) != 0) {
        REQUIRE(h[g.session] == g.mode);
        ++seen["repeated grant"];
      } else {
        REQUIRE(g.mode == kSh);
        for (const auto& [s, mode] : h) REQUIRE(mode == kSh);
        ++seen["join"];
      }
    }
    h[g.session] = g.mode;
  }
  void drop(SessionId session) {
    for (auto& [name, h] : holders) h.erase(session);
  }
};

void check_table(const LockTable& table, const Model& m) {
  REQUIRE(table.grant_counter() == m.max_token);
  for (const auto& [name, h] : m.holders) {
    const LockState* l = table.lock(name);
    REQUIRE((l != nullptr && !l->holders.empty()) == !h.empty());
    if (h.empty()) continue;
    REQUIRE(l->holders.size() == h.size());
    for (const auto& [s, mode] : h) {
      REQUIRE(l->holders.count(s) == 1);
      REQUIRE(l->mode == mode);
    }
    REQUIRE(table.is_current(name, l->mode, m.token.at(name)));
  }
  for (const auto& [name, l] : table.locks()) {
    INFO("lock " << name);
    REQUIRE((!l.holders.empty() || l.delay_ms > 0));  // else forgotten (waiters are granted)
    REQUIRE((l.holders.empty() || l.delay_ms == 0));
    REQUIRE((l.mode == kSh || l.holders.size() <= 1));
    for (const auto& [s, delay] : l.holders) REQUIRE(table.has_session(s));
    for (const Waiter& w : l.waiters) REQUIRE((table.has_session(w.session) && l.holders.count(w.session) == 0));
  }
}

// Mostly live sessions; sometimes any id ever given out, 0, or the next one (unknown).
Command random_command(std::mt19937_64& rng, SessionId next_session, const std::vector<SessionId>& live,
                       std::vector<DelayStarted>& delays) {
  auto session = [&] {
    if (live.empty() || rng() % 8 == 0) return static_cast<SessionId>(rng() % (next_session + 1));
    return live[rng() % live.size()];
  };
  const std::string& lock = kLocks[rng() % kLocks.size()];
  switch (live.size() < 2 ? 0 : rng() % 10) {
    case 0:
      if (live.size() > 8) return CloseSession{session()};
      return OpenSession{rng() % 2 ? 0 : 1000 + rng() % 60000};
    case 1:
      return rng() % 2 ? Command{CloseSession{session()}} : Command{ExpireSession{session()}};
    case 2:
    case 3:
    case 4: {
      LockMode mode = rng() % 2 ? kSh : kEx;
      return Acquire{session(), lock, mode, rng() % 3 ? 1000u : 0u, rng() % 3 != 0, rng() % 100};
    }
    case 5:
    case 6:
      return Release{session(), lock};
    case 7:
      return CancelWait{session(), lock};
    default:
      if (delays.empty() || rng() % 4 == 0) return EndDelay{lock, rng() % 20};
      size_t i = rng() % delays.size();
      EndDelay e{delays[i].lock, delays[i].token};
      delays.erase(delays.begin() + static_cast<std::ptrdiff_t>(i));
      return e;
  }
}

TEST_CASE("lock table: a random run keeps every invariant, and batching changes nothing", "[lock_table]") {
  std::mt19937_64 rng(kSeed);
  LockTable one_by_one, batched;
  Model m;
  SessionId next_session = 1;
  std::vector<SessionId> live;
  std::vector<DelayStarted> delays;
  uint64_t tag = 0;
  for (int round = 0; round < 1500; ++round) {
    std::vector<TaggedCommand> batch;
    Effects merged;
    for (size_t n = 1 + rng() % 6; n > 0; --n) {
      TaggedCommand tc{++tag, random_command(rng, next_session, live, delays)};
      INFO("round " << round << " tag " << tc.tag << " command " << tc.command.index());
      Effects e = one_by_one.apply({tc});
      REQUIRE(e.results.size() == 1);
      const CommandResult& r = e.results[0];
      REQUIRE(r.tag == tc.tag);
      ++m.seen[std::string(outcome_name(r.outcome)) + " " + std::to_string(tc.command.index())];
      if (r.outcome == Outcome::kOk) {
        SessionId dropped = 0;
        if (std::holds_alternative<OpenSession>(tc.command)) {
          REQUIRE(r.session == next_session++);
          live.push_back(r.session);
        }
        if (const auto* rel = std::get_if<Release>(&tc.command)) m.holders[rel->lock].erase(rel->session);
        if (const auto* c = std::get_if<CloseSession>(&tc.command)) dropped = c->session;
        if (const auto* x = std::get_if<ExpireSession>(&tc.command)) dropped = x->session;
        if (dropped != 0) {
          m.drop(dropped);
          std::erase(live, dropped);
        }
        if (r.grant) m.grant(*r.grant);
      }
      REQUIRE(r.grant.has_value() == (r.outcome == Outcome::kOk && std::holds_alternative<Acquire>(tc.command)));
      for (const Grant& g : e.woken) {
        m.grant(g);
        ++m.seen["woken"];
      }
      for (const DelayStarted& d : e.delays) {
        REQUIRE(m.holders[d.lock].empty());
        REQUIRE(d.token == m.token[d.lock]);
        delays.push_back(d);
        ++m.seen["delay"];
      }
      check_table(one_by_one, m);
      batch.push_back(std::move(tc));
      merged.results.insert(merged.results.end(), e.results.begin(), e.results.end());
      merged.woken.insert(merged.woken.end(), e.woken.begin(), e.woken.end());
      merged.delays.insert(merged.delays.end(), e.delays.begin(), e.delays.end());
    }
    Effects e = batched.apply(batch);
    REQUIRE(e.results == merged.results);
    REQUIRE(e.woken == merged.woken);
    REQUIRE(e.delays == merged.delays);
    REQUIRE(batched == one_by_one);
  }
  for (const char* event : {"grant from free", "repeated grant", "join", "woken", "delay"}) {
    INFO(event);
    CHECK(m.seen[event] > 10);
  }
  for (Outcome o : {Outcome::kQueued, Outcome::kBusy, Outcome::kDelayed, Outcome::kConflict}) {
    CHECK(m.seen[std::string(outcome_name(o)) + " 3"] > 0);  // 3: Acquire
  }
  CHECK(m.seen["not_held 4"] > 0);

  LockTable restored;
  REQUIRE(restored.restore(one_by_one.snapshot()).is_ok());
  CHECK(restored == one_by_one);
  CHECK(restored.snapshot() == one_by_one.snapshot());
}

// ---- The batch codec.

std::vector<TaggedCommand> every_command() {
  return {{0, OpenSession{}},
          {UINT64_MAX, CloseSession{UINT64_MAX}},
          {2, ExpireSession{0}},
          {3, Acquire{7, "locks/x", kEx, 0, false, 0}},
          {4, Acquire{UINT64_MAX, std::string("\0\xff bin", 6), kSh, 60000, true, UINT64_MAX}},
          {5, Acquire{1, "", kSh, 1, true, 2}},
          {6, Release{3, "locks/x"}},
          {7, EndDelay{"locks/x", UINT64_MAX}},
          {8, CancelWait{4, "y"}},
          {9, OpenSession{1}},
          {10, OpenSession{UINT64_MAX}},
          {11, OpenSession{0, "worker-7"}},
          {12, OpenSession{30000, "ops"}},
          {13, SetMembers{{{1, "tcp://a:7000"}, {4, "tcp://d:7000"}, {255, "x"}}}},
          {15, ExpireSession{3, 0x201}},
          {16, EndDelay{"locks/x", 2, UINT64_MAX}},
          {17, CancelWait{4, "y", 1}},
          {18, MasterEpoch{0x1203}},
          {14, SetReplicas{{.version = UINT64_MAX,
                            .phase = wire::ReplicaPhase::kPaused,
                            .replicas = {{1, "tcp://r1", std::string(40, 'k'), UINT64_MAX}, {9, "tcp://r9"}},
                            .write_quorum = 2,
                            .read_quorum = 1}}}};
}

using Packer = msgpack::packer<msgpack::sbuffer>;

// Bytes of one MessagePack value written by `write`.
std::string packed(const std::function<void(Packer&)>& write) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  write(pk);
  return {buf.data(), buf.size()};
}

TEST_CASE("lock table: every command round-trips through the batch codec", "[lock_table][codec]") {
  std::vector<TaggedCommand> batch = every_command();
  for (const TaggedCommand& tc : batch) {
    auto decoded = decode_batch(encode_batch({tc}));
    INFO(decoded.status().to_string());
    REQUIRE(decoded.is_ok());
    CHECK(decoded.value() == std::vector<TaggedCommand>{tc});
  }
  auto decoded = decode_batch(encode_batch(batch));
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value() == batch);
  REQUIRE(decode_batch(encode_batch({})).is_ok());
  CHECK(decode_batch(encode_batch({})).value().empty());
  // The format is pinned (batches live in Paxos logs): [[tag, kind, fields...]...].
  CHECK(encode_batch({{7, CloseSession{5}}}) == std::string("\x91\x93\x07\x01\x05"));
  // Epoch 0 is not written: such commands are as before epochs.
  CHECK(encode_batch({{7, ExpireSession{5}}}) == std::string("\x91\x93\x07\x02\x05"));
  CHECK(encode_batch({{7, ExpireSession{5, 9}}}) == std::string("\x91\x94\x07\x02\x05\x09"));
  CHECK(encode_batch({{7, MasterEpoch{9}}}) == std::string("\x91\x93\x07\x09\x09"));
}

TEST_CASE("lock table: decode_batch refuses what is not a batch", "[lock_table][codec]") {
  auto command = [](std::function<void(Packer&)> fields, uint32_t n) {
    return packed([&](Packer& pk) {
      pk.pack_array(1);
      pk.pack_array(n);
      fields(pk);
    });
  };
  std::string good = encode_batch(every_command());
  std::vector<std::pair<std::string, Code>> cases = {
      {"", Code::kMalformed},
      {good + '\x90', Code::kMalformed},  // trailing bytes
      {"\xc1", Code::kMalformed},  // never used in MessagePack
      {packed([](Packer& pk) { pk.pack_uint64(3); }), Code::kMalformed},  // not an array
      {packed([](Packer& pk) { pk.pack_map(0); }), Code::kMalformed},
      {"\xdd\xff\xff\xff\xff", Code::kMalformed},  // an array of 2^32-1 elements in 5 bytes
      {"\x91\xdd\xff\xff\xff\xff", Code::kMalformed},
      {packed([](Packer& pk) {
         pk.pack_array(1);
         pk.pack_uint64(1);
       }),
       Code::kBadRequest},  // a command that is not an array
      {command([](Packer& pk) { pk.pack_uint64(1); }, 1), Code::kBadRequest},  // no kind
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(8); }, 2), Code::kBadRequest},  // unknown kind
      {command([](Packer& pk) { pk.pack_int64(-1).pack_uint64(0); }, 2), Code::kBadRequest},  // negative tag
      // OpenSession: [tag, 0] or [tag, 0, lease_ms], nothing more, and the lease an integer.
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(0).pack_uint64(0).pack_uint64(0); }, 4),
       Code::kBadRequest},
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(0).pack(true); }, 3), Code::kBadRequest},
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(1); }, 2), Code::kBadRequest},  // no session
      // An epoch written as 0, a command with more than its epoch, a master epoch 0 or none.
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(2).pack_uint64(5).pack_uint64(0); }, 4),
       Code::kBadRequest},
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(2).pack_uint64(5).pack_uint64(7).pack_uint64(1); }, 5),
       Code::kBadRequest},
      {command(
           [](Packer& pk) { pk.pack_uint64(1).pack_uint64(6).pack_uint64(5).pack(std::string("x")).pack_uint64(0); },
           5),
       Code::kBadRequest},
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(9).pack_uint64(0); }, 3), Code::kBadRequest},
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(9); }, 2), Code::kBadRequest},
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(1).pack(std::string("5")); }, 3), Code::kBadRequest},
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(4).pack_uint64(1).pack_uint64(9); }, 4),
       Code::kBadRequest},  // a lock name that is an integer
      {command([](Packer& pk) { pk.pack_uint64(1).pack_uint64(5).pack(std::string("x")).pack(true); }, 4),
       Code::kBadRequest},  // a token that is a boolean
  };
  // Acquire: [tag, 3, session, lock, mode, lock_delay_ms, wait, wait_ms] with one field spoilt.
  auto acquire_with = [&](int spoilt) {
    return command(
        [spoilt](Packer& pk) {
          pk.pack_uint64(1).pack_uint64(3).pack_uint64(1).pack(std::string("x"));
          spoilt == 0 ? pk.pack_uint64(2) : pk.pack_uint64(1);  // mode 2 does not exist
          spoilt == 1 ? pk.pack_double(1.5) : pk.pack_uint64(0);
          spoilt == 2 ? pk.pack_uint64(1) : pk.pack(true);  // 0/1 are not booleans
          spoilt == 3 ? pk.pack_nil() : pk.pack_uint64(0);
          pk.pack_uint64(5);  // call
        },
        9);
  };
  REQUIRE(decode_batch(acquire_with(-1)).is_ok());
  for (int spoilt = 0; spoilt < 4; ++spoilt) cases.push_back({acquire_with(spoilt), Code::kBadRequest});

  for (const auto& [bytes, code] : cases) {
    auto decoded = decode_batch(bytes);
    INFO("case of " << bytes.size() << " bytes: " << decoded.status().to_string());
    CHECK(decoded.code() == code);
  }
  for (size_t n = 0; n < good.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    CHECK_FALSE(decode_batch(good.substr(0, n)).is_ok());
  }
}

TEST_CASE("lock table: decode_batch survives random and damaged bytes", "[lock_table][codec]") {
  std::mt19937_64 rng(kSeed + 1);
  std::string good = encode_batch(every_command());
  int refused = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      bytes.resize(rng() % 64);
      for (char& c : bytes) c = static_cast<char>(rng());
    } else {
      bytes = good;
      for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
        bytes[rng() % bytes.size()] = static_cast<char>(rng());
      }
    }
    auto decoded = decode_batch(bytes);
    if (!decoded.is_ok()) {
      ++refused;
      CHECK((decoded.code() == Code::kMalformed || decoded.code() == Code::kBadRequest));
      continue;
    }
    // Whatever decodes is a batch like any other.
    auto again = decode_batch(encode_batch(decoded.value()));
    REQUIRE(again.is_ok());
    CHECK(again.value() == decoded.value());
  }
  CHECK(refused > 10000);
}

// ---- Snapshots.

// A table with a bit of everything: shared and exclusive holders, queues, a delay.
LockTable busy_table() {
  LockTable t;
  t.apply({{1, OpenSession{}},
           {2, OpenSession{45000}},
           {3, OpenSession{1000}},
           {4, OpenSession{}},
           {5, acquire(1, "ex", kEx, false, 2000)},
           {6, acquire(2, "ex", kSh, kWait, 500)},
           {7, acquire(3, "ex", kEx, kWait)},
           {8, acquire(2, "sh", kSh)},
           {9, acquire(3, "sh", kSh, false, 10)},
           {10, acquire(4, "sh", kEx, kWait)},
           {11, acquire(4, "gone", kEx, false, 9000)},
           {12, ExpireSession{4}},
           {13, acquire(3, "gone", kEx, kWait)},
           {14, OpenSession{}}});
  return t;
}

TEST_CASE("lock table: a session keeps the identity that opened it, in snapshots too", "[lock_table][snapshot]") {
  LockTable t;
  auto open = [&](uint64_t lease_ms, std::string identity) {
    return t.apply({{1, OpenSession{lease_ms, std::move(identity)}}}).results.at(0).session;
  };
  const SessionId plain = open(0, "");
  const SessionId worker = open(0, "worker-7");
  const SessionId ops = open(30000, "ops");
  CHECK(t.session_identity(plain).empty());
  CHECK(t.session_identity(worker) == "worker-7");
  CHECK(t.session_identity(ops) == "ops");
  CHECK(t.session_identity(99).empty());
  LockTable restored;
  REQUIRE(restored.restore(t.snapshot()).is_ok());
  CHECK(restored == t);
  CHECK(restored.session_identity(worker) == "worker-7");
  // A session that ends forgets its identity, and a table without any writes
  // the snapshot it always did (no identities element).
  t.apply({{2, CloseSession{worker}}, {3, ExpireSession{ops}}});
  CHECK(t.session_identity(worker).empty());
  LockTable plain_only;
  plain_only.apply({{1, OpenSession{}}, {2, OpenSession{}}, {3, OpenSession{}}});
  plain_only.apply({{2, CloseSession{worker}}, {3, ExpireSession{ops}}});
  CHECK(t.snapshot() == plain_only.snapshot());
}

TEST_CASE("lock table: snapshot and restore give an equal table", "[lock_table][snapshot]") {
  LockTable t = busy_table();
  REQUIRE(t.lock("gone") != nullptr);
  REQUIRE(t.lock("gone")->delay_ms == 9000);
  REQUIRE(t.lock("ex")->waiters.size() == 2);
  REQUIRE(t.lock("sh")->holders.size() == 2);
  for (const LockTable& original : {LockTable{}, t}) {
    LockTable restored = busy_table();
    restored.apply({{1, OpenSession{}}});
    REQUIRE(restored.restore(original.snapshot()).is_ok());
    CHECK(restored == original);
    // And it goes on exactly like the original.
    LockTable copy = original;
    std::vector<TaggedCommand> more = {{1, OpenSession{}},     {2, EndDelay{"gone", 3}}, {3, Release{1, "ex"}},
                                       {4, ExpireSession{2}}, {5, acquire(5, "x", kEx)}};
    CHECK(restored.apply(more).woken == copy.apply(more).woken);
    CHECK(restored == copy);
  }
}

// Writes a snapshot in the format of LockTable::snapshot, so tests can spoil single values.
struct RawSnapshot {
  std::string magic = "palisade.lock_table";
  uint64_t version = 1;
  uint64_t next_session = 4;
  uint64_t counter = 5;
  std::vector<uint64_t> sessions = {1, 2, 3};
  struct Lock {
    std::string name;
    uint64_t mode = 0;
    uint64_t token = 0;
    uint64_t delay_ms = 0;
    std::vector<std::pair<uint64_t, uint64_t>> holders;
    std::vector<std::vector<uint64_t>> waiters;  // session, mode, lock_delay_ms, wait_ms
  };
  std::vector<Lock> locks = {{"a", 0, 5, 0, {{1, 0}}, {{2, 1, 0, 1000}, {3, 0, 0, 1000}}},
                             {"b", 1, 4, 0, {{2, 0}, {3, 0}}, {}}};
  std::vector<std::tuple<uint64_t, std::string, uint64_t>> calls = {{1, "a", 7}, {2, "b", 3}};
  // [session, lease_ms] of the sessions with their own lease; written only when set.
  std::optional<std::vector<std::vector<uint64_t>>> leases;
  std::optional<uint64_t> epoch;  // after the version, when set
  std::string bytes() const {
    return packed([&](Packer& pk) {
      pk.pack_array((leases ? 8 : 7) + (epoch ? 1 : 0));
      pk.pack(magic);
      pk.pack_uint64(version);
      if (epoch) pk.pack_uint64(*epoch);
      pk.pack_uint64(next_session).pack_uint64(counter);
      pk.pack_array(static_cast<uint32_t>(sessions.size()));
      for (uint64_t s : sessions) pk.pack_uint64(s);
      pk.pack_array(static_cast<uint32_t>(locks.size()));
      for (const Lock& l : locks) {
        pk.pack_array(6);
        pk.pack(l.name);
        pk.pack_uint64(l.mode).pack_uint64(l.token).pack_uint64(l.delay_ms);
        pk.pack_array(static_cast<uint32_t>(l.holders.size()));
        for (const auto& [s, d] : l.holders) pk.pack_array(2).pack_uint64(s).pack_uint64(d);
        pk.pack_array(static_cast<uint32_t>(l.waiters.size()));
        for (const auto& w : l.waiters) {
          pk.pack_array(static_cast<uint32_t>(w.size()));
          for (uint64_t v : w) pk.pack_uint64(v);
        }
      }
      pk.pack_array(static_cast<uint32_t>(calls.size()));
      for (const auto& [session, lock, call] : calls)
        pk.pack_array(3).pack_uint64(session).pack(lock).pack_uint64(call);
      if (leases) {
        pk.pack_array(static_cast<uint32_t>(leases->size()));
        for (const auto& l : *leases) {
          pk.pack_array(static_cast<uint32_t>(l.size()));
          for (uint64_t v : l) pk.pack_uint64(v);
        }
      }
    });
  }
};

TEST_CASE("lock table: the epoch is in snapshots (version 2), and version 1 reads as epoch 0",
          "[lock_table][snapshot][epoch]") {
  LockTable t = busy_table();
  const std::string without = t.snapshot();
  t.apply({{1, MasterEpoch{0x1203}}});
  LockTable restored;
  REQUIRE(restored.restore(t.snapshot()).is_ok());
  CHECK(restored.epoch() == 0x1203);
  CHECK(restored == t);
  CHECK(restored.snapshot() == t.snapshot());
  REQUIRE(restored.restore(without).is_ok());
  CHECK(restored.epoch() == 0);
  // A table whose epoch is 0 is written as before epochs: version 1, no epoch.
  RawSnapshot raw;
  REQUIRE(restored.restore(raw.bytes()).is_ok());
  CHECK(restored.epoch() == 0);
  CHECK(restored.snapshot() == raw.bytes());
  raw.version = 2;
  raw.epoch = 7;
  REQUIRE(restored.restore(raw.bytes()).is_ok());
  CHECK(restored.epoch() == 7);
  CHECK(restored.snapshot() == raw.bytes());
  const LockTable kept = restored;
  for (auto [version, epoch] :
       {std::pair<uint64_t, std::optional<uint64_t>>{2, 0}, {2, std::nullopt}, {1, 7}, {3, 7}}) {
    raw.version = version;
    raw.epoch = epoch;
    INFO("version " << version << ", epoch " << (epoch ? std::to_string(*epoch) : "none"));
    CHECK(restored.restore(raw.bytes()).code() == Code::kCorrupt);
    CHECK(restored == kept);
  }
}

TEST_CASE("lock table: restore refuses garbage and leaves the table unchanged", "[lock_table][snapshot]") {
  LockTable t = busy_table();
  const LockTable before = t;
  const std::string good = t.snapshot();
  auto refused = [&](const std::string& bytes) {
    Status s = t.restore(bytes);
    INFO(s.to_string());
    CHECK(s.code() == Code::kCorrupt);
    CHECK(t == before);
  };

  // The raw writer's valid state restores (so the spoilt ones below fail for the spoilt value).
  RawSnapshot raw;
  LockTable scratch;
  REQUIRE(scratch.restore(raw.bytes()).is_ok());
  CHECK(scratch.snapshot() == raw.bytes());
  raw.leases = {{1, 5000}, {3, 600000}};
  REQUIRE(scratch.restore(raw.bytes()).is_ok());
  CHECK(scratch.snapshot() == raw.bytes());
  CHECK(scratch.sessions() == Sessions{{1, 5000}, {2, 0}, {3, 600000}});

  std::vector<std::function<void(RawSnapshot&)>> spoil = {
      [](RawSnapshot& r) { r.magic = "palisade.kv"; },
      [](RawSnapshot& r) { r.calls.push_back({9, "a", 1}); },  // a call of a session that does not exist
      [](RawSnapshot& r) { r.calls.push_back({1, "a", 8}); },  // listed twice
      [](RawSnapshot& r) { r.version = 2; },
      [](RawSnapshot& r) { r.next_session = 0; },
      [](RawSnapshot& r) { r.next_session = 3; },      // session 3 from the future
      [](RawSnapshot& r) { r.sessions = {0, 1, 2, 3}; },
      [](RawSnapshot& r) { r.sessions = {1, 3, 2}; },  // out of order
      [](RawSnapshot& r) { r.sessions = {1, 2, 2, 3}; },
      [](RawSnapshot& r) { r.counter = 4; },           // a token above the counter
      [](RawSnapshot& r) { std::swap(r.locks[0], r.locks[1]); },
      [](RawSnapshot& r) { r.locks[1].name = "a"; },
      [](RawSnapshot& r) { r.locks[0].mode = 2; },
      [](RawSnapshot& r) {  // two exclusive holders
        r.locks[0].holders.push_back({2, 0});
        r.locks[0].waiters.clear();
      },
      [](RawSnapshot& r) { r.locks[0].holders = {{9, 0}}; },         // an unknown session
      [](RawSnapshot& r) { r.locks[1].holders = {{3, 0}, {2, 0}}; },
      [](RawSnapshot& r) { r.locks[0].delay_ms = 100; },  // held and delayed
      [](RawSnapshot& r) { r.locks[1].token = 0; },
      [](RawSnapshot& r) { r.locks[0].holders.clear(); },  // free, not delayed, with waiters
      [](RawSnapshot& r) { r.locks[1].holders.clear(); },  // an idle entry
      [](RawSnapshot& r) { r.locks[0].waiters[1][0] = 1; },  // the holder waits
      [](RawSnapshot& r) { r.locks[0].waiters[1][0] = 2; },  // queued twice
      [](RawSnapshot& r) { r.locks[0].waiters[1][0] = 7; },  // an unknown session
      [](RawSnapshot& r) { r.locks[0].waiters[0][1] = 5; },  // an unknown mode
      [](RawSnapshot& r) { r.locks[0].waiters[0].push_back(1); },
      [](RawSnapshot& r) { r.locks[0].waiters[0].pop_back(); },
      [](RawSnapshot& r) { r.locks[1].waiters = {{1, 1, 0, 0}}; },  // a shared head behind shared holders
      [](RawSnapshot& r) { r.leases = {{9, 5000}}; },                  // a lease of an unknown session
      [](RawSnapshot& r) { r.leases = {{2, 5000}, {1, 5000}}; },       // out of order
      [](RawSnapshot& r) { r.leases = {{1, 5000}, {1, 6000}}; },       // listed twice
      [](RawSnapshot& r) { r.leases = {{1, 0}}; },                     // the default, listed
      [](RawSnapshot& r) { r.leases = {{1, 5000, 1}}; },
      [](RawSnapshot& r) { r.leases = std::vector<std::vector<uint64_t>>{std::vector<uint64_t>{1}}; },
  };
  for (size_t i = 0; i < spoil.size(); ++i) {
    INFO("spoilt snapshot " << i);
    RawSnapshot r;
    spoil[i](r);
    refused(r.bytes());
  }

  refused("");
  refused(good + '\0');
  refused(packed([](Packer& pk) { pk.pack_map(0); }));
  refused(encode_batch(every_command()));
  for (size_t n = 0; n < good.size(); ++n) refused(good.substr(0, n));
  std::mt19937_64 rng(kSeed + 2);
  for (int i = 0; i < 5000; ++i) {
    std::string bytes = good;
    bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
    Status s = t.restore(bytes);
    // A flip may land in a value nothing checks (a wait_ms); then the restore is a different table.
    if (s.is_ok()) {
      LockTable again;
      CHECK(again.restore(t.snapshot()).is_ok());
      CHECK(again == t);
      t = before;
    } else {
      CHECK(s.code() == Code::kCorrupt);
      CHECK(t == before);
    }
    bytes.resize(rng() % 80);
    for (char& c : bytes) c = static_cast<char>(rng());
    refused(bytes);
  }
}

}  // namespace
// ---- The lock group's members (docs/design.md "Membership") ----

TEST_CASE("lock table: SetMembers records the members and counts the changes, in snapshots too",
          "[lock_table][members]") {
  LockTable t;
  CHECK(t.members().empty());
  CHECK(t.members_version() == 0);
  const std::string before = t.snapshot();
  CHECK_FALSE(members_in_snapshot(before));  // no change yet: the cluster file's members hold
  const std::vector<LockNode> five = {{1, "tcp://a:1"},
                                      {2, "tcp://b:1"},
                                      {3, "tcp://c:1"},
                                      {4, "tcp://d:1"},
                                      {5, "tcp://e:1"}};
  auto effects = t.apply({{1, SetMembers{five}}});
  CHECK(effects.results.at(0).outcome == Outcome::kOk);
  CHECK(t.members() == five);
  CHECK(t.members_version() == 1);
  t.apply({{2, SetMembers{{{2, "tcp://b:1"}, {4, "tcp://d:1"}, {6, "tcp://f:1"}}}}});
  CHECK(t.members_version() == 2);
  LockTable restored;
  REQUIRE(restored.restore(t.snapshot()).is_ok());
  CHECK(restored == t);
  CHECK(members_in_snapshot(t.snapshot()) == std::vector<uint32_t>{2, 4, 6});
  // With sessions, identities and leases around it too.
  t.apply({{3, OpenSession{30000, "ops"}}, {4, OpenSession{}}});
  REQUIRE(restored.restore(t.snapshot()).is_ok());
  CHECK(restored == t);
  // Leases listed but no identity: the empty identities list before the
  // members is the one form such a table has.
  LockTable leases_only;
  leases_only.apply({{1, OpenSession{30000}}, {2, SetMembers{five}}});
  REQUIRE(restored.restore(leases_only.snapshot()).is_ok());
  CHECK(restored == leases_only);
}

TEST_CASE("lock table: a member's key is kept in the log and in snapshots, and a node without one is written as before",
          "[lock_table][members][codec]") {
  const std::string key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  const SetMembers keyed{{{1, "tcp://a:1", key}, {2, "tcp://b:1"}}};
  auto decoded = decode_batch(encode_batch({{1, keyed}}));
  REQUIRE(decoded.is_ok());
  CHECK(std::get<SetMembers>(decoded.value().at(0).command) == keyed);
  LockTable t;
  t.apply({{1, keyed}});
  LockTable restored;
  REQUIRE(restored.restore(t.snapshot()).is_ok());
  CHECK(restored.members() == keyed.nodes);
  // [id, address] without a key: the form logs had before keys were kept.
  const std::string plain = encode_batch({{1, SetMembers{{{1, "a"}}}}});
  CHECK(plain.find(std::string("\x92\x01\xa1"
                               "a",
                               4)) != std::string::npos);
  // [id, address, ""] is no form the encoder writes: refused.
  std::string empty_key = encode_batch({{1, SetMembers{{{1, "a", "k"}}}}});
  const size_t at = empty_key.find(std::string("\xa1k", 2));
  REQUIRE(at != std::string::npos);
  empty_key.replace(at, 2, std::string("\xa0", 1));
  CHECK(decode_batch(empty_key).status().code() == Code::kBadRequest);
}

TEST_CASE("lock table: members_after names the members of a batch of one SetMembers only", "[lock_table][members]") {
  const SetMembers three{{{1, "a"}, {2, "b"}, {3, "c"}}};
  CHECK(members_after(encode_batch({{9, three}})) == std::vector<uint32_t>{1, 2, 3});
  CHECK_FALSE(members_after(encode_batch({{9, three}, {10, OpenSession{}}})));  // the master never batches it
  CHECK_FALSE(members_after(encode_batch({{9, OpenSession{}}})));
  CHECK_FALSE(members_after(encode_batch({{9, CloseSession{2}}})));
  CHECK_FALSE(members_after(""));
  CHECK_FALSE(members_after("garbage"));
}

TEST_CASE("lock table: a SetMembers that names no node, a node twice, out of order, id 0 or no address is refused",
          "[lock_table][members][codec]") {
  const std::vector<std::vector<LockNode>> bad = {
      {}, {{1, "a"}, {1, "b"}}, {{2, "a"}, {1, "b"}}, {{0, "a"}}, {{256, "a"}}, {{1, ""}},
  };
  for (const auto& nodes : bad) {
    const auto decoded = decode_batch(encode_batch({{1, SetMembers{nodes}}}));
    INFO(decoded.status().to_string());
    CHECK(decoded.status().code() == Code::kBadRequest);
  }
}

namespace {

// A serving set of three replicas, W = R = 2, at `version`.
wire::ReplicaSet three_replicas(uint64_t version, std::string first = "tcp://r1:7200") {
  return {.version = version,
          .phase = wire::ReplicaPhase::kServing,
          .replicas = {{1, std::move(first), "", 11}, {2, "tcp://r2:7200", "", 12}, {3, "tcp://r3:7200", "", 13}},
          .write_quorum = 2,
          .read_quorum = 2};
}

}  // namespace

TEST_CASE("lock table: SetReplicas applies only over the version it replaces", "[lock_table][replicaset]") {
  Table t;
  CHECK(t.table.replica_set().version == 0);  // none recorded: the cluster file's list stands
  CHECK(t.outcome(SetReplicas{three_replicas(1)}) == Outcome::kOk);
  CHECK(t.table.replica_set() == three_replicas(1));
  // Another change of version 0, chosen after the first: refused at apply time.
  CHECK(t.outcome(SetReplicas{three_replicas(1, "tcp://other:7200")}) == Outcome::kStaleVersion);
  CHECK(t.outcome(SetReplicas{three_replicas(3)}) == Outcome::kStaleVersion);  // skips a version
  CHECK(t.table.replica_set() == three_replicas(1));
  // Two changes of version 1 in one batch: the first applies, the second is stale.
  Effects effects = t.table.apply(
      {{10, SetReplicas{three_replicas(2, "tcp://a:7200")}}, {11, SetReplicas{three_replicas(2, "tcp://b:7200")}}});
  CHECK(effects.results.at(0).outcome == Outcome::kOk);
  CHECK(effects.results.at(1).outcome == Outcome::kStaleVersion);
  CHECK(t.table.replica_set() == three_replicas(2, "tcp://a:7200"));
}

TEST_CASE("lock table: the replica set is in snapshots, and older snapshots read as version 0",
          "[lock_table][replicaset][snapshot]") {
  LockTable t;
  t.apply({{1, OpenSession{}}, {2, SetMembers{{{1, "tcp://a:1"}}}}});
  const std::string before = t.snapshot();  // the form written before replica set records
  CHECK(static_cast<uint8_t>(before[0]) == 0x9a);  // an array of 10
  LockTable restored;
  REQUIRE(restored.restore(before).is_ok());
  CHECK(restored.replica_set().version == 0);
  CHECK(restored == t);

  t.apply({{3, SetReplicas{three_replicas(1)}}});
  const std::string after = t.snapshot();
  CHECK(static_cast<uint8_t>(after[0]) == 0x9b);  // an array of 11
  REQUIRE(restored.restore(after).is_ok());
  CHECK(restored.replica_set() == three_replicas(1));
  CHECK(restored == t);

  // No membership change yet: its place is an empty list before the record.
  LockTable no_members;
  no_members.apply({{1, SetReplicas{three_replicas(1)}}});
  const std::string bytes = no_members.snapshot();
  REQUIRE(restored.restore(bytes).is_ok());
  CHECK(restored == no_members);
  CHECK(restored.members_version() == 0);

  // That empty list with nothing after it, and a record that does not decode, are corrupt.
  const size_t record = bytes.find(wire::encode_replica_set(three_replicas(1)));
  REQUIRE(record != std::string::npos);
  std::string cut = bytes.substr(0, record - 2);  // the record's str8 header is two bytes
  cut[0] = static_cast<char>(0x9a);
  CHECK_THAT(restored.restore(cut).message(), Catch::Contains("an empty membership"));
  std::string damaged = bytes;
  damaged[record + 1] = 0;  // version 0
  CHECK(restored.restore(damaged).code() == Code::kCorrupt);
  CHECK(restored == no_members);  // unchanged by the refusals
}

TEST_CASE("lock table: a SetReplicas whose record cannot serve does not decode", "[lock_table][replicaset][codec]") {
  wire::ReplicaSet weak = three_replicas(1);
  weak.read_quorum = 1;  // R + W = N
  const auto decoded = decode_batch(encode_batch({{1, SetReplicas{weak}}}));
  CHECK(decoded.code() == Code::kBadRequest);
  CHECK_THAT(decoded.status().message(), Catch::Contains("cannot meet"));
  // Version 0 decodes as a cluster file's list, which the table never holds.
  const auto file_list = decode_batch(encode_batch({{1, SetReplicas{three_replicas(0)}}}));
  CHECK(file_list.code() == Code::kBadRequest);
  CHECK_THAT(file_list.status().message(), Catch::Contains("version 0 is no record"));
}

}  // namespace palisade::lockgroup
