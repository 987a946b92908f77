// The client side of a lock-group session (client/lock_session.h), driven by
// hand: the test plays the lockd nodes (it reads what the session sends and
// writes the replies a master or a follower would) and moves the clock itself.
// Every number checked is worked out in the comments next to it.
#include "client/lock_session.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <variant>
#include <vector>

#include "client/lease_clock.h"
#include "palisade/lease.h"
#include "tests/support/printers.h"

namespace palisade {
namespace {

using client::CallDone;
using client::LockSession;
using client::LockSessionOptions;
using client::Outgoing;
using client::SessionState;
using wire::LockReply;

constexpr uint64_t kStart = 1000;
constexpr uint64_t kLease = 12000;
// 12000 ms * (1e6 - 1000) / (1e6 + 1000), rounded down: 11976.02 -> 11976.
constexpr uint64_t kLocalLease = 11976;
constexpr uint64_t kEpoch = 5;
constexpr uint64_t kSession = 77;
const std::vector<std::string> kEndpoints = {"tcp://n0:7000", "tcp://n1:7000", "tcp://n2:7000"};

LockSessionOptions options() {
  return {.nodes = 3,
          .request_timeout_ms = 1000,
          .grace_ms = 45000,
          .max_drift_ppm = 1000,
          .call_timeout_ms = 10000,
          .retry_backoff_ms = 50};
}

template <class T>
bool is(const Outgoing& o) {
  return std::holds_alternative<T>(o.request.body);
}
template <class T>
const T& body(const Outgoing& o) {
  REQUIRE(is<T>(o));
  return std::get<T>(o.request.body);
}

// A fake lock group: the session under test plus a clock, and replies written
// the way palisade-lockd writes them.
struct Group {
  uint64_t now = kStart;
  LockSession s{options(), now};

  explicit Group(LockSessionOptions o = options()) : s(o, kStart) { s.set_endpoints(kEndpoints); }

  std::vector<Outgoing> out() { return s.take_outgoing(); }
  Outgoing one() {
    auto o = out();
    REQUIRE(o.size() == 1);
    return o[0];
  }
  void nothing_sent() { CHECK(s.take_outgoing().empty()); }
  void at(uint64_t t) {
    now = t;
    s.tick(now);
  }
  void reply(const Outgoing& to, LockReply r) { s.on_reply(to.node, r, now); }

  // What node `o.node` answers as master of `epoch`.
  static LockReply master_reply(const Outgoing& o, Code code = Code::kOk, uint64_t epoch = kEpoch) {
    LockReply r;
    r.id = o.request.id;
    r.status = code == Code::kOk ? Status::ok() : Status(code, "from the test");
    r.epoch = epoch;
    r.master = static_cast<uint32_t>(o.node + 1);
    r.master_endpoint = kEndpoints[o.node];
    return r;
  }
  static LockReply ok_session(const Outgoing& o, uint64_t lease = kLease) {
    LockReply r = master_reply(o);
    if (is<wire::OpenSessionRequest>(o)) r.session = kSession;
    r.lease_ms = lease;
    return r;
  }
  // A follower's not_master, naming `master` (or nobody).
  static LockReply not_master(const Outgoing& o, std::optional<size_t> master, uint64_t epoch = kEpoch) {
    LockReply r;
    r.id = o.request.id;
    r.status = Status(Code::kNotMaster, "ask the master");
    r.epoch = epoch;
    if (master) {
      r.master = static_cast<uint32_t>(*master + 1);
      r.master_endpoint = kEndpoints[*master];
    }
    return r;
  }
  static LockReply grant(const Outgoing& o, uint64_t token, uint64_t lease) {
    LockReply r = master_reply(o);
    r.token = token;
    r.mode = body<wire::AcquireRequest>(o).mode;
    r.sequencer = "ps2.seq-" + std::to_string(token);
    r.lease_ms = lease;
    return r;
  }

  // Opens the session on node 0 at kStart (answered at once): the deadline is
  // kStart + kLocalLease.
  void open() {
    Outgoing o = one();
    REQUIRE(is<wire::OpenSessionRequest>(o));
    reply(o, ok_session(o));
    REQUIRE(s.state() == SessionState::kSafe);
    REQUIRE(s.take_events() == std::vector{SessionState::kSafe});
  }
  std::vector<CallDone> done() { return s.take_done(); }
  CallDone one_done() {
    auto d = done();
    REQUIRE(d.size() == 1);
    return d[0];
  }
};

TEST_CASE("the session opens on the node a not_master hint names", "[lock_session]") {
  Group g;
  Outgoing first = g.one();
  CHECK(first.node == 0);
  CHECK(body<wire::OpenSessionRequest>(first).epoch == 0);

  // Node 0 is a follower and knows the master is node 2: ask it at once.
  g.reply(first, Group::not_master(first, 2));
  Outgoing second = g.one();
  CHECK(second.node == 2);
  CHECK(is<wire::OpenSessionRequest>(second));
  CHECK(second.request.id != first.request.id);
  CHECK(g.s.state() == SessionState::kOpening);

  g.now += 3;
  g.reply(second, Group::ok_session(second));
  CHECK(g.s.state() == SessionState::kSafe);
  CHECK(g.s.take_events() == std::vector{SessionState::kSafe});
  CHECK(g.s.session() == kSession);
  CHECK(g.s.epoch() == kEpoch);
  CHECK(g.s.master_guess() == 2);
  // From the send time (kStart), not the answer's (kStart + 3).
  CHECK(g.s.lease_deadline() == kStart + kLocalLease);
  CHECK(g.s.lease_valid(g.now));
}

TEST_CASE("without a hint the session asks the next node after a pause", "[lock_session]") {
  Group g;
  Outgoing first = g.one();
  g.reply(first, Group::not_master(first, std::nullopt));
  g.nothing_sent();
  CHECK(g.s.next_timer_ms() == kStart + 50);
  g.at(kStart + 49);
  g.nothing_sent();
  g.at(kStart + 50);
  Outgoing second = g.one();
  CHECK(second.node == 1);
  CHECK(is<wire::OpenSessionRequest>(second));

  // No answer at all: the node after that, one request timeout later.
  g.at(kStart + 50 + 999);
  g.nothing_sent();
  g.at(kStart + 50 + 1000);
  Outgoing third = g.one();
  CHECK(third.node == 2);
  CHECK(is<wire::OpenSessionRequest>(third));
}

TEST_CASE("hints that point in a circle are followed only so far", "[lock_session]") {
  Group g;
  Outgoing o = g.one();
  // Nodes 0 and 1 name each other: 3 hops at once, then a pause.
  for (int hop = 0; hop < 3; ++hop) {
    g.reply(o, Group::not_master(o, o.node == 0 ? 1 : 0));
    o = g.one();
  }
  g.reply(o, Group::not_master(o, o.node == 0 ? 1 : 0));
  g.nothing_sent();
  g.at(g.now + 50);
  CHECK(g.one().node == (o.node == 0 ? 1u : 0u));
}

TEST_CASE("KeepAlives go every third of the lease, and to the next node when unanswered", "[lock_session]") {
  Group g;
  g.open();
  // The open was answered at kStart: the next KeepAlive at kStart + 12000 / 3.
  CHECK(g.s.next_timer_ms() == kStart + 4000);
  g.at(kStart + 3999);
  g.nothing_sent();
  g.at(kStart + 4000);
  Outgoing ka = g.one();
  CHECK(ka.node == 0);
  CHECK(body<wire::KeepAliveRequest>(ka).session == kSession);
  CHECK(body<wire::KeepAliveRequest>(ka).epoch == kEpoch);

  // Unanswered for a request timeout: ask node 1.
  g.at(kStart + 4999);
  g.nothing_sent();
  g.at(kStart + 5000);
  Outgoing retry = g.one();
  CHECK(retry.node == 1);
  CHECK(is<wire::KeepAliveRequest>(retry));

  // Node 1 became master (epoch 6) and answers 10 ms later.
  g.now = kStart + 5010;
  g.reply(retry, [&] {
    LockReply r = Group::master_reply(retry, Code::kOk, 6);
    r.lease_ms = kLease;
    return r;
  }());
  CHECK(g.s.epoch() == 6);
  CHECK(g.s.master_guess() == 1);
  CHECK(g.s.lease_deadline() == kStart + 5000 + kLocalLease);
  // The next one 4000 ms after that answer, to node 1.
  g.at(kStart + 5010 + 3999);
  g.nothing_sent();
  g.at(kStart + 5010 + 4000);
  Outgoing next = g.one();
  CHECK(next.node == 1);
  CHECK(body<wire::KeepAliveRequest>(next).epoch == 6);
  CHECK(g.s.take_events().empty());
}

TEST_CASE("the local deadline starts at the send time and allows for drift", "[lock_session]") {
  SECTION("exact numbers") {
    CHECK(client::lease_end(1000, 12000, 1000) == 1000 + 11976);
    CHECK(client::lease_end(1000, 12000, 0) == 13000);
    // 12000 * 900000 / 1100000 = 9818.18 -> 9818
    CHECK(client::lease_end(0, 12000, 100000) == 9818);
    // 10 * 999000 / 1001000 = 9.98 -> 9: rounded down, never up.
    CHECK(client::lease_end(0, 10, 1000) == 9);
  }

  SECTION("in a session") {
    Group g;
    Outgoing open = g.one();
    g.now = kStart + 700;  // a slow answer
    g.reply(open, Group::ok_session(open));
    CHECK(g.s.lease_deadline() == kStart + kLocalLease);

    // A KeepAlive sent at kStart + 4700, answered 2 s later: from its send time.
    g.at(kStart + 4700);
    Outgoing ka = g.one();
    g.now = kStart + 6700;
    g.reply(ka, Group::ok_session(ka));
    CHECK(g.s.lease_deadline() == kStart + 4700 + kLocalLease);

    // The answer to an older KeepAlive never moves the deadline back.
    g.at(kStart + 10700);
    Outgoing ka2 = g.one();
    g.at(kStart + 11700);
    Outgoing ka3 = g.one();  // ka2 timed out: to node 1
    CHECK(ka3.node == 1);
    g.reply(ka3, Group::ok_session(ka3));
    CHECK(g.s.lease_deadline() == kStart + 11700 + kLocalLease);
    g.now = kStart + 11800;
    g.reply(ka2, Group::ok_session(ka2));
    CHECK(g.s.lease_deadline() == kStart + 11700 + kLocalLease);
  }

  SECTION("a late answer to a KeepAlive that was sent again still counts") {
    Group g;
    g.open();
    g.at(kStart + 4000);
    Outgoing ka = g.one();
    g.at(kStart + 5000);
    Outgoing retry = g.one();
    CHECK(retry.node == 1);
    g.at(kStart + 5500);
    g.reply(ka, Group::ok_session(ka));
    CHECK(g.s.lease_deadline() == kStart + 4000 + kLocalLease);
    CHECK(g.s.master_guess() == 0);
  }
}

TEST_CASE("jeopardy at the deadline, safe again on an answer within the grace, expired after it", "[lock_session]") {
  Group g;
  g.open();
  const uint64_t deadline = kStart + kLocalLease;  // 12976
  const uint64_t check = g.s.check_sequencer("ps2.x", g.now);
  g.out();

  // Nobody answers from now on.
  for (uint64_t t = g.now; t < deadline; t += 100) g.at(t);
  g.out();
  CHECK(g.s.state() == SessionState::kSafe);
  CHECK(g.s.lease_valid(deadline - 1));
  g.at(deadline - 1);
  CHECK(g.s.take_events().empty());

  g.at(deadline);
  CHECK(g.s.state() == SessionState::kJeopardy);
  CHECK(g.s.take_events() == std::vector{SessionState::kJeopardy});
  CHECK_FALSE(g.s.lease_valid(deadline));
  // The call ended on its own call timeout (10 s after it started), not on
  // the jeopardy: jeopardy is not expiry.
  auto d = g.done();
  REQUIRE(d.size() == 1);
  CHECK(d[0].call == check);
  CHECK(d[0].status.code() == Code::kUnavailable);

  SECTION("an answer within the grace makes it safe again") {
    // KeepAlives keep going, one request timeout apart, round the nodes.
    std::vector<Outgoing> kas;
    std::vector<uint64_t> sent_at;
    for (uint64_t t = deadline; t <= deadline + 20000; t += 10) {
      g.at(t);
      for (Outgoing& o : g.out()) {
        REQUIRE(is<wire::KeepAliveRequest>(o));
        kas.push_back(o);
        sent_at.push_back(t);
      }
    }
    REQUIRE(kas.size() == 20);
    for (size_t i = 1; i < kas.size(); ++i) {
      CHECK(kas[i].node == (kas[i - 1].node + 1) % 3);
      CHECK(sent_at[i] - sent_at[i - 1] >= 1000);
      CHECK(sent_at[i] - sent_at[i - 1] < 1010);
    }
    const Outgoing& last = kas.back();
    g.now += 5;
    g.reply(last, Group::ok_session(last));
    CHECK(g.s.state() == SessionState::kSafe);
    CHECK(g.s.take_events() == std::vector{SessionState::kSafe});
    CHECK(g.s.lease_deadline() == sent_at.back() + kLocalLease);
    CHECK(g.s.lease_valid(g.now));
  }

  SECTION("no answer within the grace expires it") {
    g.at(deadline + 44999);
    g.out();
    CHECK(g.s.state() == SessionState::kJeopardy);
    uint64_t release = g.s.release("y", g.now);
    g.out();
    g.at(deadline + 45000);
    CHECK(g.s.state() == SessionState::kExpired);
    CHECK(g.s.take_events() == std::vector{SessionState::kExpired});
    auto ended = g.done();
    REQUIRE(ended.size() == 1);
    CHECK(ended[0].call == release);
    CHECK(ended[0].status.code() == Code::kNoSession);
    // Nothing more is sent, and a late answer changes nothing.
    g.at(deadline + 50000);
    g.nothing_sent();
    CHECK(g.s.next_timer_ms() == LockSession::kNever);
  }
}

TEST_CASE("no_session expires the session and fails every call", "[lock_session]") {
  Group g;
  g.open();
  uint64_t waiting = g.s.acquire("x", LockMode::kExclusive, 0, 30000, g.now);
  g.out();
  g.at(kStart + 4000);
  Outgoing ka = g.one();
  g.reply(ka, Group::master_reply(ka, Code::kNoSession));
  CHECK(g.s.state() == SessionState::kExpired);
  CHECK(g.s.take_events() == std::vector{SessionState::kExpired});
  CallDone d = g.one_done();
  CHECK(d.call == waiting);
  CHECK(d.status.code() == Code::kNoSession);
  CHECK_FALSE(g.s.lease_valid(g.now));

  // Calls after expiry end at once, and nothing is sent.
  uint64_t a = g.s.acquire("y", LockMode::kExclusive, 0, 0, g.now);
  uint64_t c = g.s.check_sequencer("ps2.x", g.now);
  uint64_t r = g.s.release("y", g.now);
  auto after = g.done();
  REQUIRE(after.size() == 3);
  CHECK(after[0].call == a);
  CHECK(after[1].call == c);
  CHECK(after[2].call == r);
  for (const CallDone& x : after) CHECK(x.status.code() == Code::kNoSession);
  g.nothing_sent();
}

TEST_CASE("no_session in answer to a call expires the session too", "[lock_session]") {
  Group g;
  g.open();
  uint64_t a = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  uint64_t b = g.s.acquire("y", LockMode::kExclusive, 0, 0, g.now);
  auto sent = g.out();
  REQUIRE(sent.size() == 2);
  g.reply(sent[0], Group::master_reply(sent[0], Code::kNoSession));
  CHECK(g.s.state() == SessionState::kExpired);
  auto d = g.done();
  REQUIRE(d.size() == 2);
  CHECK(((d[0].call == a && d[1].call == b) || (d[0].call == b && d[1].call == a)));
  CHECK(d[0].status.code() == Code::kNoSession);
  CHECK(d[1].status.code() == Code::kNoSession);
}

TEST_CASE("stale_epoch: the session takes the master's epoch and asks again at once", "[lock_session]") {
  Group g;
  g.open();
  g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  Outgoing first = g.one();
  CHECK(body<wire::AcquireRequest>(first).epoch == kEpoch);
  g.reply(first, Group::master_reply(first, Code::kStaleEpoch, 9));
  CHECK(g.s.epoch() == 9);
  Outgoing again = g.one();
  CHECK(again.node == first.node);
  CHECK(body<wire::AcquireRequest>(again).epoch == 9);
  CHECK(body<wire::AcquireRequest>(again).session == kSession);

  // KeepAlives carry it too.
  g.reply(again, Group::grant(again, 3, kLease));
  g.at(kStart + 4000);
  CHECK(body<wire::KeepAliveRequest>(g.one()).epoch == 9);
}

TEST_CASE("a follower's epoch is not taken, and a master that finds ours too new gives its own", "[lock_session]") {
  Group g;
  g.open();
  g.at(kStart + 4000);
  Outgoing ka = g.one();
  CHECK(ka.node == 0);
  // A follower that promised a ballot which never won names node 1.
  g.reply(ka, Group::not_master(ka, 1, 40));
  CHECK(g.s.epoch() == kEpoch);
  Outgoing again = g.one();  // to node 1, the hint, at once
  CHECK(again.node == 1);

  // Were a too new epoch taken anyway (here: from a master's stale_epoch), a
  // master that names itself and refuses it gives its own.
  g.reply(again, Group::master_reply(again, Code::kStaleEpoch, 40));
  CHECK(g.s.epoch() == 40);
  Outgoing third = g.one();
  CHECK(third.node == 1);
  CHECK(body<wire::KeepAliveRequest>(third).epoch == 40);
  LockReply too_new = Group::not_master(third, third.node, 7);
  g.reply(third, too_new);
  CHECK(g.s.epoch() == 7);
  Outgoing fourth = g.one();
  CHECK(fourth.node == third.node);
  CHECK(body<wire::KeepAliveRequest>(fourth).epoch == 7);
}

TEST_CASE("an acquire retried after a timeout gets the same grant, once", "[lock_session]") {
  Group g;
  g.open();
  const uint64_t call = g.s.acquire("x", LockMode::kExclusive, 5000, 0, g.now);
  Outgoing first = g.one();
  const auto& a = body<wire::AcquireRequest>(first);
  CHECK(first.node == 0);
  CHECK(a.lock == "x");
  CHECK(a.mode == LockMode::kExclusive);
  CHECK(a.lock_delay_ms == 5000);
  CHECK(a.wait_ms == 0);
  CHECK(a.session == kSession);
  CHECK(a.call == call);  // a retry below repeats the number

  // The master applied it, but its answer is late: the call asks again after a
  // request timeout, on the next node, which names node 0 master.
  g.at(kStart + 1000);
  Outgoing second = g.one();
  CHECK(second.node == 1);
  CHECK(body<wire::AcquireRequest>(second) == a);
  g.reply(second, Group::not_master(second, 0));
  Outgoing third = g.one();
  CHECK(third.node == 0);
  // Node 0 answers the retry with the grant it already made.
  g.reply(third, Group::grant(third, 42, 11000));
  CallDone d = g.one_done();
  CHECK(d.call == call);
  CHECK(d.status.is_ok());
  REQUIRE(d.grant);
  CHECK(d.grant->lock == "x");
  CHECK(d.grant->token == 42);
  CHECK(d.grant->sequencer == "ps2.seq-42");
  // The late answer to the first request: the call already ended.
  g.reply(first, Group::grant(first, 42, 11000));
  CHECK(g.done().empty());
  g.nothing_sent();  // and the lock is not given back: it is held
}

TEST_CASE("a grant shortens the local deadline to the session lease the master had left", "[lock_session]") {
  Group g;
  g.open();
  CHECK(g.s.lease_deadline() == kStart + kLocalLease);  // 12976
  g.at(kStart + 2000);
  g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  Outgoing o = g.one();
  g.now = kStart + 2500;
  // The master had 5000 ms of the session left at the grant:
  // 3000 + 5000 * 999000 / 1001000 = 3000 + 4990.
  g.reply(o, Group::grant(o, 1, 5000));
  CHECK(g.s.lease_deadline() == kStart + 2000 + 4990);
  CHECK(g.one_done().status.is_ok());

  // A grant with more left does not lengthen it.
  g.s.acquire("y", LockMode::kShared, 0, 0, g.now);
  Outgoing o2 = g.one();
  g.reply(o2, Group::grant(o2, 2, 60000));
  CHECK(g.s.lease_deadline() == kStart + 2000 + 4990);
  CallDone d = g.one_done();
  CHECK(d.grant->mode == LockMode::kShared);

  // The next KeepAlive answer lengthens it again.
  g.at(kStart + 4000);
  Outgoing ka = g.one();
  g.reply(ka, Group::ok_session(ka));
  CHECK(g.s.lease_deadline() == kStart + 4000 + kLocalLease);
}

TEST_CASE("a waiting acquire", "[lock_session]") {
  Group g;
  g.open();
  const uint64_t call = g.s.acquire("x", LockMode::kExclusive, 0, 5000, g.now);
  Outgoing first = g.one();
  CHECK(body<wire::AcquireRequest>(first).wait_ms == 5000);
  CHECK(first.call == call);  // drivers send a call's requests on the caller's own sockets by this

  SECTION("cancelled, it ends at once and anything granted is given back") {
    g.now = kStart + 300;
    g.s.cancel(call, g.now);
    CallDone d = g.one_done();
    CHECK(d.call == call);
    CHECK(d.status.code() == Code::kCancelled);
    Outgoing release = g.one();
    CHECK(body<wire::ReleaseRequest>(release).lock == "x");
    CHECK(release.call != call);  // a clean-up of its own
    g.reply(release, Group::master_reply(release));
    CHECK(g.done().empty());
    // The queued acquire is granted later all the same: given back again.
    g.reply(first, Group::grant(first, 8, kLease));
    CHECK(body<wire::ReleaseRequest>(g.one()).lock == "x");
    CHECK(g.done().empty());
    g.s.cancel(call, g.now);  // ended already: nothing more
    CHECK(g.done().empty());
    g.nothing_sent();
  }

  SECTION("a late grant of a cancelled acquire is not given back while a newer acquire of the lock is in flight") {
    g.s.cancel(call, g.now);
    g.one_done();
    Outgoing orphan_release = g.one();
    g.reply(orphan_release, Group::master_reply(orphan_release, Code::kOk));
    const uint64_t again = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
    Outgoing second = g.one();
    // The first acquire's grant arrives now: a release sent after `second`
    // would free the lock `second` is about to be answered with.
    g.reply(first, Group::grant(first, 8, kLease));
    g.nothing_sent();
    g.reply(second, Group::grant(second, 8, kLease));
    CallDone d = g.one_done();
    CHECK(d.call == again);
    REQUIRE(d.status.is_ok());
    CHECK(d.grant->token == 8);
    g.nothing_sent();
  }

  SECTION("the master's timeout ends it") {
    g.now = kStart + 5000;
    g.reply(first, Group::master_reply(first, Code::kTimeout));
    CallDone d = g.one_done();
    CHECK(d.call == call);
    CHECK(d.status.code() == Code::kTimeout);
  }

  SECTION("it is not asked again before its wait and a request timeout passed") {
    for (uint64_t t = kStart; t < kStart + 6000; t += 100) {
      g.at(t);
      for (const Outgoing& o : g.out()) CHECK_FALSE(is<wire::AcquireRequest>(o));
      g.s.take_events();
    }
    g.at(kStart + 6000);
    bool resent = false;
    for (const Outgoing& o : g.out()) {
      if (!is<wire::AcquireRequest>(o)) continue;
      resent = true;
      // What is left of the wait, at least 1 ms.
      CHECK(body<wire::AcquireRequest>(o).wait_ms == 1);
    }
    CHECK(resent);
    CHECK(g.done().empty());
  }

  SECTION("unanswered, it ends with timeout after its wait and the call timeout") {
    // The session stays safe: answer every KeepAlive.
    std::vector<Outgoing> acquires;
    for (uint64_t t = kStart; t < kStart + 15000; t += 10) {
      g.at(t);
      for (const Outgoing& o : g.out()) {
        if (is<wire::KeepAliveRequest>(o)) g.reply(o, Group::ok_session(o));
        if (is<wire::AcquireRequest>(o)) acquires.push_back(o);
      }
      REQUIRE(g.done().empty());
    }
    g.at(kStart + 15000);
    auto d = g.done();
    REQUIRE(d.size() == 1);
    CHECK(d[0].call == call);
    CHECK(d[0].status.code() == Code::kTimeout);
    CHECK(g.s.state() == SessionState::kSafe);
    // The lock may have been granted all the same: it is given back.
    Outgoing release = g.one();
    CHECK(body<wire::ReleaseRequest>(release).lock == "x");
    g.reply(release, Group::master_reply(release));
    CHECK(g.done().empty());  // an internal call: no CallDone

    // A grant that turns up later is given back too.
    g.reply(first, Group::grant(first, 8, kLease));
    Outgoing again = g.one();
    CHECK(body<wire::ReleaseRequest>(again).lock == "x");
    CHECK(g.done().empty());
  }
}

TEST_CASE("an acquire no master answers ends with unavailable and is given back", "[lock_session]") {
  Group g;
  g.open();
  const uint64_t call = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  std::vector<Outgoing> acquires;
  for (uint64_t t = kStart; t < kStart + 10000; t += 10) {
    g.at(t);
    for (const Outgoing& o : g.out()) {
      if (is<wire::KeepAliveRequest>(o)) g.reply(o, Group::ok_session(o));
      if (is<wire::AcquireRequest>(o)) acquires.push_back(o);
    }
    REQUIRE(g.done().empty());
  }
  // Asked again every request timeout, round the nodes.
  CHECK(acquires.size() == 10);
  g.at(kStart + 10000);
  CallDone d = g.one_done();
  CHECK(d.call == call);
  CHECK(d.status.code() == Code::kUnavailable);
  CHECK(body<wire::ReleaseRequest>(g.one()).lock == "x");
}

TEST_CASE("release, check_sequencer, current_grant and close", "[lock_session]") {
  Group g;
  g.open();
  const uint64_t r = g.s.release("x", g.now);
  Outgoing rel = g.one();
  // The call's number orders it against the session's other calls on the lock.
  CHECK(body<wire::ReleaseRequest>(rel) ==
        wire::ReleaseRequest{.epoch = kEpoch, .session = kSession, .lock = "x", .call = r});
  g.reply(rel, Group::master_reply(rel));
  CallDone d = g.one_done();
  CHECK(d.call == r);
  CHECK(d.status.is_ok());

  const uint64_t c = g.s.check_sequencer("ps2.abc", g.now);
  Outgoing check = g.one();
  CHECK(body<wire::CheckSequencerRequest>(check).sequencer == "ps2.abc");
  LockReply current = Group::master_reply(check);
  current.current = true;
  g.reply(check, current);
  d = g.one_done();
  CHECK(d.call == c);
  CHECK(d.current);

  const uint64_t bad = g.s.check_sequencer("nonsense", g.now);
  Outgoing check2 = g.one();
  g.reply(check2, Group::master_reply(check2, Code::kBadSequencer));
  d = g.one_done();
  CHECK(d.call == bad);
  CHECK(d.status.code() == Code::kBadSequencer);

  // current_grant: the grant while held, none while free; the session keeps nothing of it.
  const uint64_t held = g.s.current_grant("leader", g.now);
  Outgoing ask = g.one();
  CHECK(body<wire::CurrentGrantRequest>(ask).lock == "leader");
  LockReply holding = Group::master_reply(ask);
  holding.token = 41;
  holding.mode = LockMode::kShared;
  g.reply(ask, holding);
  d = g.one_done();
  CHECK(d.call == held);
  REQUIRE(d.grant);
  CHECK(d.grant->lock == "leader");
  CHECK(d.grant->token == 41);
  CHECK(d.grant->mode == LockMode::kShared);
  CHECK(d.grant->sequencer.empty());
  const uint64_t free = g.s.current_grant("leader", g.now);
  Outgoing ask2 = g.one();
  g.reply(ask2, Group::master_reply(ask2));
  d = g.one_done();
  CHECK(d.call == free);
  CHECK(d.status.is_ok());
  CHECK_FALSE(d.grant);

  const uint64_t busy = g.s.acquire("held", LockMode::kExclusive, 0, 0, g.now);
  Outgoing acq = g.one();
  g.reply(acq, Group::master_reply(acq, Code::kBusy));
  d = g.one_done();
  CHECK(d.call == busy);
  CHECK(d.status.code() == Code::kBusy);
  CHECK(g.s.state() == SessionState::kSafe);

  const uint64_t pending = g.s.acquire("y", LockMode::kExclusive, 0, 10000, g.now);
  g.out();
  const uint64_t cl = g.s.close(g.now);
  Outgoing close = g.one();
  CHECK(body<wire::CloseSessionRequest>(close) == wire::CloseSessionRequest{.epoch = kEpoch, .session = kSession});
  g.reply(close, Group::master_reply(close));
  CHECK(g.s.state() == SessionState::kClosed);
  CHECK(g.s.take_events() == std::vector{SessionState::kClosed});
  auto ended = g.done();
  REQUIRE(ended.size() == 2);
  CHECK(ended[0].call == cl);
  CHECK(ended[0].status.is_ok());
  CHECK(ended[1].call == pending);
  CHECK(ended[1].status.code() == Code::kNoSession);
  CHECK(g.s.next_timer_ms() == LockSession::kNever);
}

// Lock simulation seed 62322: a close that no master answered left the session
// kept alive by KeepAlives, holding a lock whose release had failed, for ever.
TEST_CASE("a close no master answers ends unavailable and still stops the KeepAlives", "[lock_session]") {
  Group g;
  g.open();
  const uint64_t cl = g.s.close(g.now);
  std::vector<CallDone> ended;
  for (uint64_t t = kStart + 100; t <= kStart + 12000; t += 100) {
    g.at(t);
    for (const Outgoing& o : g.out()) {
      if (is<wire::KeepAliveRequest>(o)) g.reply(o, Group::ok_session(o));  // the group answers KeepAlives only
    }
    for (CallDone& d : g.done()) ended.push_back(d);
  }
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].call == cl);
  CHECK(ended[0].status.code() == Code::kUnavailable);
  CHECK(g.s.state() == SessionState::kClosed);
  CHECK(g.s.next_timer_ms() == LockSession::kNever);
  g.at(kStart + 60000);
  g.nothing_sent();  // the lock group expires the session after its lease
}

TEST_CASE("a release no master answers ends unavailable, and goes on in the background", "[lock_session]") {
  Group g;
  g.open();
  const uint64_t r = g.s.release("x", g.now);
  // The group answers KeepAlives only, until the call's timeout.
  auto run_until = [&](uint64_t end, std::vector<Outgoing>& releases) {
    for (uint64_t t = g.now + 100; t <= end; t += 100) {
      g.at(t);
      for (const Outgoing& o : g.out()) {
        if (is<wire::KeepAliveRequest>(o)) g.reply(o, Group::ok_session(o));
        if (is<wire::ReleaseRequest>(o)) releases.push_back(o);
      }
    }
  };
  std::vector<Outgoing> releases;
  run_until(kStart + 10000, releases);
  CallDone d = g.one_done();
  CHECK(d.call == r);
  CHECK(d.status.code() == Code::kUnavailable);
  const size_t asked = releases.size();
  CHECK(asked == 11);  // every request timeout, round the nodes, and the first in the background
  SECTION("until a master applies it") {
    // Still asked after the call ended, past another call timeout too.
    run_until(kStart + 25000, releases);
    REQUIRE(releases.size() > asked + 10);
    for (const Outgoing& o : releases) CHECK(body<wire::ReleaseRequest>(o).lock == "x");
    g.reply(releases.back(), Group::master_reply(releases.back()));
    CHECK(g.done().empty());  // the owner was told already
    CHECK(g.s.calls_in_flight() == 0);
    g.at(g.now + 20000);
    for (const Outgoing& o : g.out()) CHECK_FALSE(is<wire::ReleaseRequest>(o));
  }
  SECTION("unless the session acquires the lock again first") {
    const uint64_t a = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
    Outgoing acquire = g.one();
    REQUIRE(is<wire::AcquireRequest>(acquire));
    g.reply(acquire, Group::grant(acquire, 3, kLease));  // the grant it still held
    d = g.one_done();
    CHECK(d.call == a);
    CHECK(d.status.is_ok());
    g.at(g.now + 30000);
    for (const Outgoing& o : g.out()) CHECK_FALSE(is<wire::ReleaseRequest>(o));
  }
}

TEST_CASE("an acquire answered after a release of its lock does not count as held", "[lock_session]") {
  Group g;
  g.open();
  // One thread holds x; another asks for it too (the group answers with the
  // same grant), and the first releases it before that answer is back.
  const uint64_t first = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  Outgoing acq1 = g.one();
  g.reply(acq1, Group::grant(acq1, 1, kLease));
  REQUIRE(g.one_done().call == first);
  const uint64_t second = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  Outgoing acq2 = g.one();
  const uint64_t rel = g.s.release("x", g.now);
  Outgoing release = g.one();
  // The group applied the acquire, then the release: x is free. The acquire's
  // answer, sent in between, must not hand out a lease.
  g.reply(acq2, Group::grant(acq2, 1, kLease));
  CallDone d = g.one_done();
  CHECK(d.call == second);
  CHECK(d.status.code() == Code::kCancelled);
  CHECK_FALSE(d.grant);
  g.nothing_sent();  // the release on its way gives the lock back
  LockReply released = Group::master_reply(release);
  released.released = true;
  g.reply(release, released);
  CHECK(g.one_done().call == rel);

  // A waiting acquire granted after a release of its lock: the grant is real,
  // so it is given back at once.
  const uint64_t waiting = g.s.acquire("y", LockMode::kExclusive, 0, 5000, g.now);
  Outgoing acq3 = g.one();
  const uint64_t rel2 = g.s.release("y", g.now);
  Outgoing release2 = g.one();
  g.reply(release2, Group::master_reply(release2));
  CHECK(g.one_done().call == rel2);
  g.reply(acq3, Group::grant(acq3, 2, kLease));
  d = g.one_done();
  CHECK(d.call == waiting);
  CHECK(d.status.code() == Code::kCancelled);
  Outgoing give_back = g.one();
  CHECK(body<wire::ReleaseRequest>(give_back).lock == "y");
  CHECK(body<wire::ReleaseRequest>(give_back).call > rel2);
}

TEST_CASE("release_grant frees only the grant with its token, not a newer grant of the lock", "[lock_session]") {
  // LockClient::acquire gives back a grant whose fence found a higher floor.
  // Meanwhile another thread of the session may have got the same grant,
  // released it and acquired the lock again: only token 1 may be given back.
  Group g;
  g.open();
  const uint64_t first = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  Outgoing acq1 = g.one();
  g.reply(acq1, Group::grant(acq1, 1, kLease));
  REQUIRE(g.one_done().call == first);
  const uint64_t rel = g.s.release("x", g.now);
  Outgoing release = g.one();
  LockReply released = Group::master_reply(release);
  released.released = true;
  g.reply(release, released);
  REQUIRE(g.one_done().call == rel);
  const uint64_t again = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  Outgoing acq2 = g.one();
  g.reply(acq2, Group::grant(acq2, 2, kLease));
  REQUIRE(g.one_done().call == again);

  // Token 1 is gone: nothing is sent, the call ends at once.
  const uint64_t stale = g.s.release_grant("x", 1, g.now);
  g.nothing_sent();
  CallDone d = g.one_done();
  CHECK(d.call == stale);
  CHECK(d.status.is_ok());
  // Token 2 is the session's grant: it is released.
  const uint64_t current = g.s.release_grant("x", 2, g.now);
  Outgoing release2 = g.one();
  CHECK(body<wire::ReleaseRequest>(release2).lock == "x");
  LockReply released2 = Group::master_reply(release2);
  released2.released = true;
  g.reply(release2, released2);
  CHECK(g.one_done().call == current);
  // And once released, token 2 is not released again.
  g.s.release_grant("x", 2, g.now);
  g.nothing_sent();
  CHECK(g.one_done().status.is_ok());
}

TEST_CASE("calls made while the session opens wait for it", "[lock_session]") {
  Group g;
  Outgoing open = g.one();
  const uint64_t call = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  g.nothing_sent();
  g.reply(open, Group::ok_session(open));
  Outgoing acq = g.one();
  CHECK(body<wire::AcquireRequest>(acq).session == kSession);
  g.reply(acq, Group::grant(acq, 1, kLease));
  CHECK(g.one_done().call == call);
}

TEST_CASE("when a KeepAlive finds the new master, waiting calls go there at once", "[lock_session]") {
  Group g;
  g.open();
  g.s.acquire("x", LockMode::kExclusive, 0, 20000, g.now);
  Outgoing acq = g.one();
  CHECK(acq.node == 0);
  g.at(kStart + 4000);
  Outgoing ka = g.one();
  g.at(kStart + 5000);
  Outgoing ka2 = g.one();
  CHECK(ka2.node == 1);
  g.reply(ka2, [&] {
    LockReply r = Group::master_reply(ka2, Code::kOk, 6);
    r.lease_ms = kLease;
    return r;
  }());
  Outgoing moved = g.one();
  CHECK(moved.node == 1);
  // 20000 ms of wait from kStart; 5000 ms went by.
  CHECK(body<wire::AcquireRequest>(moved).wait_ms == 15000);
  CHECK(body<wire::AcquireRequest>(moved).epoch == 6);
  (void)ka;
}

TEST_CASE("a send the driver could not make is retried on the next node after a pause", "[lock_session]") {
  Group g;
  Outgoing open = g.one();
  g.s.on_unreachable(open.node, open.request.id, g.now);
  CHECK(g.s.next_timer_ms() == kStart + 50);
  g.at(kStart + 50);
  Outgoing again = g.one();
  CHECK(again.node == 1);
  CHECK(is<wire::OpenSessionRequest>(again));
}

TEST_CASE("a second session opened by a duplicate open_session is closed", "[lock_session]") {
  Group g;
  Outgoing first = g.one();
  g.at(kStart + 1000);
  Outgoing second = g.one();  // the first timed out: node 1
  CHECK(second.node == 1);
  g.reply(second, Group::ok_session(second));
  CHECK(g.s.session() == kSession);
  LockReply late = Group::ok_session(first);
  late.session = kSession + 1;
  g.reply(first, late);
  CHECK(g.s.session() == kSession);
  Outgoing close = g.one();
  CHECK(close.node == 0);
  CHECK(body<wire::CloseSessionRequest>(close).session == kSession + 1);
}

TEST_CASE("a lock-delay over the maximum is refused without asking", "[lock_session]") {
  Group g;
  g.open();
  g.s.acquire("x", LockMode::kExclusive, wire::kMaxLockDelayMs + 1, 0, g.now);
  CallDone d = g.one_done();
  CHECK(d.status.code() == Code::kBadRequest);
  g.nothing_sent();
}

TEST_CASE("a session asks for its own lease and keeps time by the lease it gets", "[lock_session]") {
  SECTION("the default: no lease_ms asked for") {
    Group g;
    CHECK(body<wire::OpenSessionRequest>(g.one()).lease_ms == 0);
  }
  SECTION("its own") {
    LockSessionOptions o = options();
    o.session_lease_ms = 1500;
    Group g(o);
    Outgoing open = g.one();
    CHECK(body<wire::OpenSessionRequest>(open).lease_ms == 1500);
    // The master answers with the session's lease, here not quite what was
    // asked: the answer is what counts.
    g.reply(open, Group::ok_session(open, 2400));
    REQUIRE(g.s.state() == SessionState::kSafe);
    // 2400 * 999000 / 1001000 = 2395.2 -> 2395.
    CHECK(g.s.lease_deadline() == kStart + 2395);
    // KeepAlives a third of that apart: 800 ms, not 12000 / 3.
    CHECK(g.s.next_timer_ms() == kStart + 800);
    g.at(kStart + 800);
    Outgoing ka = g.one();
    CHECK(is<wire::KeepAliveRequest>(ka));
    // Unanswered for a third of the lease (800 < the 1000 ms request timeout):
    // the next node, so that two more tries fit before the deadline.
    g.at(kStart + 1599);
    g.nothing_sent();
    g.at(kStart + 1600);
    Outgoing retry = g.one();
    CHECK(retry.node == 1);
    CHECK(is<wire::KeepAliveRequest>(retry));
    g.reply(retry, Group::ok_session(retry, 2400));
    CHECK(g.s.lease_deadline() == kStart + 1600 + 2395);
    CHECK(g.s.next_timer_ms() == kStart + 1600 + 800);
  }
  SECTION("a long lease keeps the usual request timeout") {
    LockSessionOptions o = options();
    o.session_lease_ms = 60000;
    Group g(o);
    Outgoing open = g.one();
    g.reply(open, Group::ok_session(open, 60000));
    CHECK(g.s.next_timer_ms() == kStart + 20000);
    g.at(kStart + 20000);
    CHECK(g.one().node == 0);
    g.at(kStart + 20999);
    g.nothing_sent();
    g.at(kStart + 21000);
    CHECK(g.one().node == 1);
  }
}

TEST_CASE("a lease the master refuses ends the session at once, saying why", "[lock_session]") {
  LockSessionOptions o = options();
  o.session_lease_ms = 700;
  Group g(o);
  Outgoing open = g.one();
  const uint64_t call = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  g.nothing_sent();  // waits for the session
  LockReply refused = Group::master_reply(open, Code::kBadRequest);
  refused.status =
      Status(Code::kBadRequest, "lease_ms 700 is outside the range this lock group allows, 1000 to 600000 ms");
  g.reply(open, refused);
  CHECK(g.s.state() == SessionState::kExpired);
  CHECK(g.s.take_events() == std::vector{SessionState::kExpired});
  CHECK(g.s.open_error().code() == Code::kBadRequest);
  CHECK(g.s.open_error().message() == refused.status.message());
  CallDone d = g.one_done();
  CHECK(d.call == call);
  CHECK(d.status.code() == Code::kNoSession);
  // Asking again would get the same answer: nothing more is sent.
  g.at(kStart + 60000);
  g.nothing_sent();
  CHECK(g.s.next_timer_ms() == LockSession::kNever);
}

TEST_CASE("every request names the cluster, and a node of another cluster ends the session at once",
          "[lock_session]") {
  const std::string id(16, '\xa1');
  LockSessionOptions o = options();
  o.cluster_id = id;
  Group g(o);
  Outgoing open = g.one();
  CHECK(open.request.cluster == id);
  const uint64_t call = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  LockReply refused = Group::master_reply(open, Code::kWrongCluster, 0);
  refused.status = Status(Code::kWrongCluster, "this daemon belongs to cluster b2, the request is for cluster a1");
  g.reply(open, refused);
  CHECK(g.s.state() == SessionState::kExpired);
  CHECK(g.s.take_events() == std::vector{SessionState::kExpired});
  CHECK(g.s.open_error().code() == Code::kWrongCluster);
  CHECK(g.s.open_error().message() == "tcp://n0:7000 is not a node of this cluster: " + refused.status.message());
  CallDone d = g.one_done();
  CHECK(d.call == call);
  CHECK(d.status.code() == Code::kWrongCluster);
  CHECK(d.status.message() == g.s.open_error().message());
  // Final: nothing is asked again, of that node or another.
  g.at(kStart + 60000);
  g.nothing_sent();
  CHECK(g.s.next_timer_ms() == LockSession::kNever);
}

TEST_CASE("a node of another cluster ends an open session and its calls", "[lock_session]") {
  LockSessionOptions o = options();
  o.cluster_id = std::string(16, '\xa1');
  Group g(o);
  g.open();
  const uint64_t call = g.s.acquire("x", LockMode::kExclusive, 0, 0, g.now);
  Outgoing acquire = g.one();
  CHECK(acquire.request.cluster == o.cluster_id);
  g.reply(acquire, Group::master_reply(acquire, Code::kWrongCluster, 0));
  CHECK(g.s.state() == SessionState::kExpired);
  CallDone d = g.one_done();
  CHECK(d.call == call);
  CHECK(d.status.code() == Code::kWrongCluster);
  CHECK(d.status.message().starts_with(kEndpoints[acquire.node] + " is not a node of this cluster: "));
  CHECK(g.s.open_error().is_ok());  // it had opened
}

// ---- Lease, against a LeaseClock the test sets ----

std::atomic<uint64_t> fake_now{0};
uint64_t fake_clock() { return fake_now.load(); }

TEST_CASE("a lease is valid while the session is safe, before its deadline, and not released", "[lease]") {
  auto clock = std::make_shared<LeaseClock>(&fake_clock);
  Lease lease("x", LockMode::kExclusive, 7, "ps2.seq", clock);
  Lease copy = lease;
  fake_now = 100;
  CHECK_FALSE(lease.valid());  // nothing published yet
  clock->publish(true, 1000);
  CHECK(lease.valid());
  CHECK(lease.remaining() == std::chrono::milliseconds(900));
  fake_now = 999;
  CHECK(lease.valid());
  fake_now = 1000;
  CHECK_FALSE(lease.valid());
  CHECK(lease.remaining() == std::chrono::milliseconds(0));
  fake_now = 500;
  clock->publish(false, 1000);  // jeopardy
  CHECK_FALSE(lease.valid());
  clock->publish(true, 2000);
  CHECK(copy.valid());
  clock->void_all();  // expired
  clock->publish(true, 3000);
  CHECK_FALSE(copy.valid());
  CHECK_FALSE(Lease().valid());
}

}  // namespace
}  // namespace palisade

namespace palisade {
namespace {

TEST_CASE("the session learns new members from session replies, and asks learnt ones that left no more",
          "[lock_session][members]") {
  Group g;
  g.open();
  CHECK(g.s.members_version() == 0);
  g.at(kStart + 4000);
  Outgoing ka = g.one();
  CHECK(body<wire::KeepAliveRequest>(ka).members_version == 0);
  // Nodes 0 and 2 were replaced by two new ones.
  const std::string key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  LockReply r = Group::ok_session(ka);
  r.members_version = 2;
  r.members = {{2, kEndpoints[1]}, {4, "tcp://n3:7000", key}, {5, "tcp://n4:7000"}};
  g.reply(ka, r);
  CHECK(g.s.members_version() == 2);
  CHECK(g.s.endpoints() ==
        std::vector<std::string>{kEndpoints[0], kEndpoints[1], kEndpoints[2], "tcp://n3:7000", "tcp://n4:7000"});
  CHECK(g.s.key_of(3) == key);
  CHECK(g.s.key_of(4).empty());
  // The next KeepAlive says what it knows.
  g.at(kStart + 8000);
  Outgoing next = g.one();
  CHECK(body<wire::KeepAliveRequest>(next).members_version == 2);
  // Node 4 leaves again: a learnt node the membership drops is asked no more.
  // The nodes the session was given stay in turn: their endpoints may be
  // other names (a proxy, a DNS name) for the addresses the group records.
  r = Group::ok_session(next);
  r.members_version = 3;
  r.members = {{2, kEndpoints[1]}, {4, "tcp://n3:7000", key}};
  g.reply(next, r);
  CHECK(g.s.members_version() == 3);
  g.at(kStart + 12000);
  Outgoing third = g.one();
  std::vector<size_t> asked{third.node};
  uint64_t t = kStart + 12000;
  for (int i = 0; i < 4; ++i) {
    t += 1000;
    g.at(t);
    asked.push_back(g.one().node);
  }
  CHECK(asked == std::vector<size_t>{0, 1, 2, 3, 0});
  // An older membership in a late reply changes nothing.
  LockReply old = Group::ok_session(next);
  old.members_version = 1;
  old.members = {{1, kEndpoints[0]}};
  g.reply(next, old);
  CHECK(g.s.members_version() == 3);
  CHECK(g.s.endpoints().size() == 5);
}

TEST_CASE("a not_master hint naming an address the session does not know is not followed there",
          "[lock_session][members]") {
  Group g;
  Outgoing open = g.one();
  LockReply r = Group::not_master(open, std::nullopt);
  r.master = 4;
  r.master_endpoint = "tcp://lockd-4.internal:7000";  // the group's name for a node this client reaches otherwise
  g.reply(open, r);
  CHECK(g.s.endpoints().size() == 3);
  g.at(kStart + 50);  // retry_backoff_ms
  Outgoing again = g.one();
  CHECK(again.node == 1);  // the next node it knows
}

}  // namespace
}  // namespace palisade
