// The lock service of palisade-lockd (lockgroup/lock_service.h) with its Paxos
// group: three services on simulated disks, peer messages delivered in order at
// once, one manual clock. Here: the session lease a client chooses (its range,
// what the replies report, and that a new master renews each session by its
// own length), and lock_status's pages. The simulator (tests/sim) covers the
// rest under faults.
#include "lockgroup/lock_service.h"

#include <catch2/catch.hpp>

#include <set>

#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth/config_certificate.h"
#include "lockgroup/memory_paxos_storage.h"
#include "tests/support/printers.h"

namespace palisade::lockgroup {
namespace {

constexpr uint64_t kDefaultLease = 12000;  // the cluster's session_lease_ms
constexpr uint64_t kHeartbeat = 600;       // so the shortest lease is 2 x 600 = 1200 ms
constexpr uint64_t kMasterLease = 4000;

struct Group {
  explicit Group(size_t snapshot_every = 10000, wire::ReplicaSet file_replicas = {})
      : snapshot_every(snapshot_every), file_replicas(std::move(file_replicas)) {
    for (NodeId id : members) {
      disks[id] = std::make_unique<MemoryPaxosStorage>();
      boot(id);
    }
  }

  LockServiceOptions options(NodeId id) {
    LockServiceOptions o;
    o.paxos = PaxosOptions{.self = id,
                           .members = members,
                           .group = 7,
                           .master_lease_ms = kMasterLease,
                           .heartbeat_ms = kHeartbeat,
                           .election_timeout_ms = 1000,
                           .max_drift_ppm = 1000,
                           .seed = 42 + id,
                           .incarnation = ++boots[id]};  // grows with every start, as the daemon's does
    for (NodeId m : members) o.endpoints[m] = "tcp://n" + std::to_string(m);
    o.group = "test";
    o.key = ClusterKey::from_hex(std::string(64, '5')).value();
    o.session_lease_ms = kDefaultLease;
    o.snapshot_every = snapshot_every;
    o.seed = id;
    o.file_replicas = file_replicas;
    return o;
  }

  void boot(NodeId id) {
    auto s = LockService::start(options(id), *disks[id], now);
    REQUIRE(s.is_ok());
    services[id] = std::move(s).value();
    turn(id);
  }
  // The process dies: what it did not sync is lost, and nobody hears from it.
  void crash(NodeId id) {
    disks[id]->crash();
    services.erase(id);
  }

  // The driver's contract: propose, commit, then send.
  void turn(NodeId id) {
    LockService& s = *services[id];
    s.flush(now);
    for (auto& m : s.take_early_peer_messages()) net.push_back(std::move(m));
    REQUIRE(disks[id]->commit().is_ok());
    s.synced(now);
    for (auto& m : s.take_early_peer_messages()) net.push_back(std::move(m));
    for (auto& m : s.take_peer_messages()) net.push_back(std::move(m));
    for (auto& r : s.take_replies()) replies[r.reply.id] = std::move(r.reply);
  }
  void deliver() {
    while (!net.empty()) {
      PeerMessage m = std::move(net.front());
      net.pop_front();
      if (services.count(m.to) == 0 || services.count(m.from) == 0) continue;
      if (cut.count(m.to) != 0 || cut.count(m.from) != 0) continue;
      // A node may refuse a message (it then changes nothing): the tests judge state.
      (void)services[m.to]->on_peer(m, now);
      turn(m.to);
    }
  }
  // Advances the clock in 10 ms steps, ticking every node.
  void run(uint64_t ms) {
    for (uint64_t end = now + ms; now < end;) {
      now += 10;
      for (auto& [id, s] : services) {
        s->tick(now);
        turn(id);
      }
      deliver();
    }
  }
  std::set<NodeId> cut;  // nodes the network does not reach, nor hear from
  std::optional<NodeId> master() const {
    for (const auto& [id, s] : services) {
      if (s->is_master(now)) return id;
    }
    return std::nullopt;
  }
  // Runs until some node is master; returns it.
  NodeId elect() {
    for (int i = 0; i < 2000 && !master(); ++i) run(10);
    REQUIRE(master());
    return *master();
  }

  // Sends a request to `node`; its id (the reply lands in `replies`).
  uint64_t send(NodeId node, wire::LockRequestBody body) {
    const uint64_t id = next_id++;
    services[node]->on_request({.route = 1, .request = {id, std::move(body)}}, now);
    turn(node);
    deliver();
    return id;
  }
  // Sends a request to `node` and runs until it is answered.
  wire::LockReply call(NodeId node, wire::LockRequestBody body) {
    const uint64_t id = send(node, std::move(body));
    for (int i = 0; i < 100 && replies.count(id) == 0; ++i) run(10);
    REQUIRE(replies.count(id) == 1);
    return replies[id];
  }
  uint64_t epoch(NodeId node) const { return services.at(node)->node().epoch(); }
  wire::LockReply open(NodeId node, uint64_t lease_ms) {
    return call(node, wire::OpenSessionRequest{.epoch = epoch(node), .lease_ms = lease_ms});
  }
  wire::LockReply keep_alive(NodeId node, uint64_t session) {
    return call(node, wire::KeepAliveRequest{.epoch = epoch(node), .session = session});
  }
  // An exclusive acquire of `lock` as node `node`'s epoch has it.
  wire::AcquireRequest acquire(NodeId node, uint64_t session, std::string lock, uint64_t call,
                               uint64_t lock_delay_ms = 0, uint64_t wait_ms = 0) const {
    return wire::AcquireRequest{.epoch = epoch(node),
                                .session = session,
                                .lock = std::move(lock),
                                .mode = LockMode::kExclusive,
                                .lock_delay_ms = lock_delay_ms,
                                .wait_ms = wait_ms,
                                .call = call};
  }

  size_t snapshot_every;
  wire::ReplicaSet file_replicas;  // LockServiceOptions::file_replicas of every node
  std::vector<NodeId> members = {1, 2, 3};
  std::map<NodeId, std::unique_ptr<MemoryPaxosStorage>> disks;
  std::map<NodeId, uint64_t> boots;  // starts of each node: its incarnation
  std::map<NodeId, std::unique_ptr<LockService>> services;
  std::deque<PeerMessage> net;
  std::map<uint64_t, wire::LockReply> replies;  // by request id
  uint64_t now = 0;
  uint64_t next_id = 1;
};

TEST_CASE("lock service: a session lease out of range is refused, naming the range", "[lock_service]") {
  Group g;
  const NodeId m = g.elect();
  const std::string range = "1200 to 600000 ms";  // max(1000, 2 x heartbeat 600) to 10 min
  for (uint64_t lease : {uint64_t{1}, uint64_t{999}, uint64_t{1000}, uint64_t{1199}, wire::kMaxSessionLeaseMs + 1,
                         UINT64_MAX}) {
    INFO("lease_ms " << lease);
    wire::LockReply r = g.open(m, lease);
    CHECK(r.status.code() == Code::kBadRequest);
    CHECK(r.status.message() == "lease_ms " + std::to_string(lease) +
                                    " is outside the range this lock group allows, " + range);
    CHECK(r.session == 0);
  }
  CHECK(g.services[m]->table().sessions().empty());
  // The bounds themselves are fine.
  for (uint64_t lease : {uint64_t{1200}, wire::kMaxSessionLeaseMs}) {
    wire::LockReply r = g.open(m, lease);
    REQUIRE(r.status.is_ok());
    CHECK(r.lease_ms == lease);
  }
}

TEST_CASE("lock service: replies report the session's own lease", "[lock_service]") {
  Group g;
  const NodeId m = g.elect();
  wire::LockReply own = g.open(m, 30000);
  wire::LockReply dflt = g.open(m, 0);
  REQUIRE(own.status.is_ok());
  REQUIRE(dflt.status.is_ok());
  CHECK(own.lease_ms == 30000);
  CHECK(dflt.lease_ms == kDefaultLease);
  // Replicated: every node's table knows each session's choice.
  for (const auto& [id, s] : g.services) {
    CHECK(s->table().session_lease_ms(own.session) == 30000);
    CHECK(s->table().session_lease_ms(dflt.session) == 0);
  }

  g.run(5000);
  CHECK(g.keep_alive(m, own.session).lease_ms == 30000);
  CHECK(g.keep_alive(m, dflt.session).lease_ms == kDefaultLease);

  // A grant reports what is left of the session's lease: more than the default
  // for the long session, right after its KeepAlive.
  g.run(100);
  wire::LockReply grant = g.call(m, g.acquire(m, own.session, "x", 1));
  REQUIRE(grant.status.is_ok());
  CHECK(grant.lease_ms > kDefaultLease);
  CHECK(grant.lease_ms <= 30000 - 100);

  // The long session outlives the default one without KeepAlives.
  g.run(kDefaultLease + 200);
  CHECK_FALSE(g.services[m]->table().has_session(dflt.session));
  CHECK(g.services[m]->table().has_session(own.session));
  CHECK(g.keep_alive(m, dflt.session).status.code() == Code::kNoSession);
  CHECK(g.keep_alive(m, own.session).status.is_ok());
}

TEST_CASE("lock service: a release or close after the session's deadline waits for its expiry", "[lock_service]") {
  const bool close = GENERATE(false, true);
  INFO((close ? "close_session" : "release"));
  Group g;
  const NodeId m = g.elect();
  wire::LockReply holder = g.open(m, 1200);
  wire::LockReply other = g.open(m, 0);
  REQUIRE(holder.status.is_ok());
  REQUIRE(other.status.is_ok());
  auto acquire = [&](uint64_t session, uint64_t call) { return g.call(m, g.acquire(m, session, "x", call, 5000)); };
  wire::LockReply grant = acquire(holder.session, 1);
  REQUIRE(grant.status.is_ok());
  // The master's deadline for the session is grant.lease_ms from now. Tick up
  // to just before it, then let the request arrive at the deadline, before any
  // tick has proposed the expiry.
  const uint64_t deadline = g.now + grant.lease_ms;
  g.run(grant.lease_ms - 20);
  REQUIRE(g.now < deadline);
  REQUIRE(g.services[m]->table().has_session(holder.session));
  g.now = deadline;
  REQUIRE(g.master() == m);
  wire::LockReply late = close ? g.call(m, wire::CloseSessionRequest{.epoch = g.epoch(m), .session = holder.session})
                               : g.call(m, wire::ReleaseRequest{.epoch = g.epoch(m),
                                                                .session = holder.session,
                                                                .lock = "x",
                                                                .call = 2});
  CHECK(late.status.code() == Code::kNoSession);
  // The expiry frees the lock, with its lock-delay.
  g.run(100);
  CHECK_FALSE(g.services[m]->table().has_session(holder.session));
  const LockState* x = g.services[m]->table().lock("x");
  REQUIRE(x != nullptr);
  CHECK(x->holders.empty());
  CHECK(x->delay_ms == 5000);
  CHECK(acquire(other.session, 1).status.code() == Code::kBusy);
}

TEST_CASE("lock service: a repeated acquire of a queued session keeps the first wait's end", "[lock_service]") {
  Group g;
  const NodeId m = g.elect();
  wire::LockReply holder = g.open(m, 0);
  wire::LockReply waiter = g.open(m, 0);
  auto acquire = [&](uint64_t session, uint64_t wait_ms, uint64_t call) {
    return g.acquire(m, session, "x", call, 0, wait_ms);
  };
  auto send = [&](wire::LockRequestBody body) { return g.send(m, std::move(body)); };
  REQUIRE(g.call(m, acquire(holder.session, 0, 1)).status.is_ok());
  // Queued with a 1 s wait, then the same call again half-way (a retry).
  const uint64_t start = g.now;
  send(acquire(waiter.session, 1000, 1));
  g.run(500);
  const uint64_t retry = send(acquire(waiter.session, 1000, 1));
  g.run(600);
  REQUIRE(g.replies.count(retry) == 1);
  CHECK(g.replies[retry].status.code() == Code::kTimeout);
  CHECK(g.now - start < 1200);
  // A new wait of 5 s is not cut short by a timer the retry left behind.
  const uint64_t again = send(acquire(waiter.session, 5000, 2));
  g.run(1000);
  CHECK(g.replies.count(again) == 0);
  g.run(4200);
  REQUIRE(g.replies.count(again) == 1);
  CHECK(g.replies[again].status.code() == Code::kTimeout);
}

TEST_CASE("lock service: an acquire repeated after its wait ran out is answered timeout again", "[lock_service]") {
  Group g;
  const NodeId m = g.elect();
  wire::LockReply holder = g.open(m, 0);
  wire::LockReply waiter = g.open(m, 0);
  REQUIRE(g.call(m, g.acquire(m, holder.session, "x", 1)).status.is_ok());
  const wire::AcquireRequest waiting = g.acquire(m, waiter.session, "x", 7, 0, 300);
  REQUIRE(g.call(m, waiting).status.code() == Code::kTimeout);
  // The first answer was lost, say: the client sends the same call again.
  wire::LockReply again = g.call(m, waiting);
  CHECK(again.status.code() == Code::kTimeout);
  CHECK(again.status.message() == "the wait for 'x' ran out");
  // A call older than one applied is still stale.
  REQUIRE(g.call(m, g.acquire(m, waiter.session, "x", 8)).status.code() == Code::kBusy);
  CHECK(g.call(m, waiting).status.code() == Code::kStale);
}

// Simulator seed 1739: a waiter woken by the holder's release, then released
// by its own release in the same batch, had its next acquire answered with
// the grant it had just released, while the next waiter held the lock.
TEST_CASE("lock service: a grant released again in its own batch answers no later acquire", "[lock_service]") {
  Group g;
  const NodeId m = g.elect();
  const uint64_t holder = g.open(m, 0).session;
  const uint64_t waiter = g.open(m, 0).session;
  const uint64_t next = g.open(m, 0).session;
  REQUIRE(g.call(m, g.acquire(m, holder, "x", 1)).status.is_ok());
  g.send(m, g.acquire(m, waiter, "x", 1, 0, 20000));
  const uint64_t next_wait = g.send(m, g.acquire(m, next, "x", 1, 0, 20000));
  // One batch: the holder releases (the waiter is woken), the waiter releases
  // (the next one is woken) and acquires again, with a wait.
  auto request = [&](wire::LockRequestBody body) {
    const uint64_t id = g.next_id++;
    g.services[m]->on_request({.route = 1, .request = {id, std::move(body)}}, g.now);
    return id;
  };
  request(wire::ReleaseRequest{.epoch = g.epoch(m), .session = holder, .lock = "x", .call = 2});
  request(wire::ReleaseRequest{.epoch = g.epoch(m), .session = waiter, .lock = "x", .call = 2});
  const uint64_t again = request(g.acquire(m, waiter, "x", 3, 0, 20000));
  g.turn(m);
  g.deliver();
  g.run(1000);
  REQUIRE(g.replies.count(next_wait) == 1);
  REQUIRE(g.replies[next_wait].status.is_ok());
  const uint64_t next_token = g.replies[next_wait].token;
  const LockState* x = g.services[m]->table().lock("x");
  REQUIRE(x != nullptr);
  CHECK(x->holders.count(next) == 1);
  // The waiter's new acquire waits behind the next holder: no answer yet,
  // above all not the grant it released.
  INFO("the waiter's acquire was answered " << (g.replies.count(again) ? g.replies[again].status.to_string() : "")
                                            << " token " << (g.replies.count(again) ? g.replies[again].token : 0));
  CHECK(g.replies.count(again) == 0);
  REQUIRE(g.call(m, wire::ReleaseRequest{.epoch = g.epoch(m), .session = next, .lock = "x", .call = 2}).status.is_ok());
  g.run(1000);
  REQUIRE(g.replies.count(again) == 1);
  CHECK(g.replies[again].status.is_ok());
  CHECK(g.replies[again].token > next_token);
}

TEST_CASE("lock service: a new master renews each session by its own lease", "[lock_service]") {
  Group g;
  const NodeId old_master = g.elect();
  wire::LockReply shortest = g.open(old_master, 2000);
  wire::LockReply dflt = g.open(old_master, 0);
  wire::LockReply longest = g.open(old_master, 40000);
  for (const auto* r : {&shortest, &dflt, &longest}) REQUIRE(r->status.is_ok());

  g.crash(old_master);
  // Runs until another node is master, noting when it took over.
  for (int i = 0; i < 2000 && !g.master(); ++i) g.run(10);
  REQUIRE(g.master());
  const NodeId m = *g.master();
  const uint64_t took_over = g.now;
  REQUIRE(m != old_master);
  const LockTable& table = g.services[m]->table();
  REQUIRE(table.sessions().size() == 3);

  // The KeepAlive reply names the session's own lease, also at the new master.
  CHECK(g.keep_alive(m, longest.session).lease_ms == 40000);

  // Each session expires its own lease after the takeover (plus a little for
  // the expiry to be chosen), not the cluster's default.
  g.run(took_over + 2000 + 200 - g.now);
  CHECK_FALSE(table.has_session(shortest.session));
  CHECK(table.has_session(dflt.session));
  g.run(took_over + kDefaultLease - 200 - g.now);
  CHECK(table.has_session(dflt.session));
  g.run(400);
  CHECK_FALSE(table.has_session(dflt.session));
  CHECK(table.has_session(longest.session));
}

TEST_CASE("lock service: every node's table holds the epoch of the master that took over last", "[lock_service]") {
  Group g;
  const NodeId first = g.elect();
  g.run(1000);  // the followers learn the master's first slot with its heartbeats
  const uint64_t first_epoch = g.epoch(first);
  for (const auto& [node, s] : g.services) CHECK(s->table().epoch() == first_epoch);
  g.crash(first);
  for (int i = 0; i < 2000 && !g.master(); ++i) g.run(10);
  REQUIRE(g.master());
  const NodeId second = *g.master();
  g.run(1000);
  CHECK(g.epoch(second) > first_epoch);
  for (const auto& [node, s] : g.services) CHECK(s->table().epoch() == g.epoch(second));
}

TEST_CASE("lock service: a master's command is pending until the log chose and applied it", "[lock_service]") {
  Group g;
  const NodeId m = g.elect();
  g.run(100);
  REQUIRE(g.services[m]->pending_commands() == 0);
  const uint64_t id = g.next_id++;
  g.services[m]->on_request({.route = 1, .request = {id, wire::OpenSessionRequest{.epoch = g.epoch(m)}}}, g.now);
  CHECK(g.services[m]->pending_commands() == 1);
  g.turn(m);  // proposed and synced here; the peers have not accepted it yet
  CHECK(g.services[m]->pending_commands() == 1);
  g.deliver();
  CHECK(g.replies.count(id) == 1);
  CHECK(g.services[m]->pending_commands() == 0);
  for (const auto& [node, s] : g.services) CHECK(s->pending_commands() == 0);
}

TEST_CASE("lock service: current_grant tells the master's grant of a lock, and nothing while it is free",
          "[lock_service]") {
  Group g;
  const NodeId master = g.elect();
  const uint64_t session = g.open(master, 0).session;
  auto grant_of = [&](NodeId node, const std::string& lock) {
    return g.call(node, wire::CurrentGrantRequest{.lock = lock});
  };
  // Never granted: ok, no token.
  wire::LockReply never = grant_of(master, "leader");
  REQUIRE(never.status.is_ok());
  CHECK(never.token == 0);

  const wire::LockReply granted = g.call(master, g.acquire(master, session, "leader", 1, /*lock_delay_ms=*/2000));
  REQUIRE(granted.status.is_ok());
  wire::LockReply held = grant_of(master, "leader");
  REQUIRE(held.status.is_ok());
  CHECK(held.token == granted.token);
  CHECK(held.mode == LockMode::kExclusive);
  // A follower's table may lag: only the master answers.
  const NodeId follower = master == 1 ? 2 : 1;
  CHECK(grant_of(follower, "leader").status.code() == Code::kNotMaster);

  // Released: free again, no token.
  REQUIRE(
      g.call(master, wire::ReleaseRequest{.epoch = g.epoch(master), .session = session, .lock = "leader", .call = 2})
          .status.is_ok());
  CHECK(grant_of(master, "leader").token == 0);

  // Shared: the grant's token and mode.
  const wire::LockReply shared = g.call(master, wire::AcquireRequest{.epoch = g.epoch(master),
                                                                     .session = session,
                                                                     .lock = "config",
                                                                     .mode = LockMode::kShared,
                                                                     .call = 3});
  REQUIRE(shared.status.is_ok());
  held = grant_of(master, "config");
  CHECK(held.token == shared.token);
  CHECK(held.mode == LockMode::kShared);

  // Its holder's session expired while holding it with lock-delay: free (in
  // lock-delay), so no token.
  const uint64_t other = g.open(master, 0).session;
  REQUIRE(g.call(master, g.acquire(master, other, "delayed", 1, /*lock_delay_ms=*/60000)).status.is_ok());
  for (int i = 0; i < 100 && g.services[master]->table().has_session(other); ++i) {
    g.run(kDefaultLease / 10);
    (void)g.keep_alive(master, session);
  }
  REQUIRE_FALSE(g.services[master]->table().has_session(other));
  REQUIRE(g.services[master]->table().lock("delayed") != nullptr);
  CHECK(grant_of(master, "delayed").token == 0);
}

TEST_CASE("lock service: lock_status lists every lock by name in pages", "[lock_service]") {
  Group g;
  const NodeId m = g.elect();
  wire::LockReply session = g.open(m, wire::kMaxSessionLeaseMs);
  REQUIRE(session.status.is_ok());
  const size_t count = wire::kMaxStatusLocks + 5;
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "lock/%04zu", i);
    names.emplace_back(name);
    wire::LockReply grant = g.call(m, g.acquire(m, session.session, name, i + 1));
    REQUIRE(grant.status.is_ok());
  }
  auto page = [&](std::string after) {
    wire::LockReply r = g.call(m, wire::LockStatusRequest{std::move(after)});
    REQUIRE(r.status.is_ok());
    std::vector<std::string> listed;
    for (const wire::LockInfo& l : r.locks) listed.push_back(l.name);
    return listed;
  };

  const std::vector<std::string> first = page("");
  REQUIRE(first.size() == wire::kMaxStatusLocks);
  CHECK(first == std::vector<std::string>(names.begin(), names.begin() + wire::kMaxStatusLocks));
  // The rest, after the last name listed.
  CHECK(page(first.back()) == std::vector<std::string>(names.begin() + wire::kMaxStatusLocks, names.end()));
  // After any string: the names that sort after it, whether or not it names a lock.
  CHECK(page("lock/1002") == std::vector<std::string>{"lock/1003", "lock/1004"});
  CHECK(page("lock/1002x") == std::vector<std::string>{"lock/1003", "lock/1004"});
  CHECK(page("lock/1004").empty());
  CHECK(page("m").empty());
}

}  // namespace
}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

namespace {

// A group whose master granted three locks: the grant counter is 3 everywhere.
struct GrantedGroup : Group {
  GrantedGroup() {
    m = elect();
    f = m == 1 ? 2 : 1;
    uint64_t session = open(m, 0).session;
    for (int i = 0; i < 3; ++i) REQUIRE(call(m, acquire(m, session, "l" + std::to_string(i), 1)).status.is_ok());
    run(1000);
    REQUIRE(services[f]->table().grant_counter() == 3);
  }
  Status to_follower(PeerBody body) {
    Status s = services[f]->on_peer({.from = m, .to = f, .group = 7, .body = std::move(body)}, now);
    turn(f);
    return s;
  }
  NodeId m = 0, f = 0;
};

}  // namespace

TEST_CASE("lock service: a catch-up snapshot that lowers the grant counter is refused", "[lock_service][guards]") {
  // Issue #23: a forged catch-up with an empty table at slot 1000 reset the
  // follower's counter to 0, and as master it granted token 1 again.
  GrantedGroup g;
  const Slot applied = g.services[g.f]->node().applied_through();
  Status s = g.to_follower(CatchUp{.snapshot_slot = applied + 1000, .snapshot = LockTable().snapshot()});
  CHECK(s.code() == Code::kBadRequest);
  CHECK(g.services[g.f]->node().applied_through() == applied);
  CHECK(g.services[g.f]->table().grant_counter() == 3);
  CHECK(g.disks[g.f]->committed().snapshot_slot < applied + 1000);
}

TEST_CASE("lock service: a catch-up snapshot that does not restore is refused, not fatal", "[lock_service][guards]") {
  GrantedGroup g;
  const Slot applied = g.services[g.f]->node().applied_through();
  Status s = g.to_follower(CatchUp{.snapshot_slot = applied + 5, .snapshot = "not a snapshot"});
  CHECK(s.code() == Code::kBadRequest);
  CHECK(g.services[g.f]->node().applied_through() == applied);
  CHECK(g.disks[g.f]->committed().snapshot_slot == 0);
}

TEST_CASE("lock service: values that are not batches are refused, not fatal", "[lock_service][guards]") {
  GrantedGroup g;
  const Slot next = g.services[g.f]->node().applied_through() + 1;
  const Ballot b = g.epoch(g.m);
  const Entry bad{.slot = next, .ballot = b, .value = "\x01garbage"};
  // Chosen at once: before the check, applying it aborted the follower.
  CHECK(g.to_follower(Accept{.ballot = b, .seq = 1, .chosen_through = next, .entries = {bad}}).code() ==
        Code::kBadRequest);
  CHECK(g.to_follower(CatchUp{.chosen = {bad}}).code() == Code::kBadRequest);
  CHECK(g.to_follower(Promise{.ballot = b, .ok = true, .promised = b, .accepted = {bad}}).code() ==
        Code::kBadRequest);
  CHECK(g.services[g.f]->node().applied_through() == next - 1);
  CHECK_FALSE(g.services[g.f]->node().log().count(next));
  // The group goes on granting, with the next token.
  uint64_t session = g.open(g.m, 0).session;
  auto granted = g.call(g.m, g.acquire(g.m, session, "after", 1));
  REQUIRE(granted.status.is_ok());
  CHECK(granted.token == 4);
}

TEST_CASE("lock service: a genuine catch-up snapshot still installs", "[lock_service][guards]") {
  GrantedGroup g;
  LockTable ahead;
  REQUIRE(ahead.restore(g.services[g.m]->table().snapshot()).is_ok());
  const Slot applied = g.services[g.f]->node().applied_through();
  CHECK(g.to_follower(CatchUp{.snapshot_slot = applied + 2, .snapshot = ahead.snapshot()}).is_ok());
  CHECK(g.services[g.f]->node().applied_through() == applied + 2);
}

}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

TEST_CASE("lock service: followers compact their logs too", "[lock_service]") {
  constexpr size_t kEvery = 10;
  Group g(kEvery);
  const NodeId m = g.elect();
  uint64_t session = g.open(m, 0).session;
  for (uint64_t call = 1; call <= 40; ++call) {
    REQUIRE(g.call(m, g.acquire(m, session, "l" + std::to_string(call), call)).status.is_ok());
  }
  g.run(1000);
  for (NodeId id : g.members) {
    INFO("node " << id << (id == m ? " (master)" : " (follower)"));
    const PaxosNode& node = g.services[id]->node();
    REQUIRE(node.applied_through() > 4 * kEvery);
    CHECK(node.snapshot_slot() + kEvery > node.applied_through());
    CHECK(g.disks[id]->committed().snapshot_slot == node.snapshot_slot());
    CHECK(g.disks[id]->committed().accepted.size() <= kEvery + 4);
    // The snapshot is the table as applied through its slot.
    LockTable restored;
    REQUIRE(restored.restore(g.disks[id]->committed().snapshot).is_ok());
    CHECK(restored.grant_counter() > 0);
  }
}

}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

TEST_CASE("lock service: the master reports grants, releases, closes and expiries, and followers nothing",
          "[lock_service][logs]") {
  Group g;
  const NodeId m = g.elect();
  const uint64_t a = g.open(m, 1200).session;
  const uint64_t b = g.open(m, 0).session;
  REQUIRE(g.call(m, g.acquire(m, a, "x", 1, 5000)).status.is_ok());
  REQUIRE(g.call(m, g.acquire(m, a, "y", 1)).status.is_ok());
  REQUIRE(g.call(m, g.acquire(m, a, "x", 2)).token == 1);  // a retry: the grant it holds
  const wire::LockReply by_b = g.call(m, g.acquire(m, b, "z", 1));
  REQUIRE(by_b.status.is_ok());
  REQUIRE(g.call(m, wire::ReleaseRequest{.epoch = g.epoch(m), .session = b, .lock = "z", .call = 2}).released);
  // A release of a lock not held reports nothing.
  REQUIRE_FALSE(g.call(m, wire::ReleaseRequest{.epoch = g.epoch(m), .session = b, .lock = "z", .call = 3}).released);
  for (const auto& [id, s] : g.services) {
    if (id != m) CHECK(s->take_events().empty());
  }
  std::vector<LockEvent> events = g.services[m]->take_events();
  // Session a's lease (1.2 s) runs out: its expiry frees x and y.
  for (int i = 0; i < 30; ++i) {
    g.keep_alive(m, b);
    g.run(100);
  }
  REQUIRE(g.call(m, wire::CloseSessionRequest{.epoch = g.epoch(m), .session = b}).status.is_ok());
  for (LockEvent& e : g.services[m]->take_events()) events.push_back(std::move(e));
  const std::vector<LockEvent> want = {
      {.kind = LockEvent::Kind::kGranted, .session = a, .lock = "x", .token = 1},
      {.kind = LockEvent::Kind::kGranted, .session = a, .lock = "y", .token = 2},
      {.kind = LockEvent::Kind::kGranted, .session = a, .lock = "x", .token = 1, .again = true},
      {.kind = LockEvent::Kind::kGranted, .session = b, .lock = "z", .token = by_b.token},
      {.kind = LockEvent::Kind::kReleased, .session = b, .lock = "z"},
      {.kind = LockEvent::Kind::kExpired, .session = a, .locks = {"x", "y"}},
      {.kind = LockEvent::Kind::kClosed, .session = b},
  };
  CHECK(events == want);
  CHECK(describe(events[0]) == "granted lock 'x' exclusive to session " + std::to_string(a) + ", token 1");
  CHECK(describe(events[2]) == "granted lock 'x' exclusive to session " + std::to_string(a) + " again, token 1");
  CHECK(describe(events[4]) == "released lock 'z' by session " + std::to_string(b));
  CHECK(describe(events[5]) ==
        "session " + std::to_string(a) + " expired, releasing 2 locks: 'x', 'y' (with their lock-delays)");
  CHECK(describe(events[6]) == "session " + std::to_string(b) + " closed, releasing 0 locks");
}

TEST_CASE("lock events: lock names cannot break or fake a log line, and long lists are counted",
          "[lock_service][logs]") {
  LockEvent shared{.kind = LockEvent::Kind::kGranted, .session = 3, .lock = "a\nb'c\\\x7f\xff", .mode = LockMode::kShared,
                   .token = 9};
  CHECK(describe(shared) == "granted lock 'a\\x0ab\\x27c\\x5c\\x7f\\xff' shared to session 3, token 9");
  LockEvent many{.kind = LockEvent::Kind::kClosed, .session = 4};
  for (int i = 0; i < 10; ++i) many.locks.push_back("l" + std::to_string(i));
  CHECK(describe(many) ==
        "session 4 closed, releasing 10 locks: 'l0', 'l1', 'l2', 'l3', 'l4', 'l5', 'l6', 'l7' and 2 more");
  LockEvent one{.kind = LockEvent::Kind::kExpired, .session = 5, .locks = {"only"}};
  CHECK(describe(one) == "session 5 expired, releasing 1 lock: 'only' (with their lock-delays)");
}

TEST_CASE("lock service: a master that hands over answers not_master, and a follower leads at once, locks kept",
          "[lock_service][step_down]") {
  Group g;
  const NodeId m = g.elect();
  const uint64_t a = g.open(m, 0).session;
  const uint64_t b = g.open(m, 0).session;
  const wire::LockReply held = g.call(m, g.acquire(m, a, "x", 1));
  REQUIRE(held.status.is_ok());
  g.run(1000);
  const uint64_t lease_end = g.services[m]->node().master_lease_until();
  // An acquire batched but not proposed yet when the stop comes.
  const uint64_t id = g.next_id++;
  g.services[m]->on_request({.route = 1, .request = {id, g.acquire(m, b, "y", 1)}}, g.now);
  CHECK_FALSE(g.services[g.members[0] == m ? g.members[1] : g.members[0]]->hand_over(g.now));  // a follower
  REQUIRE(g.services[m]->hand_over(g.now));
  CHECK_FALSE(g.services[m]->is_master(g.now));
  g.turn(m);
  REQUIRE(g.replies.count(id) == 1);
  CHECK(g.replies[id].status.code() == Code::kNotMaster);
  g.deliver();  // no time passes: the successor campaigns on the step-down
  REQUIRE(g.master());
  const NodeId next = *g.master();
  CHECK(next != m);
  CHECK(g.now < lease_end);
  // Sessions and holds carry over; the lock is not granted to anyone else.
  CHECK(g.keep_alive(next, a).status.is_ok());
  CHECK(g.call(next, g.acquire(next, b, "x", 2)).status.code() == Code::kBusy);
  const wire::LockReply again = g.call(next, g.acquire(next, a, "x", 1));
  REQUIRE(again.status.is_ok());
  CHECK(again.token == held.token);
}

}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

TEST_CASE("lock service: a node restarts with the members the log last made, the first ones gone",
          "[lock_service][members]") {
  Group g;  // snapshots far apart: only a change of the members takes one early
  const NodeId m = g.elect();
  const uint64_t session = g.open(m, 0).session;
  REQUIRE(g.call(m, g.acquire(m, session, "x", 1)).status.is_ok());
  // The two others leave; `m` alone is the lock group.
  const wire::LockReply changed =
      g.call(m, wire::SetMembersRequest{.version = 0, .nodes = {{m, "tcp://n" + std::to_string(m)}}});
  REQUIRE(changed.status.is_ok());
  g.run(1000);
  // Every node down, and only `m` comes back: its first members (1, 2, 3)
  // would need another of them to elect anyone.
  for (NodeId id : g.members) g.crash(id);
  g.boot(m);
  CHECK(g.services[m]->node().members() == Members{m});
  CHECK(g.elect() == m);
  CHECK(g.services[m]->table().lock("x") != nullptr);
}

}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

TEST_CASE("lock service: session replies carry the members, with their keys, to a client that knows an older version",
          "[lock_service][members]") {
  Group g;
  const NodeId m = g.elect();
  const uint64_t session = g.open(m, 0).session;
  // No change yet: nothing to tell.
  CHECK(g.keep_alive(m, session).members.empty());
  const std::string key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  std::vector<wire::MemberInfo> members;
  for (NodeId id : g.members) members.push_back({id, "tcp://n" + std::to_string(id), id == m ? key : ""});
  REQUIRE(g.call(m, wire::SetMembersRequest{.version = 0, .nodes = members}).status.is_ok());
  // A client that knows no version, or an older one, learns them.
  for (uint64_t known : {0, 1}) {
    const wire::LockReply kept =
        g.call(m, wire::KeepAliveRequest{.epoch = g.epoch(m), .session = session, .members_version = known});
    REQUIRE(kept.status.is_ok());
    if (known == 1) {
      CHECK(kept.members.empty());  // it knows the current one
      continue;
    }
    CHECK(kept.members_version == 1);
    CHECK(kept.members == members);
  }
  const wire::LockReply opened = g.call(m, wire::OpenSessionRequest{.epoch = g.epoch(m)});
  REQUIRE(opened.status.is_ok());
  CHECK(opened.members == members);
  CHECK(g.call(m, wire::OpenSessionRequest{.epoch = g.epoch(m), .members_version = 1}).members.empty());
}

}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

// A change to the master and two nodes that never answer waits, staged, for
// their promises; it is never proposed.
wire::SetMembersRequest to_absent_nodes(NodeId master) {
  return {.version = 0, .nodes = {{master, "tcp://n" + std::to_string(master)}, {4, "tcp://n4"}, {5, "tcp://n5"}}};
}

TEST_CASE("lock service: a change whose new members never promise is refused as unavailable by a master that stays",
          "[lock_service][members]") {
  Group g;
  const NodeId m = g.elect();
  const uint64_t id = g.send(m, to_absent_nodes(m));
  g.run(2 * kMasterLease + 1000 - 100);
  CHECK(g.replies.count(id) == 0);  // still waiting for them
  g.run(200);
  REQUIRE(g.replies.count(id) == 1);
  CHECK(g.replies[id].status.code() == Code::kUnavailable);
  CHECK(g.replies[id].status.message() == "a majority of the new members did not answer the master");
  CHECK(g.master() == m);
  CHECK(g.services[m]->node().members() == g.members);
}

TEST_CASE("lock service: a staged change dropped because its master stepped down is answered not_master",
          "[lock_service][members]") {
  // So that the client asks the next master, as for any other request: the
  // change was never proposed, and it is not the new members that failed.
  Group g;
  const NodeId m = g.elect();
  const uint64_t id = g.send(m, to_absent_nodes(m));
  for (NodeId other : g.members) {
    if (other != m) g.crash(other);
  }
  for (int i = 0; i < 1000 && g.replies.count(id) == 0; ++i) g.run(10);
  REQUIRE(g.replies.count(id) == 1);
  CHECK(g.replies[id].status.code() == Code::kNotMaster);
  CHECK_FALSE(g.services[m]->is_master(g.now));
  CHECK(g.now < 2 * kMasterLease + 1000);  // before the change's own time ran out
}

}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

// Three replicas with W = R = 2, as set_replicas names them.
wire::SetReplicasRequest three_replicas(uint64_t version, std::string first = "tcp://r1:7200") {
  return {.version = version,
          .replicas = {{1, std::move(first)}, {2, "tcp://r2:7200"}, {3, "tcp://r3:7200"}},
          .write_quorum = 2,
          .read_quorum = 2};
}

// The record a reply's config certificate carries, checked with the group's public key.
wire::ReplicaSet certified(const wire::LockReply& reply) {
  const SequencerSigner signer(ClusterKey::from_hex(std::string(64, '5')).value(), "test");
  auto set = verify_config_certificate(signer.verifier(), reply.config);
  INFO(set.status().to_string());
  REQUIRE(set.is_ok());
  return std::move(set).value();
}

TEST_CASE("lock service: set_replicas records the replica set, and any node serves it signed",
          "[lock_service][replicaset]") {
  Group g;
  const NodeId m = g.elect();
  // None recorded yet: the cluster file's list stands, and there is nothing to sign.
  for (NodeId id : g.members) {
    const wire::LockReply none = g.call(id, wire::GetReplicasRequest{});
    CHECK(none.status.is_ok());
    CHECK(none.config.empty());
  }
  const wire::LockReply set = g.call(m, three_replicas(0));
  REQUIRE(set.status.is_ok());
  const wire::ReplicaSet want{.version = 1,
                              .phase = wire::ReplicaPhase::kServing,
                              .replicas = three_replicas(0).replicas,
                              .write_quorum = 2,
                              .read_quorum = 2};
  CHECK(certified(set) == want);
  g.run(1000);  // the followers apply it too
  for (NodeId id : g.members) {
    INFO("node " << id);
    const wire::LockReply read = g.call(id, wire::GetReplicasRequest{});
    REQUIRE(read.status.is_ok());
    CHECK(certified(read) == want);
  }
  // The next change replaces version 1.
  const wire::LockReply next = g.call(m, three_replicas(1, "tcp://r4:7200"));
  REQUIRE(next.status.is_ok());
  CHECK(certified(next).version == 2);
  CHECK(certified(next).replicas[0].address == "tcp://r4:7200");
}

TEST_CASE("lock service: before a set is recorded, every node serves the cluster file's list signed, version 0",
          "[lock_service][replicaset]") {
  const wire::ReplicaSet file{.replicas = three_replicas(0).replicas, .write_quorum = 2, .read_quorum = 2};
  Group g(10000, file);
  const NodeId m = g.elect();
  for (NodeId id : g.members) {
    INFO("node " << id);
    CHECK(certified(g.call(id, wire::GetReplicasRequest{})) == file);
  }
  // The first record replaces version 0, and is what every node serves then.
  REQUIRE(g.call(m, three_replicas(0, "tcp://r4:7200")).status.is_ok());
  g.run(1000);
  for (NodeId id : g.members) {
    INFO("node " << id);
    const wire::ReplicaSet served = certified(g.call(id, wire::GetReplicasRequest{}));
    CHECK(served.version == 1);
    CHECK(served.replicas[0].address == "tcp://r4:7200");
  }
}

TEST_CASE("lock service: set_replicas is refused stale over another version, and by a follower",
          "[lock_service][replicaset]") {
  Group g;
  const NodeId m = g.elect();
  REQUIRE(g.call(m, three_replicas(0)).status.is_ok());
  const uint64_t slot = g.services[m]->node().applied_through();
  const wire::LockReply stale = g.call(m, three_replicas(0, "tcp://other:7200"));
  CHECK(stale.status.code() == Code::kStale);
  CHECK_THAT(stale.status.message(), Catch::Contains("at version 1, not 0"));
  CHECK(g.services[m]->node().applied_through() == slot);  // refused before it took a slot
  CHECK(g.services[m]->table().replica_set().replicas[0].address == "tcp://r1:7200");
  const NodeId follower = m == 1 ? 2 : 1;
  const wire::LockReply refused = g.call(follower, three_replicas(1, "tcp://other:7200"));
  CHECK(refused.status.code() == Code::kNotMaster);
  CHECK(g.services[m]->table().replica_set().version == 1);
}

TEST_CASE("lock service: of two set_replicas of one version in one batch, the second is stale at apply time",
          "[lock_service][replicaset]") {
  Group g;
  const NodeId m = g.elect();
  // Both pass the master's check (the table is at version 0 when each arrives).
  g.services[m]->on_request({.route = 1, .request = {101, three_replicas(0, "tcp://a:7200")}}, g.now);
  g.services[m]->on_request({.route = 1, .request = {102, three_replicas(0, "tcp://b:7200")}}, g.now);
  g.turn(m);
  g.deliver();
  for (int i = 0; i < 100 && g.replies.size() < 2; ++i) g.run(10);
  REQUIRE(g.replies.count(101) == 1);
  REQUIRE(g.replies.count(102) == 1);
  CHECK(certified(g.replies[101]).replicas[0].address == "tcp://a:7200");
  CHECK(g.replies[102].status.code() == Code::kStale);
  CHECK(g.replies[102].config.empty());
  CHECK(g.services[m]->table().replica_set().replicas[0].address == "tcp://a:7200");
}

wire::SetReplicasRequest paused(wire::SetReplicasRequest r) {
  r.phase = wire::ReplicaPhase::kPaused;
  return r;
}

const uint64_t kPauseTimeout = LockServiceOptions{}.replica_pause_timeout_ms;

// A group whose replica set was recorded, then paused half a timeout ago; its master.
NodeId pause_half_a_timeout(Group& g) {
  const NodeId m = g.elect();
  REQUIRE(g.call(m, three_replicas(0)).status.is_ok());
  REQUIRE(g.call(m, paused(three_replicas(1))).status.is_ok());
  g.run(kPauseTimeout / 2);
  return m;
}

// Runs `g` until `node`'s replica set record serves again, or for two pause
// timeouts; returns when it began.
uint64_t run_until_serving(Group& g, NodeId node) {
  const uint64_t from = g.now;
  while (g.services[node]->table().replica_set().phase == wire::ReplicaPhase::kPaused &&
         g.now < from + 2 * kPauseTimeout) {
    g.run(100);
  }
  return from;
}

TEST_CASE("lock service: a pause the replacement does not end is ended by the master", "[lock_service][replicaset]") {
  Group g;
  const NodeId m = g.elect();
  REQUIRE(g.call(m, three_replicas(0)).status.is_ok());
  const wire::LockReply pause = g.call(m, paused(three_replicas(1)));
  REQUIRE(pause.status.is_ok());
  CHECK(certified(pause).phase == wire::ReplicaPhase::kPaused);
  g.run(kPauseTimeout - 1000);
  CHECK(g.services[m]->table().replica_set().version == 2);  // still paused
  CHECK(g.services[m]->table().replica_set().phase == wire::ReplicaPhase::kPaused);
  g.run(2000);
  const wire::ReplicaSet& after = g.services[m]->table().replica_set();
  CHECK(after.version == 3);  // once, not again and again
  CHECK(after.phase == wire::ReplicaPhase::kServing);
  CHECK(after.replicas == three_replicas(0).replicas);  // the same replicas
  g.run(kPauseTimeout);
  CHECK(g.services[m]->table().replica_set().version == 3);
}

TEST_CASE("lock service: a replacement that ends its pause in time is not undone", "[lock_service][replicaset]") {
  Group g;
  const NodeId m = pause_half_a_timeout(g);
  REQUIRE(g.call(m, three_replicas(2, "tcp://r4:7200")).status.is_ok());  // the new set, serving
  g.run(kPauseTimeout);
  const wire::ReplicaSet& after = g.services[m]->table().replica_set();
  CHECK(after.version == 3);
  CHECK(after.replicas[0].address == "tcp://r4:7200");
}

TEST_CASE("lock service: a new master times a pause from its own start", "[lock_service][replicaset]") {
  Group g;
  const NodeId m = pause_half_a_timeout(g);
  g.crash(m);
  const NodeId next = g.elect();
  REQUIRE(next != m);
  const uint64_t elected = run_until_serving(g, next);
  CHECK(g.services[next]->table().replica_set().phase == wire::ReplicaPhase::kServing);
  CHECK(g.services[next]->table().replica_set().version == 3);
  CHECK(g.now >= elected + kPauseTimeout);  // not sooner, though the pause began earlier
}

TEST_CASE("lock service: a master that lost its end of a pause ends it when it is master again",
          "[lock_service][replicaset]") {
  Group g;
  const NodeId m = pause_half_a_timeout(g);
  // Cut off just before its deadline: it proposes the end, which nobody
  // accepts, and another master takes the slot.
  g.run(kPauseTimeout / 2 - 1000);
  g.cut.insert(m);
  g.run(3 * kMasterLease);
  const NodeId other = g.elect();
  REQUIRE(other != m);
  CHECK(g.services[other]->table().replica_set().phase == wire::ReplicaPhase::kPaused);
  g.cut.clear();
  g.run(1000);
  // Masters that are not the first restart, long before they could time the
  // pause out, until the first is master again.
  NodeId again = other;
  for (int i = 0; i < 20 && again != m; ++i) {
    g.crash(again);
    g.boot(again);
    again = g.elect();
  }
  REQUIRE(again == m);
  run_until_serving(g, m);
  CHECK(g.services[m]->table().replica_set().phase == wire::ReplicaPhase::kServing);
  CHECK(g.services[m]->table().replica_set().version == 3);
}

}  // namespace palisade::lockgroup
