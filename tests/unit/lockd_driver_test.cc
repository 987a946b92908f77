// The palisade-lockd turn without sockets (lockgroup/lockd_driver.h): how a
// frame is told apart, and what a failed commit does. One node that is a
// group of its own, on a simulated disk. The simulator (tests/sim) runs the
// driver in groups under faults.
#include "lockgroup/lockd_driver.h"

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/cluster_id.h"
#include "lockgroup/memory_paxos_storage.h"
#include "lockgroup/paxos_messages.h"
#include "palisade/sequencer.h"
#include "tests/support/lone_lockd.h"
#include "tests/support/printers.h"

namespace palisade::lockgroup {
namespace {

struct Host : LockdHost {
  void send_peer(NodeId to, std::string bytes) override { peer_frames.emplace_back(to, std::move(bytes)); }
  void reply(uint64_t route, std::string bytes) override { replies[route] = std::move(bytes); }
  void forget_routes() override { ++forgotten; }
  void answered(uint64_t route, const wire::LockReply& reply) override {
    answered_before_reply[route] = replies.count(route) == 0 ? reply.status.code() : Code::kInternal;
  }
  uint64_t next_incarnation() override { return ++starts; }

  std::vector<std::pair<NodeId, std::string>> peer_frames;
  std::map<uint64_t, std::string> replies;
  std::map<uint64_t, Code> answered_before_reply;  // kInternal: answered() came after reply()
  int forgotten = 0;
  uint64_t starts = 0;
};

struct Node {
  explicit Node(LockdDriverOptions o = lone_lockd_options()) {
    auto d = LockdDriver::start(std::move(o), disk, host, now);
    REQUIRE(d.is_ok());
    driver = std::move(d).value();
  }
  // The daemon's turn after its input: timers, then both phases of the sync.
  void turn() {
    driver->tick(now);
    driver->begin_sync(now);
    REQUIRE(driver->finish_sync(now).is_ok());
  }
  void elect() {
    for (int i = 0; i < 500 && !driver->service().is_master(now); ++i) {
      now += 10;
      turn();
    }
    REQUIRE(driver->service().is_master(now));
  }
  FrameResult open_session(uint64_t id) {
    wire::LockRequest r{id, wire::OpenSessionRequest{.epoch = driver->service().node().epoch(), .lease_ms = 0}};
    return driver->on_frame(wire::encode_lock_request(r), now);
  }

  MemoryPaxosStorage disk;
  Host host;
  uint64_t now = 1000;
  std::unique_ptr<LockdDriver> driver;
};

TEST_CASE("lockd driver: a request is answered on its route after the sync", "[lockgroup]") {
  Node n;
  n.elect();
  const FrameResult r = n.open_session(5);
  REQUIRE(r.outcome == FrameOutcome::kRequest);
  CHECK(r.request_id == 5);
  CHECK(r.type == "open_session");
  for (int i = 0; i < 10 && n.host.replies.count(r.route) == 0; ++i) n.turn();
  REQUIRE(n.host.replies.count(r.route) == 1);
  CHECK(n.host.answered_before_reply == std::map<uint64_t, Code>{{r.route, Code::kOk}});
  auto reply = wire::decode_lock_reply(n.host.replies[r.route], size_t{1} << 20);
  REQUIRE(reply.is_ok());
  CHECK(reply.value().id == 5);
  CHECK(reply.value().status.is_ok());
}

TEST_CASE("lockd driver: forged peer frames are dropped, bad requests refused", "[lockgroup]") {
  Node n;
  n.elect();
  PeerMessage m;
  m.from = 2;
  m.to = 1;
  m.group = 7;
  m.body = Prepare{.ballot = make_ballot(9, 2), .from_slot = 1, .seq = 1};
  SECTION("no MAC") {
    CHECK(n.driver->on_frame(encode_peer(m), n.now).outcome == FrameOutcome::kForged);
    CHECK(n.driver->forged_peer_messages() == 1);
  }
  SECTION("sealed under another key") {
    PeerAuth other(ClusterKey::from_hex(std::string(64, '6')).value(), "test");
    CHECK(n.driver->on_frame(other.seal(m), n.now).outcome == FrameOutcome::kForged);
    CHECK(n.driver->forged_peer_messages() == 1);
  }
  SECTION("sealed, for another node") {
    PeerAuth ours(lone_lockd_options().service.key, "test");
    m.to = 3;
    CHECK(n.driver->on_frame(ours.seal(m), n.now).outcome == FrameOutcome::kPeerMisaddressed);
    CHECK(n.driver->refused_peer_messages() == 1);
  }
  SECTION("not a request") {
    const FrameResult r = n.driver->on_frame("\x81\xa1x\x01", n.now);
    REQUIRE(r.outcome == FrameOutcome::kRequestRefused);
    auto reply = wire::decode_lock_reply(r.refusal, size_t{1} << 20);
    REQUIRE(reply.is_ok());
    CHECK(reply.value().status.code() != Code::kOk);
    CHECK(reply.value().master == 1);
    CHECK(n.driver->forged_peer_messages() == 0);
    CHECK(r.refused_with == reply.value().status.code());
    CHECK(r.type.empty());
  }
  SECTION("more than one ZeroMQ frame") {
    wire::LockRequest r{3, wire::OpenSessionRequest{.epoch = n.driver->service().node().epoch(), .lease_ms = 0}};
    const FrameResult refused = n.driver->on_frame(wire::encode_lock_request(r), n.now, true);
    CHECK(refused.outcome == FrameOutcome::kRequestRefused);
    CHECK(refused.refused_with == Code::kMalformed);
  }
  SECTION("of another cluster") {
    wire::LockRequest r{3, wire::FindMasterRequest{}, std::string(kClusterIdBytes, 'w')};
    Node east([] {
      LockdDriverOptions o = lone_lockd_options();
      o.cluster_id = std::string(kClusterIdBytes, 'e');
      return o;
    }());
    const FrameResult refused = east.driver->on_frame(wire::encode_lock_request(r), east.now);
    CHECK(refused.outcome == FrameOutcome::kRequestRefused);
    CHECK(refused.refused_with == Code::kWrongCluster);
    CHECK(refused.type == "find_master");
  }
}

TEST_CASE("lockd driver: over CURVE a peer message is taken only from its from node's identity", "[lockgroup]") {
  LockdDriverOptions o = lone_lockd_options();
  o.peer_identities = {{1, "lockd-1"}, {2, "lockd-2"}};
  Node n(o);
  n.elect();
  PeerMessage m;
  m.from = 2;
  m.to = 1;
  m.group = 7;
  m.body = Prepare{.ballot = make_ballot(9, 2), .from_slot = 1, .seq = 1};
  const std::string sealed = PeerAuth(o.service.key, "test").seal(m);
  // A holder of the cluster key that is not node 2 (a client's host, say):
  // the MAC verifies, the sender does not.
  for (const char* sender : {"app", "lockd-1", ""}) {
    INFO("sender '" << sender << "'");
    CHECK(n.driver->on_frame(sealed, n.now, false, sender).outcome == FrameOutcome::kPeerImpostor);
  }
  CHECK(n.driver->refused_peer_messages() == 3);
  m.from = 5;  // a node the group does not know has no identity to send as
  CHECK(n.driver->on_frame(PeerAuth(o.service.key, "test").seal(m), n.now, false, "lockd-2").outcome ==
        FrameOutcome::kPeerImpostor);
  CHECK(n.driver->refused_peer_messages() == 4);
  CHECK(n.driver->on_frame(sealed, n.now, false, "lockd-2").outcome != FrameOutcome::kPeerImpostor);
}

// A request from identity `sender`, answered: its reply.
wire::LockReply call(Node& n, wire::LockRequestBody body, std::string_view sender, uint64_t id = 1) {
  const FrameResult r = n.driver->on_frame(wire::encode_lock_request({id, std::move(body)}), n.now, false, sender);
  std::string bytes = r.refusal;
  if (r.outcome == FrameOutcome::kRequest) {
    for (int i = 0; i < 10 && n.host.replies.count(r.route) == 0; ++i) n.turn();
    REQUIRE(n.host.replies.count(r.route) == 1);
    bytes = n.host.replies[r.route];
  }
  auto reply = wire::decode_lock_reply(bytes, size_t{1} << 20);
  REQUIRE(reply.is_ok());
  return reply.value();
}

TEST_CASE("lockd driver: over CURVE a session is its identity's, and acquires need a role", "[lockgroup][security]") {
  LockdDriverOptions o = lone_lockd_options();
  const Role jobs{.name = "jobs", .locks = {"jobs/*"}};
  o.permissions = Permissions({jobs}, {{"worker", {"jobs"}}, {"other", {"jobs"}}, {"ops", {"admin"}}});
  Node n(std::move(o));
  n.elect();
  const uint64_t epoch = n.driver->service().node().epoch();
  const wire::LockReply opened = call(n, wire::OpenSessionRequest{.epoch = epoch}, "worker");
  REQUIRE(opened.status.is_ok());
  const uint64_t session = opened.session;
  CHECK(n.driver->service().table().session_identity(session) == "worker");

  auto acquire = [&](std::string lock, std::string_view sender, uint64_t call_no) {
    return call(n, wire::AcquireRequest{.epoch = epoch, .session = session, .lock = std::move(lock), .call = call_no},
                sender);
  };
  // A lock outside its roles: refused before the log, nothing granted.
  const Token before = n.driver->service().table().grant_counter();
  CHECK(acquire("ledger", "worker", 1).status.code() == Code::kPermissionDenied);
  CHECK(n.driver->refused_requests() == 1);
  CHECK(n.driver->service().table().grant_counter() == before);
  CHECK(n.driver->service().table().lock("ledger") == nullptr);
  // Its own session, a lock its role covers: granted, and the sequencer names it.
  const wire::LockReply granted = acquire("jobs/1", "worker", 2);
  REQUIRE(granted.status.is_ok());
  auto sequencer = parse_sequencer(granted.sequencer);
  REQUIRE(sequencer.is_ok());
  CHECK(sequencer.value().identity == "worker");
  // Another identity that names the session: it may not keep it alive,
  // release its lock, take locks in it, or close it.
  CHECK(call(n, wire::KeepAliveRequest{.epoch = epoch, .session = session}, "other").status.code() ==
        Code::kPermissionDenied);
  CHECK(call(n, wire::ReleaseRequest{.epoch = epoch, .session = session, .lock = "jobs/1", .call = 3}, "other")
            .status.code() == Code::kPermissionDenied);
  CHECK(acquire("jobs/2", "other", 4).status.code() == Code::kPermissionDenied);
  CHECK(call(n, wire::CloseSessionRequest{.epoch = epoch, .session = session}, "other").status.code() ==
        Code::kPermissionDenied);
  CHECK(n.driver->service().table().has_session(session));
  CHECK(n.driver->service().table().lock("jobs/1")->holders.count(session) == 1);
  CHECK(n.driver->service().table().lock("jobs/2") == nullptr);

  // Status: holders by identity; a non-admin sees only what its sessions hold.
  const wire::LockReply other_open = call(n, wire::OpenSessionRequest{.epoch = epoch}, "other");
  REQUIRE(other_open.status.is_ok());
  REQUIRE(
      call(n, wire::AcquireRequest{.epoch = epoch, .session = other_open.session, .lock = "jobs/9", .call = 1}, "other")
          .status.is_ok());
  auto names = [](const wire::LockReply& r) {
    std::vector<std::string> out;
    for (const wire::LockInfo& l : r.locks) out.push_back(l.name);
    return out;
  };
  const wire::LockReply all = call(n, wire::LockStatusRequest{}, "ops");
  CHECK(names(all) == std::vector<std::string>{"jobs/1", "jobs/9"});
  CHECK(all.locks.at(0).identities == std::vector<std::string>{"worker"});
  CHECK(all.locks.at(1).identities == std::vector<std::string>{"other"});
  CHECK(names(call(n, wire::LockStatusRequest{}, "worker")) == std::vector<std::string>{"jobs/1"});
  CHECK(names(call(n, wire::LockStatusRequest{}, "nobody")).empty());

  // Who holds a lock: for those who may take it, or inspect the group.
  const wire::LockReply held = call(n, wire::CurrentGrantRequest{.lock = "jobs/9"}, "worker");
  REQUIRE(held.status.is_ok());
  CHECK(held.token == n.driver->service().table().lock("jobs/9")->token);
  CHECK(call(n, wire::CurrentGrantRequest{.lock = "jobs/9"}, "ops").status.is_ok());
  const wire::LockReply refused = call(n, wire::CurrentGrantRequest{.lock = "ledger"}, "worker");
  CHECK(refused.status.code() == Code::kPermissionDenied);
  CHECK(refused.token == 0);
  CHECK(call(n, wire::CurrentGrantRequest{.lock = "jobs/9"}, "nobody").status.code() == Code::kPermissionDenied);

  // A reload that takes the role away refuses the next acquire; the session stays.
  n.driver->set_permissions(Permissions({jobs}, {{"worker", {}}}));
  CHECK(acquire("jobs/3", "worker", 5).status.code() == Code::kPermissionDenied);
  CHECK(call(n, wire::KeepAliveRequest{.epoch = epoch, .session = session}, "worker").status.is_ok());
}

TEST_CASE("lockd driver: only an admin changes the members, and only from the version it read",
          "[lockgroup][security][members]") {
  LockdDriverOptions o = lone_lockd_options();
  o.permissions = Permissions({}, {{"worker", {"replica"}}, {"ops", {"admin"}}});
  Node n(std::move(o));
  n.elect();
  const wire::LockReply before = call(n, wire::LockStatusRequest{}, "ops");
  CHECK(before.members_version == 0);
  CHECK(before.members == std::vector<wire::MemberInfo>{{1, "tcp://n1"}});
  const wire::SetMembersRequest change{.version = 0, .nodes = {{1, "tcp://n1.example:7000"}}};
  const wire::LockReply refused = call(n, change, "worker");
  CHECK(refused.status.code() == Code::kPermissionDenied);
  CHECK(n.driver->service().table().members_version() == 0);
  const wire::LockReply done = call(n, change, "ops");
  REQUIRE(done.status.is_ok());
  CHECK(done.members_version == 1);
  const wire::LockReply after = call(n, wire::LockStatusRequest{}, "worker");
  CHECK(after.members_version == 1);
  CHECK(after.members == std::vector<wire::MemberInfo>{{1, "tcp://n1.example:7000"}});
  // Version 0 again: another operator's change came first.
  const wire::LockReply stale = call(n, change, "ops");
  CHECK(stale.status.code() == Code::kStale);
  CHECK_THAT(stale.status.message(), Catch::Contains("at version 1"));
  CHECK(n.driver->service().table().members_version() == 1);
}

TEST_CASE("lockd driver: only an admin changes the replica set and anyone reads it", "[lockgroup][security][replicaset]") {
  LockdDriverOptions o = lone_lockd_options();
  o.permissions = Permissions({}, {{"worker", {"replica"}}, {"ops", {"admin"}}});
  Node n(std::move(o));
  n.elect();
  const wire::SetReplicasRequest change{.version = 0,
                                        .replicas = {{1, "tcp://r1:7200"}},
                                        .write_quorum = 1,
                                        .read_quorum = 1};
  const wire::LockReply refused = call(n, change, "worker");
  CHECK(refused.status.code() == Code::kPermissionDenied);
  CHECK_THAT(refused.status.message(), Catch::Contains("may not change the replica set"));
  CHECK(n.driver->service().table().replica_set().version == 0);
  const wire::LockReply done = call(n, change, "ops");
  REQUIRE(done.status.is_ok());
  CHECK_FALSE(done.config.empty());
  CHECK(n.driver->service().table().replica_set().version == 1);
  const wire::LockReply read = call(n, wire::GetReplicasRequest{}, "worker");
  REQUIRE(read.status.is_ok());
  CHECK(read.config == done.config);
}

TEST_CASE("lockd driver: plaintext links check no permissions and name no identity", "[lockgroup]") {
  Node n;
  n.elect();
  const uint64_t epoch = n.driver->service().node().epoch();
  const wire::LockReply opened = call(n, wire::OpenSessionRequest{.epoch = epoch}, "");
  REQUIRE(opened.status.is_ok());
  const wire::LockReply granted =
      call(n, wire::AcquireRequest{.epoch = epoch, .session = opened.session, .lock = "any", .call = 1}, "");
  REQUIRE(granted.status.is_ok());
  CHECK(parse_sequencer(granted.sequencer).value().identity.empty());
  const wire::LockReply status = call(n, wire::LockStatusRequest{}, "");
  REQUIRE(status.locks.size() == 1);
  CHECK(status.locks[0].identities.empty());
}

TEST_CASE("lockd driver: a failed commit drops the turn and restarts from disk", "[lockgroup]") {
  Node n;
  n.elect();
  const LockService* before = &n.driver->service();
  const FrameResult r = n.open_session(5);
  REQUIRE(r.outcome == FrameOutcome::kRequest);
  n.disk.fail_next_commit();
  n.driver->begin_sync(n.now);
  REQUIRE(n.driver->finish_sync(n.now).is_ok());
  CHECK(n.host.replies.empty());
  CHECK(n.host.forgotten == 1);
  CHECK(n.host.starts == 2);  // a new incarnation for the new start
  CHECK(&n.driver->service() != before);
  // The client asks again, and the restarted node answers.
  n.elect();
  const FrameResult again = n.open_session(6);
  for (int i = 0; i < 10 && n.host.replies.count(again.route) == 0; ++i) n.turn();
  CHECK(n.host.replies.count(again.route) == 1);
  CHECK(n.host.replies.count(r.route) == 0);
}

}  // namespace
}  // namespace palisade::lockgroup
