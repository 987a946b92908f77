// The palisade-replica turn without sockets (replica/replica_driver.h): what a
// batch takes, refuses and holds, and how its replies go back. One replica on
// a MemoryStore whose commits are counted. The simulator (tests/sim) runs the
// driver on replica sets under faults; replica_server_test runs it on ZeroMQ.
#include "replica/replica_driver.h"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/cluster_id.h"
#include "base/physical_clock.h"
#include "replica/memory_store.h"
#include "tests/support/forwarding_store.h"
#include "tests/support/printers.h"
#include "tests/support/replica_requests.h"

namespace palisade::replica {
namespace {

struct Host : ReplicaHost {
  void reply(uint64_t route, std::vector<std::string> replies) override {
    std::vector<wire::ReplicaReply> decoded;
    for (const std::string& bytes : replies) {
      auto r = wire::decode_reply(bytes, wire::Limits{});
      REQUIRE(r.is_ok());
      decoded.push_back(std::move(r).value());
    }
    messages.emplace_back(route, std::move(decoded));
  }
  void refused(uint64_t, size_t, const Status& why, std::string_view type) override {
    refusals.push_back(why.code());
    refused_types.emplace_back(type);
  }
  void fenced(const wire::WriteRequest& write, uint64_t floor) override {
    fenced_writes.push_back({write.lock, write.ts.token, floor});
  }
  void answered(const wire::ReplicaRequest& request, const wire::ReplicaReply& reply) override {
    answers.emplace_back(request.id, reply.status.code());
  }
  void floor_raised(std::string_view lock, uint64_t floor) override { raised.emplace_back(lock, floor); }

  // Per reply message, in the order sent: its route and its replies.
  std::vector<std::pair<uint64_t, std::vector<wire::ReplicaReply>>> messages;
  std::vector<Code> refusals;
  struct Fenced {
    std::string lock;
    uint64_t token;
    uint64_t floor;
    friend bool operator==(const Fenced&, const Fenced&) = default;
  };
  std::vector<Fenced> fenced_writes;  // for the daemon's log
  std::vector<std::string> refused_types;  // "" for a frame that did not decode
  std::vector<std::pair<uint64_t, Code>> answers;  // the applied requests' ids and codes, as answered
  std::vector<std::pair<std::string, uint64_t>> raised;  // fence floors raised: lock, new floor
};

// A MemoryStore that counts its commits.
class CountingStore final : public test::ForwardingStore {
 public:
  Status commit() override {
    ++commits;
    return inner.commit();
  }
  int commits = 0;
};

struct Replica {
  explicit Replica(ReplicaDriverOptions options = {}) : driver(handler, clock, host, std::move(options)) {}

  // Takes one message of these frames from `route`, sent by identity `sender`.
  TakeResult take(uint64_t route, const std::vector<std::string>& frames, std::string_view sender = {}) {
    std::vector<std::string_view> views(frames.begin(), frames.end());
    return driver.take(route, views, false, sender);
  }
  bool stored(const std::string& key) {
    auto versions = store.inner.get(key);
    return versions.is_ok() && !versions.value().empty();
  }

  SystemClock wall;
  HybridClock clock{wall};
  CountingStore store;
  ReplicaHandler handler{store, clock};
  Host host;
  ReplicaDriver driver;
};

std::string write(const std::string& key, uint64_t id, std::string value = "v", std::string cluster = "") {
  auto w = test::write_req(key, std::move(value), test::ts_now(0));
  w.id = id;
  w.cluster = std::move(cluster);
  return wire::encode_request(w);
}

const std::string kGarbage = "\xc1";  // never valid MessagePack

TEST_CASE("replica driver: refusals keep their place in the reply order", "[replica][driver]") {
  Replica r;
  auto taken = r.take(7, {write("a", 1), kGarbage, write("b", 3)});
  CHECK(taken.requests == 2);
  CHECK(taken.refused == 1);
  r.take(8, {kGarbage, write("c", 5)});
  CHECK(r.host.messages.empty());  // nothing is answered before the flush
  CHECK(r.driver.flush() == 5);

  REQUIRE(r.host.messages.size() == 2);
  const auto& [route1, first] = r.host.messages[0];
  CHECK(route1 == 7);
  REQUIRE(first.size() == 3);
  CHECK(first[0].id == 1);
  CHECK(first[0].status.is_ok());
  CHECK(first[1].status.code() == Code::kMalformed);
  CHECK(first[1].clock != 0);  // stamped like every reply
  CHECK(first[2].id == 3);
  CHECK(first[2].status.is_ok());
  const auto& [route2, second] = r.host.messages[1];
  CHECK(route2 == 8);
  REQUIRE(second.size() == 2);
  CHECK(second[0].status.code() == Code::kMalformed);
  CHECK(second[1].id == 5);
  CHECK(second[1].status.is_ok());
  CHECK(r.host.refusals == std::vector<Code>{Code::kMalformed, Code::kMalformed});
  CHECK(r.stored("a"));
  CHECK(r.stored("b"));
  CHECK(r.stored("c"));
  CHECK(r.store.commits == 1);  // the whole batch: one commit
  CHECK(r.driver.requests_served() == 5);
}

TEST_CASE("replica driver: the host sees each applied request answered, and each refusal with its type",
          "[replica][driver]") {
  const std::string east(kClusterIdBytes, 'e'), west(kClusterIdBytes, 'w');
  Replica r({.cluster_id = east});
  r.take(1, {write("a", 1), kGarbage, write("b", 3, "v", west)});
  r.driver.flush();
  CHECK(r.host.answers == std::vector<std::pair<uint64_t, Code>>{{1, Code::kOk}});
  CHECK(r.host.refusals == std::vector<Code>{Code::kMalformed, Code::kWrongCluster});
  CHECK(r.host.refused_types == std::vector<std::string>{"", "write"});
}

TEST_CASE("replica driver: a message of too many frames gets one malformed reply", "[replica][driver]") {
  Replica r;
  std::vector<std::string> frames;
  for (size_t i = 0; i <= wire::kMaxRequestsPerMessage; ++i) frames.push_back(write("k" + std::to_string(i), i + 1));
  auto taken = r.take(1, frames);
  CHECK(taken.requests == 0);
  CHECK(taken.refused == 1);
  // One the transport cut short for having more frames: the same.
  std::string_view one = frames[0];
  r.driver.take(2, std::span<const std::string_view>(&one, 1), /*too_many_frames=*/true);
  r.driver.flush();

  REQUIRE(r.host.messages.size() == 2);
  for (const auto& [route, replies] : r.host.messages) {
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].status.code() == Code::kMalformed);
  }
  CHECK_FALSE(r.stored("k0"));
  CHECK(r.store.commits == 0);

  // wire::kMaxRequestsPerMessage frames are one message of requests.
  frames.pop_back();
  r.take(3, frames);
  r.driver.flush();
  REQUIRE(r.host.messages.size() == 3);
  CHECK(r.host.messages[2].second.size() == wire::kMaxRequestsPerMessage);
  CHECK(r.stored("k0"));
}

TEST_CASE("replica driver: a request of another cluster is refused unapplied", "[replica][driver]") {
  const std::string east(kClusterIdBytes, 'e'), west(kClusterIdBytes, 'w');
  Replica r({.cluster_id = east});
  r.take(1, {write("theirs", 1, "v", west), write("ours", 2, "v", east), write("any", 3, "v", "")});
  r.driver.flush();
  REQUIRE(r.host.messages.size() == 1);
  const auto& replies = r.host.messages[0].second;
  REQUIRE(replies.size() == 3);
  CHECK(replies[0].id == 1);
  CHECK(replies[0].status.code() == Code::kWrongCluster);
  CHECK(replies[1].status.is_ok());
  CHECK(replies[2].status.is_ok());  // names no cluster: any
  CHECK_FALSE(r.stored("theirs"));
  CHECK(r.stored("ours"));
  CHECK(r.stored("any"));
}

TEST_CASE("replica driver: over CURVE only a repairer identity may drop a tombstone", "[replica][driver]") {
  auto drop = [](uint64_t id) {
    return wire::encode_request({.id = id, .body = wire::DropTombstoneRequest{.key = "k", .ts = test::ts_now(0)}});
  };
  auto refusal = [&drop](Replica& r, std::string_view sender) {
    r.host.refusals.clear();
    r.take(1, {drop(1)}, sender);
    r.driver.flush();
    return r.host.refusals;
  };
  Replica secure({.permissions = Permissions({}, {{"replica-0", {"replica"}}, {"admin", {"admin"}}, {"app", {}}})});
  CHECK(refusal(secure, "app") == std::vector<Code>{Code::kPermissionDenied});
  CHECK(secure.host.messages.back().second.at(0).status.code() == Code::kPermissionDenied);  // the sender is told
  CHECK(refusal(secure, "") == std::vector<Code>{Code::kPermissionDenied});
  CHECK(refusal(secure, "admin").empty());
  CHECK(refusal(secure, "replica-0").empty());
  CHECK(secure.host.messages.back().second.at(0).status.code() != Code::kPermissionDenied);
  // Plaintext links: no identities, no such check.
  Replica plain;
  CHECK(refusal(plain, "").empty());
  // Writes from any listed identity still land.
  secure.take(2, {write("k2", 7)}, "app");
  secure.driver.flush();
  CHECK(secure.stored("k2"));
}

TEST_CASE("replica driver: with roles configured, each request needs its permission", "[replica][driver][security]") {
  Role jobs{.name = "jobs", .locks = {"jobs/*"}, .read = {"jobs/*", "shared/*"}, .write = {"jobs/*"}};
  Role reader{.name = "reader", .read = {"*"}};
  Replica r({.permissions = Permissions(
                 {jobs, reader},
                 {{"worker", {"jobs"}}, {"auditor", {"reader"}}, {"replica-0", {"replica"}}, {"ops", {"admin"}}})});
  // Each request alone from `sender`: its reply's code.
  uint64_t next_id = 1;
  auto code_of = [&](wire::ReplicaRequest req, std::string_view sender) {
    req.id = next_id++;
    r.take(req.id, {wire::encode_request(req)}, sender);
    r.driver.flush();
    return r.host.messages.back().second.at(0).status.code();
  };
  const auto ts = [](uint64_t n) { return test::ts_now(n); };
  CHECK(code_of(test::write_req("jobs/1", "v", ts(0)), "worker") == Code::kOk);
  CHECK(code_of(test::write_req("ledger/1", "v", ts(0)), "worker") == Code::kPermissionDenied);
  CHECK_FALSE(r.stored("ledger/1"));
  CHECK(code_of(test::delete_req("jobs/1", ts(0)), "worker") == Code::kPermissionDenied);  // no delete in its role
  CHECK(code_of(test::read_req("jobs/1"), "worker") == Code::kOk);
  CHECK(code_of(test::read_req("shared/x"), "worker") == Code::kOk);
  CHECK(code_of(test::read_req("ledger/1"), "worker") == Code::kPermissionDenied);
  // A prefix read needs one read pattern that covers every key of the prefix.
  const auto scan = [](std::string prefix) {
    return wire::ReplicaRequest{.body = wire::ScanRequest{std::move(prefix)}};
  };
  CHECK(code_of(scan("jobs/"), "worker") == Code::kOk);
  CHECK(code_of(scan("jobs/a"), "worker") == Code::kOk);
  CHECK(code_of(scan("jobs"), "worker") == Code::kPermissionDenied);  // "jobsx" too
  CHECK(code_of(scan(""), "worker") == Code::kPermissionDenied);
  CHECK(code_of(scan(""), "auditor") == Code::kOk);
  // So does a change feed.
  const auto changes = [](std::string prefix) {
    return wire::ReplicaRequest{.body = wire::ChangesRequest{std::move(prefix)}};
  };
  CHECK(code_of(changes("jobs/"), "worker") == Code::kOk);
  CHECK(code_of(changes("jobs"), "worker") == Code::kPermissionDenied);
  CHECK(code_of(changes(""), "worker") == Code::kPermissionDenied);
  CHECK(code_of(changes(""), "auditor") == Code::kOk);
  CHECK(code_of(test::commit_req("ledger/1", ts(0)), "worker") == Code::kPermissionDenied);
  wire::ReplicaRequest carrying = test::write_req("jobs/3", "v", ts(0));
  std::get<wire::WriteRequest>(carrying.body).commits.push_back({.key = "ledger/1", .ts = ts(0), .hash = 7});
  CHECK(code_of(carrying, "worker") == Code::kPermissionDenied);  // a commit it carries is of a key it may not write
  CHECK_FALSE(r.stored("jobs/3"));
  CHECK(code_of(test::purge_req("ledger/1", ts(0)), "worker") == Code::kPermissionDenied);
  CHECK(code_of(test::fence_req("ledger", 3), "worker") == Code::kPermissionDenied);
  CHECK(code_of(test::fence_req("jobs/a", 3), "worker") == Code::kOk);
  // A fenced read is a read of the key and a fence of the lock.
  CHECK(code_of(test::fenced_read_req("jobs/1", "jobs/a", 4), "worker") == Code::kOk);
  CHECK(code_of(test::fenced_read_req("jobs/1", "ledger", 4), "worker") == Code::kPermissionDenied);
  CHECK(code_of(test::fenced_read_req("ledger/1", "jobs/a", 4), "worker") == Code::kPermissionDenied);
  CHECK(code_of(test::fenced_read_req("jobs/1", "jobs/b", 4), "auditor") == Code::kPermissionDenied);
  CHECK(code_of(wire::ReplicaRequest{.body = wire::StatsRequest{}}, "worker") == Code::kPermissionDenied);
  CHECK(code_of(test::ping_req(), "worker") == Code::kOk);
  // A read-only identity reads anything and writes nothing.
  CHECK(code_of(test::read_req("jobs/1"), "auditor") == Code::kOk);
  CHECK(code_of(test::write_req("jobs/2", "v", ts(0)), "auditor") == Code::kPermissionDenied);
  CHECK_FALSE(r.stored("jobs/2"));
  // An identity the file lists without roles, and an unknown one: nothing.
  CHECK(code_of(test::read_req("jobs/1"), "nobody") == Code::kPermissionDenied);
  // Admins and replicas may do everything.
  CHECK(code_of(test::write_req("ledger/1", "v", ts(0)), "ops") == Code::kOk);
  CHECK(code_of(wire::ReplicaRequest{.body = wire::StatsRequest{}}, "ops") == Code::kOk);
  CHECK(code_of(wire::ReplicaRequest{.body = wire::StatsRequest{}}, "replica-0") == Code::kOk);
}

TEST_CASE("replica driver: a reload of permissions applies to the next message", "[replica][driver][security]") {
  Role writer{.name = "writer", .write = {"*"}};
  Replica r({.permissions = Permissions({writer}, {{"app", {}}})});
  auto put = [&](const std::string& key, uint64_t id) {
    r.take(id, {write(key, id)}, "app");
    r.driver.flush();
    return r.host.messages.back().second.at(0).status.code();
  };
  CHECK(put("a", 1) == Code::kPermissionDenied);
  r.driver.set_permissions(Permissions({writer}, {{"app", {"writer"}}}));
  CHECK(put("b", 2) == Code::kOk);
  CHECK(r.stored("b"));
  CHECK_FALSE(r.stored("a"));
}

TEST_CASE("replica driver: a batch is full at max_batch frames, refused ones too", "[replica][driver]") {
  Replica r({.max_batch = 3});
  r.take(1, {write("a", 1)});
  CHECK_FALSE(r.driver.full());
  r.take(2, {kGarbage});
  CHECK_FALSE(r.driver.full());
  r.take(3, {write("b", 3)});
  CHECK(r.driver.full());
  r.driver.flush();
  CHECK_FALSE(r.driver.full());
  CHECK(r.driver.empty());
}

TEST_CASE("replica driver: a batch is full at max_batch_bytes", "[replica][driver]") {
  Replica r({.max_batch_bytes = 1000});
  r.take(1, {write("a", 1, std::string(600, 'v'))});
  CHECK_FALSE(r.driver.full());
  r.take(2, {write("b", 2, std::string(600, 'v'))});
  CHECK(r.driver.full());
  r.driver.flush();
  CHECK_FALSE(r.driver.full());
  CHECK(r.store.commits == 1);
}

TEST_CASE("replica driver: a dropped batch answers nothing and applies nothing", "[replica][driver]") {
  Replica r;
  r.take(1, {write("a", 1), kGarbage});
  r.take(2, {write("b", 2)});
  CHECK(r.driver.pending().size() == 2);
  CHECK(r.driver.drop() == 2);  // requests, not the refusal
  CHECK(r.driver.empty());
  CHECK(r.driver.flush() == 0);
  CHECK(r.host.messages.empty());
  CHECK_FALSE(r.stored("a"));
  CHECK_FALSE(r.stored("b"));
  CHECK(r.store.commits == 0);
  CHECK(r.driver.requests_served() == 0);

  // The next batch is whole.
  r.take(3, {write("c", 3)});
  r.driver.flush();
  REQUIRE(r.host.messages.size() == 1);
  CHECK(r.host.messages[0].first == 3);
  CHECK(r.host.messages[0].second.size() == 1);
  CHECK(r.stored("c"));
}

TEST_CASE("replica driver: the replies of one message go back together", "[replica][driver]") {
  Replica r;
  r.take(4, {write("a", 1), write("b", 2)});
  r.take(9, {write("c", 3), write("d", 4), write("e", 5)});
  r.take(4, {write("f", 6)});  // the same sender again: a message of its own
  r.driver.flush();
  REQUIRE(r.host.messages.size() == 3);
  CHECK(r.host.messages[0].first == 4);
  CHECK(r.host.messages[0].second.size() == 2);
  CHECK(r.host.messages[1].first == 9);
  CHECK(r.host.messages[1].second.size() == 3);
  CHECK(r.host.messages[2].first == 4);
  CHECK(r.host.messages[2].second.size() == 1);
  uint64_t id = 0;
  for (const auto& [route, replies] : r.host.messages) {
    for (const auto& reply : replies) CHECK(reply.id == ++id);
  }
}

TEST_CASE("replica driver: a fenced write is reported with its lock, its token and the floor", "[replica][driver]") {
  Replica r;
  auto fence = test::fence_req("ledger", 7);
  fence.id = 1;
  auto zombie = test::write_req("balance", "100", test::ts_now(5), "ledger");
  zombie.id = 2;
  auto holder = test::write_req("balance", "200", test::ts_now(7), "ledger");
  holder.id = 3;
  r.take(1, {wire::encode_request(fence), wire::encode_request(zombie), wire::encode_request(holder)});
  r.driver.flush();
  REQUIRE(r.host.messages.size() == 1);
  CHECK(r.host.messages[0].second[1].status.code() == Code::kFenced);
  CHECK(r.host.fenced_writes == std::vector<Host::Fenced>{{"ledger", 5, 7}});  // the holder's write is not
}

TEST_CASE("replica driver: the host hears of each fence floor the batch raised", "[replica][driver]") {
  Replica r;
  auto fence = test::fence_req("ledger", 7);
  auto again = test::fence_req("ledger", 7);
  auto write = test::write_req("balance", "200", test::ts_now(8), "ledger");
  auto other = test::fence_req("audit", 2);
  r.take(1, {wire::encode_request(fence), wire::encode_request(again), wire::encode_request(write),
             wire::encode_request(other)});
  CHECK(r.host.raised.empty());  // not before the commit
  r.driver.flush();
  using Raised = std::vector<std::pair<std::string, uint64_t>>;
  CHECK(r.host.raised == Raised{{"ledger", 7}, {"ledger", 8}, {"audit", 2}});
}

TEST_CASE("replica driver: broken_ack_writes_without_storing acknowledges what it never stores", "[replica][driver]") {
  // The simulator's negative control (tests/sim/quorum_sim.h): a daemon bug
  // its checkers must catch, here only shown to be the bug it says.
  Replica r({.broken_ack_writes_without_storing = true});
  r.take(1, {write("a", 1)});
  r.driver.flush();
  REQUIRE(r.host.messages.size() == 1);
  CHECK(r.host.messages[0].second[0].status.is_ok());
  CHECK_FALSE(r.stored("a"));
}

}  // namespace
}  // namespace palisade::replica
