// The quorum coordinator (docs/design.md "Client", "Fence safety") driven by
// hand, on tests/unit/coordinator_cluster.h's fake cluster.
#include "tests/unit/coordinator_cluster.h"

namespace palisade {
namespace client {
struct CoordinatorTestAccess {
  static auto& write(Coordinator& c, OpId op) { return c.writes_.at(op); }
  static auto& read(Coordinator& c, OpId op) { return c.reads_.at(op); }
  static auto& scan(Coordinator& c, OpId op) { return c.scans_.at(op); }
  static auto& reads(Coordinator& c) { return c.reads_; }
  static auto& pending(Coordinator& c) { return c.pending_; }
  static auto& requests_of(Coordinator& c) { return c.requests_of_; }
};
}  // namespace client

namespace {

// Breaks one field of `coord`'s state, expects `problem` in its invariants'
// report, then puts the field back: the report must be empty again.
template <class Field, class Bad>
void breaks(Coordinator& coord, Field& field, Bad bad, const std::string& problem) {
  const Field kept = field;
  field = bad;
  INFO("expected: " << problem);
  CHECK_THAT(coord.check_invariants(), Catch::Contains(problem));
  field = kept;
  CHECK(coord.check_invariants().empty());
}

TEST_CASE("check_invariants reports each invariant broken, and nothing once it is mended", "[coordinator]") {
  Cluster c;
  c.hold = [](const Send&) { return true; };  // nothing is answered: both operations stay unfinished
  const OpId w = c.put("k", "v", kFence3);
  const OpId r = c.get("k");
  Coordinator& coord = c.coord();
  using A = client::CoordinatorTestAccess;
  REQUIRE(coord.check_invariants().empty());
  auto broken = [&](auto& field, auto bad, const std::string& problem) { breaks(coord, field, bad, problem); };
  auto& write = A::write(coord, w);
  broken(write.acks, 1, "counts more acknowledgements and refusals than answers");
  write.answered = 3;  // answers that changed nothing yet (errors that may pass)
  REQUIRE(coord.check_invariants().empty());
  broken(write.acks, 2, "has W acknowledgements and is not finished");
  broken(write.nonstores, 2, "can no longer get W copies and is not finished");
  write.answered = 0;
  broken(write.unsent, std::vector<int>{3}, "waits to send to no replica");

  auto& read = A::read(coord, r);
  broken(read.repairs_outstanding, 1, "repairs outstanding, not its pending ones");
  int unasked = 0;
  while (read.replicas.at(static_cast<size_t>(unasked)).asked) ++unasked;  // R = 2 of 3 were asked
  auto& replica = read.replicas.at(static_cast<size_t>(unasked));
  broken(replica.outstanding, true, "it never asked");
  replica.asked = true;
  broken(replica.outstanding, true, "with no request pending");
  replica.asked = false;

  auto pending = A::pending(coord);
  auto foreign = pending;
  foreign.begin()->second.op = 999;
  broken(A::pending(coord), foreign, "belongs to no unfinished operation");
  auto early = pending;
  early[1'000'000] = early.begin()->second;
  broken(A::pending(coord), early, "has an id not handed out yet");
  auto unlisted = A::requests_of(coord);
  unlisted[w].clear();
  broken(A::requests_of(coord), unlisted, "is not among its operation's requests");
  auto finished = A::requests_of(coord);
  finished[999] = {};
  broken(A::requests_of(coord), finished, "requests are listed for finished operation 999");
}

TEST_CASE("check_invariants reports each scan invariant broken", "[coordinator][scan]") {
  Cluster c;
  // A write in flight on replica 1 (pending): s/1's read must ask replica 0.
  c.seed(1, write_req("s/1", "one", ts(0, -10)));
  c.hold = [](const Send&) { return true; };
  const OpId listing = c.scan("s/");  // replicas 1 and 2 list
  Coordinator& coord = c.coord();
  using A = client::CoordinatorTestAccess;
  REQUIRE(coord.check_invariants().empty());
  auto& scan = A::scan(coord, listing);
  auto broken = [&](auto& field, auto bad, const std::string& problem) { breaks(coord, field, bad, problem); };
  broken(scan.limit, size_t{0}, "wants no more entries and is not finished");
  broken(scan.reads_left, size_t{1}, "reads left, not its unfinished ones");
  int unasked = 0;
  while (scan.replicas.at(static_cast<size_t>(unasked)).asked) ++unasked;
  auto& replica = scan.replicas.at(static_cast<size_t>(unasked));
  replica.asked = true;
  broken(replica.outstanding, true, "with no request of this page pending");
  replica.asked = false;
  // The listing answered, s/1's read waits on replica 0: it belongs to the scan.
  c.hold = [](const Send& s) { return !is<wire::ScanRequest>(s); };
  c.release();
  REQUIRE_FALSE(c.done(listing));
  const OpId read = A::reads(coord).begin()->first;
  broken(A::read(coord, read).scan, OpId{999}, "decides a key for no unfinished scan");
  broken(A::read(coord, read).key, std::string("t/1"), "reads a key its page lacks");
  broken(scan.reads_left, size_t{0}, "counts 0 reads left");
}

// ---- cluster identity ----

TEST_CASE("replicas of another cluster: W or R out of reach ends the call at once with wrong_cluster",
          "[coordinator][identity]") {
  CoordinatorOptions o;
  o.cluster_id = std::string(16, '\xa1');
  Cluster c(o);
  c.foreign = {0, 1, 2};
  OpId put = c.put("k", "v", {});
  OpId fence = c.fence(kFence3);
  OpId get = c.get("k");
  // No time passed: nothing waited for a deadline, nothing is asked again.
  CHECK(c.write_result(put).status.code() == Code::kWrongCluster);
  CHECK(c.write_result(fence).status.code() == Code::kWrongCluster);
  CHECK(c.read_result(get).status.code() == Code::kWrongCluster);
  const size_t sent = c.log().size();
  CHECK(sent == 3 + 3 + 2);  // the write and the fence to all N, the read to R
  for (const Send& s : c.log()) CHECK(s.request.cluster == o.cluster_id);
  c.advance_to(kTimeout * 2);
  CHECK(c.log().size() == sent);
}

TEST_CASE("one replica of another cluster counts as one that never stores: the others make the quorum",
          "[coordinator][identity]") {
  Cluster c;
  c.foreign = {1};
  OpId put = c.put("k", "v", {});
  CHECK(c.write_result(put).status.is_ok());
  OpId get = c.get("k");
  c.advance_to(CoordinatorOptions{}.hedge_ms);
  REQUIRE(c.done(get));
  INFO(c.read_result(get).status.to_string());
  CHECK(c.read_result(get).status.is_ok());
  CHECK(c.read_result(get).value == "v");
  CHECK_FALSE(c.replica(1).stored("k").has_value());
}

// ---- writes ----

TEST_CASE("a write succeeds at W acknowledgements and then commits on all N", "[coordinator][write]") {
  Cluster c;
  c.hold = [](const Send& s) { return is<wire::WriteRequest>(s); };
  OpId op = c.put("k", "v", kFence3);
  REQUIRE(c.sent_to<wire::WriteRequest>() == std::vector<int>{0, 1, 2});
  CHECK_FALSE(c.done(op));

  c.release(to(0));
  CHECK_FALSE(c.done(op));
  CHECK(c.sent<wire::CommitRequest>().empty());

  c.release(to(1));
  WriteResult r = c.write_result(op);
  CHECK(r.status.is_ok());
  CHECK(r.ts.token == 3);
  CHECK(c.sent<wire::CommitRequest>().empty());  // held back to share the next batch
  c.advance_to(kLazySend);
  auto commits = c.sent<wire::CommitRequest>();
  REQUIRE(commits.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(commits[i].first == i);
    CHECK(commits[i].second.key == "k");
    CHECK(commits[i].second.ts == r.ts);
  }
  for (int i : {0, 1}) {
    auto v = c.replica(i).stored("k");
    REQUIRE(v);
    CHECK(v->value == "v");
    CHECK(v->ts == r.ts);
    CHECK(v->state == VersionState::kCommitted);
  }
  c.release();  // the late write to replica 2 is answered and ignored
  CHECK(c.coord().in_flight() == 0);
  CHECK(c.completions.size() == 1);
}

TEST_CASE("held-back commits leave at once when released (a store closes)", "[coordinator][write]") {
  Cluster c;
  OpId op = c.put("k", "v", kFence3);
  REQUIRE(c.write_result(op).status.is_ok());
  c.release();
  CHECK(c.sent<wire::CommitRequest>().empty());
  CHECK(c.coord().in_flight() == 1);  // the held-back sends
  c.coord().release_held_back();
  c.release();  // no time passes
  CHECK(c.sent_to<wire::CommitRequest>() == std::vector<int>{0, 1, 2});
  CHECK(c.coord().in_flight() == 0);
}

TEST_CASE("a write succeeds with one of three replicas silent", "[coordinator][write]") {
  Cluster c;
  c.hold = to(1);
  OpId op = c.put("k", "v", kFence3);
  CHECK(c.write_result(op).status.is_ok());
  CHECK(c.elapsed() == 0);
  c.advance_to(kLazySend);
  CHECK(c.replica(0).stored("k")->state == VersionState::kCommitted);
  CHECK(c.replica(2).stored("k")->state == VersionState::kCommitted);
  CHECK_FALSE(c.replica(1).stored("k"));
}

TEST_CASE("a finished operation forgets its requests, even those a silent replica never answers",
          "[coordinator]") {
  Cluster c;
  c.hold = to(1);
  OpId put = c.put("k", "v", kFence3);
  REQUIRE(c.write_result(put).status.is_ok());
  OpId get = c.get("k");
  REQUIRE(c.read_result(get).status.is_ok());
  CHECK(c.held.size() >= 1);  // replica 1's write, never answered
  CHECK(c.coordinator().pending_requests() == 0);
}

TEST_CASE("a write with two of three replicas silent is unavailable at the deadline, not before",
          "[coordinator][write]") {
  Cluster c;
  c.hold = [](const Send& s) { return s.replica != 0; };
  OpId op = c.put("k", "v", kFence3);
  CHECK_FALSE(c.done(op));
  CHECK(c.coord().next_deadline_ms() == c.now() + kTimeout);
  c.advance_to(kTimeout - 1);
  CHECK_FALSE(c.done(op));
  c.advance_to(kTimeout);
  WriteResult r = c.write_result(op);
  CHECK(r.status.code() == Code::kUnavailable);
  CHECK(c.sent<wire::CommitRequest>().empty());
  CHECK(c.coord().in_flight() == 0);
  CHECK_FALSE(c.coord().next_deadline_ms());
  // Their answers come too late to change anything.
  c.release();
  CHECK(c.completions.size() == 1);
  CHECK(c.sent<wire::CommitRequest>().empty());
}

TEST_CASE("a write that W replicas answered without W acks times out: it may still take effect",
          "[coordinator][write]") {
  Cluster c;
  c.seed(1, fence_req("L", 5));
  c.hold = to(2);
  OpId op = c.put("k", "v", kFence3);  // 0 stores it, 1 refuses it, 2 is silent
  CHECK_FALSE(c.done(op));
  c.advance_to(kTimeout);
  WriteResult r = c.write_result(op);
  CHECK(r.status.code() == Code::kTimeout);
  CHECK(r.floor == 5);
}

TEST_CASE("a write refused by the fence floor of two replicas is fenced, even if the third stored it",
          "[coordinator][write][fence]") {
  Cluster c;
  c.seed(1, fence_req("L", 5));
  c.seed(2, fence_req("L", 7));
  OpId op = c.put("k", "v", kFence3);
  WriteResult r = c.write_result(op);
  CHECK(r.status.code() == Code::kFenced);
  CHECK(r.floor == 7);
  CHECK(r.ts.token == 3);
  CHECK(c.replica(0).stored("k"));  // the third replica stored it, pending
  CHECK(c.replica(0).stored("k")->state == VersionState::kPending);
  CHECK(c.sent<wire::CommitRequest>().empty());
}

// Simulator seed 187232, by hand: a write stored on W replicas, read, then
// superseded; a duplicate of it reaches a replica that has dropped it since.
TEST_CASE("a refusal of a duplicate of a dropped version is not final", "[coordinator][write][fence]") {
  Cluster c;
  c.seed(1, fence_req("L", 6));  // the new holder's fence reached replica 1 only
  c.hold = to(2);
  OpId op = c.put("k", "v", {"L", 5});  // 0 stores it, 1 refuses it
  REQUIRE(c.held.size() == 1);
  const Send write = c.held.front();
  c.held.clear();
  c.hold = nullptr;
  CHECK_FALSE(c.done(op));
  REQUIRE(c.replica(2).call(write.request).status.is_ok());  // stored; the reply is lost
  // W copies: a reader returns it (and commits it).
  OpId read = c.get("k");
  c.advance_to(kHedge);
  REQUIRE(c.read_result(read).status.is_ok());
  REQUIRE(c.read_result(read).value == "v");
  // The new holder writes the key; replica 2 drops v.
  c.seed(2, committed(write_req("k", "new", ts(6, 10), "L")));
  SECTION("the refusal names what replica 2 dropped: the outcome stays unknown") {
    c.redeliver(write);
    WriteResult r = c.write_result(op);
    CHECK(r.status.code() == Code::kUnavailable);
    CHECK(r.floor == 6);
  }
  SECTION("negative control: a refusal without it is counted as final, and a write that was read is fenced") {
    c.replicas_forget_dropped = true;
    c.redeliver(write);
    CHECK(c.write_result(op).status.code() == Code::kFenced);
  }
}

TEST_CASE("a write fenced by two replicas is answered without waiting for the third", "[coordinator][write][fence]") {
  Cluster c;
  c.seed(1, fence_req("L", 5));
  c.seed(2, fence_req("L", 5));
  c.hold = to(0);
  OpId op = c.put("k", "v", kFence3);
  CHECK(c.write_result(op).status.code() == Code::kFenced);
  CHECK(c.elapsed() == 0);
}

TEST_CASE("a write refused as stale by a version with a higher token is fenced", "[coordinator][write][fence]") {
  Cluster c;
  // A holder of another lock with a newer token wrote the key; lock L's floor stays low.
  c.seed(1, committed(write_req("k", "newer", ts(7, -100), "M")));
  c.seed(2, committed(write_req("k", "newer", ts(7, -100), "M")));
  OpId op = c.put("k", "v", {"L", 5});
  WriteResult r = c.write_result(op);
  CHECK(r.status.code() == Code::kFenced);
  CHECK(r.floor == 7);
}

// The same as seed 187232 with a newer write of the same lease: a stale refusal.
TEST_CASE("a stale refusal of a duplicate of a dropped version is not final", "[coordinator][write]") {
  Cluster c;
  c.seed(1, committed(write_req("k", "later", ts(5, 100), "L")));  // 1 refuses it stale, for good
  c.hold = to(2);
  OpId op = c.put("k", "v", {"L", 5});  // 0 stores it
  REQUIRE(c.held.size() == 1);
  const Send write = c.held.front();
  c.held.clear();
  c.hold = nullptr;
  REQUIRE(c.replica(2).call(write.request).status.is_ok());  // stored on 2 (W copies); the reply is lost
  c.seed(2, committed(write_req("k", "later", ts(5, 100), "L")));  // 2 drops it
  SECTION("unknown, not stale") {
    c.redeliver(write);
    CHECK(c.write_result(op).status.code() == Code::kUnavailable);
  }
  SECTION("negative control: without `dropped` it is answered stale") {
    c.replicas_forget_dropped = true;
    c.redeliver(write);
    CHECK(c.write_result(op).status.code() == Code::kStale);
  }
}

TEST_CASE("a fenced refusal naming a dropped version older than the write is final", "[coordinator][write][fence]") {
  Cluster c;
  for (int i : {1, 2}) {
    c.seed(i, write_req("k", "old", ts(5, -100), "L"));
    c.seed(i, committed(write_req("k", "newer", ts(6, -50), "L")));  // drops the old one
  }
  OpId op = c.put("k", "v", {"L", 5});  // newer than what 1 and 2 dropped of token 5
  WriteResult r = c.write_result(op);
  CHECK(r.status.code() == Code::kFenced);
  CHECK(r.floor == 6);
}

TEST_CASE("a write refused as stale by a newer version of the same token is stale", "[coordinator][write]") {
  Cluster c;
  c.seed(1, committed(write_req("k", "later", ts(5, 100), "L")));
  c.seed(2, committed(write_req("k", "later", ts(5, 100), "L")));
  OpId op = c.put("k", "v", {"L", 5});
  WriteResult r = c.write_result(op);
  CHECK(r.status.code() == Code::kStale);
  CHECK(r.ts < ts(5, 100));
}

TEST_CASE("a write to unreachable replicas is sent again after hedge_ms and then succeeds", "[coordinator][write]") {
  Cluster c;
  c.unreachable = {1, 2};
  OpId op = c.put("k", "v", kFence3);
  CHECK_FALSE(c.done(op));
  CHECK(c.sent<wire::WriteRequest>().size() == 3);
  CHECK(c.coord().next_deadline_ms() == c.now() + kHedge);

  c.unreachable.clear();
  c.advance_to(kHedge - 1);
  CHECK(c.sent<wire::WriteRequest>().size() == 3);
  CHECK_FALSE(c.done(op));

  c.advance_to(kHedge);
  CHECK(c.sent_to<wire::WriteRequest>(3) == std::vector<int>{1, 2});
  WriteResult r = c.write_result(op);
  CHECK(r.status.is_ok());
  for (int i = 0; i < 3; ++i) CHECK(c.replica(i).stored("k")->ts == r.ts);
}

TEST_CASE("a write to replicas that stay unreachable is retried until the deadline, then unavailable",
          "[coordinator][write]") {
  Cluster c;
  c.unreachable = {1, 2};
  OpId op = c.put("k", "v", kFence3);
  for (uint64_t t = kHedge; t < kTimeout; t += kHedge) {
    c.advance_to(t);
    REQUIRE_FALSE(c.done(op));
  }
  size_t attempts = c.sent_to<wire::WriteRequest>().size();
  CHECK(attempts > 10);
  c.advance_to(kTimeout);
  CHECK(c.write_result(op).status.code() == Code::kUnavailable);
  CHECK(c.sent_to<wire::WriteRequest>().size() == attempts);  // nothing sent at or after the deadline
}

TEST_CASE("malformed writes and fences are bad requests at once, and nothing is sent", "[coordinator][write]") {
  Cluster c;
  std::vector<OpId> ops = {
      c.put("", "v", kFence3),       // empty key
      c.put("k", "v", {"L", 0}),     // a lock without a token
      c.put("k", "v", {"", 4}),      // a token without a lock
      c.del("", {}),                 // empty key, unfenced
      c.fence({"L", 0}),
      c.fence({"", 4}),
      c.fence({}),
  };
  for (OpId op : ops) {
    CAPTURE(op);
    CHECK(c.write_result(op).status.code() == Code::kBadRequest);
  }
  CHECK(c.log().empty());
  CHECK(c.coord().in_flight() == 0);
  // An unfenced write is not one of them.
  CHECK(c.write_result(c.put("k", "v", {})).status.is_ok());
}

TEST_CASE("a delete writes a tombstone through the same quorum", "[coordinator][write]") {
  Cluster c;
  OpId op = c.del("k", kFence3);
  CHECK(c.write_result(op).status.is_ok());
  for (int i = 0; i < 3; ++i) {
    auto v = c.replica(i).stored("k");
    REQUIRE(v);
    CHECK(v->tombstone);
  }
}

TEST_CASE("a fence raises the floor on W replicas and reports the highest floor", "[coordinator][fence]") {
  Cluster c;
  c.hold = to(2);
  OpId op = c.fence({"L", 9});
  WriteResult r = c.write_result(op);
  CHECK(r.status.is_ok());
  CHECK(r.floor == 9);
  CHECK(c.sent_to<wire::FenceRequest>() == std::vector<int>{0, 1, 2});
  CHECK(c.sent<wire::CommitRequest>().empty());
  CHECK(c.replica(0).floor("L") == 9);
  CHECK(c.replica(1).floor("L") == 9);
  CHECK(c.replica(2).floor("L") == 0);

  SECTION("then a write of an older token is fenced") {
    c.hold = nullptr;
    CHECK(c.write_result(c.put("k", "v", {"L", 8})).status.code() == Code::kFenced);
  }
  SECTION("a fence below the floor is no error and reports the floor") {
    c.hold = nullptr;
    WriteResult low = c.write_result(c.fence({"L", 4}));
    CHECK(low.status.is_ok());
    CHECK(low.floor == 9);
  }
}

TEST_CASE("a write or fence whose sequencer replicas refuse is bad_sequencer, without waiting", "[coordinator][write][sequencer]") {
  const ClusterKey key = ClusterKey::from_hex(std::string(64, '1')).value();
  const ClusterKey forger = ClusterKey::from_hex(std::string(64, '2')).value();
  Cluster c({}, replica::ReplicaAuth{key, "g", 2});
  const Fence good{"L", 3, sign_sequencer({"g", "L", LockMode::kExclusive, 3}, key)};
  const Fence forged{"L", 3, sign_sequencer({"g", "L", LockMode::kExclusive, 3}, forger)};

  CHECK(c.write_result(c.fence(good)).status.is_ok());
  CHECK(c.write_result(c.put("k", "v", good)).status.is_ok());
  CHECK(c.sent<wire::WriteRequest>().back().second.sequencer == good.sequencer);
  CHECK(c.sent<wire::FenceRequest>().back().second.sequencer == good.sequencer);

  c.hold = to(0);  // two refusals are enough: W copies are impossible
  for (const Fence& bad : {forged, Fence{"L", 3}, Fence{"L", 4, good.sequencer}}) {
    WriteResult put = c.write_result(c.put("k", "evil", bad));
    CHECK(put.status.code() == Code::kBadSequencer);
    CHECK_FALSE(put.status.message().empty());
    CHECK(c.write_result(c.del("k", bad)).status.code() == Code::kBadSequencer);
    CHECK(c.write_result(c.fence(bad)).status.code() == Code::kBadSequencer);
  }
  CHECK(c.elapsed() == 0);
  for (int i : {1, 2}) {
    CHECK(c.replica(i).stored("k")->value == "v");
    CHECK(c.replica(i).floor("L") == 3);
  }
  // Unfenced writes need no sequencer.
  c.hold = nullptr;
  CHECK(c.write_result(c.put("plain", "v", {})).status.is_ok());
}

TEST_CASE("with replicas that check sequencers, commits and repairs carry the receipts that prove them",
          "[coordinator][sequencer][receipts]") {
  const ClusterKey key = ClusterKey::from_hex(std::string(64, '1')).value();
  Cluster c({}, replica::ReplicaAuth{key, "g", 2});
  const Fence fence{"L", 3, sign_sequencer({"g", "L", LockMode::kExclusive, 3}, key)};
  REQUIRE(c.write_result(c.fence(fence)).status.is_ok());

  SECTION("the writer's commits: every replica commits") {
    REQUIRE(c.write_result(c.put("k", "v", fence)).status.is_ok());
    c.advance_to(kLazySend);
    auto commits = c.sent<wire::CommitRequest>();
    REQUIRE(commits.size() == 3);
    for (const auto& [replica, commit] : commits) CHECK(commit.certificate.size() >= 2);
    for (int i = 0; i < 3; ++i) CHECK(c.replica(i).stored("k")->state == VersionState::kCommitted);
  }
  SECTION("a reader repairs a replica that missed the write, with the copies' receipts") {
    c.hold = to(2);
    REQUIRE(c.write_result(c.put("k", "v", fence)).status.is_ok());
    c.held.clear();  // replica 2 never gets the write
    // The writer's commits are late, so the read hears from all three (replica
    // 1 last) before it can return the version: two pending copies.
    auto read_of_1 = [](const Send& s) {
      return s.replica == 1 && std::holds_alternative<wire::ReadRequest>(s.request.body);
    };
    c.hold = [&](const Send& s) { return read_of_1(s) || std::holds_alternative<wire::CommitRequest>(s.request.body); };
    size_t mark = c.log().size();
    OpId get = c.get("k");
    c.advance_to(kHedge);
    REQUIRE_FALSE(c.done(get));
    c.release(read_of_1);
    REQUIRE(c.read_result(get).found);
    auto repairs = c.sent<wire::WriteRequest>(mark);
    REQUIRE(repairs.size() == 1);
    CHECK(repairs[0].first == 2);
    CHECK(repairs[0].second.committed);
    CHECK(repairs[0].second.certificate.size() == 2);
    CHECK(c.replica(2).stored("k")->state == VersionState::kCommitted);
    // And it commits the pending copies with the same proof.
    c.hold = nullptr;
    c.release();
    for (int i : {0, 1}) CHECK(c.replica(i).stored("k")->state == VersionState::kCommitted);
  }
  SECTION("a version committed on one replica is returned, and not repaired without W receipts") {
    // Replica 0 holds it committed (anti-entropy sealed it there); 1 and 2 never got it.
    auto write = test::with_sequencer(test::write_req("k", "v", {3, hlc::make(kStartMs, 1)}, "L"), fence.sequencer);
    std::get<wire::WriteRequest>(write.body).committed = true;
    write.from_repairer = true;
    c.seed(0, write);
    size_t mark = c.log().size();
    ReadResult read = c.read_result(c.get("k"));
    REQUIRE(read.found);
    CHECK(read.value == "v");
    CHECK(c.sent<wire::WriteRequest>(mark).empty());
    CHECK(c.sent<wire::CommitRequest>(mark).empty());
  }
}

TEST_CASE("Fence::from_sequencer reads the lock and token without the key", "[coordinator][sequencer]") {
  const std::string text = sign_sequencer({"g", "orders", LockMode::kExclusive, 42}, ClusterKey::generate());
  auto fence = Fence::from_sequencer(text);
  REQUIRE(fence.is_ok());
  CHECK(fence.value().lock == "orders");
  CHECK(fence.value().token == 42);
  CHECK(fence.value().sequencer == text);
  for (const std::string& bad : {std::string(), std::string("garbage"), text.substr(0, text.size() / 2),
                                 std::string(2000, 'x')}) {
    CHECK(Fence::from_sequencer(bad).code() == Code::kBadSequencer);
  }
}

// ---- reads ----
// With N = 3 and R = 2, read number k (counting every operation started on the
// coordinator, from 1) first asks replicas k % 3 and (k + 1) % 3.

TEST_CASE("a read returns the newest committed version", "[coordinator][read]") {
  Cluster c;
  c.seed_all(committed(write_req("k", "old", ts(2, -1000), "L")));
  c.seed(0, committed(write_req("k", "new", ts(3, -500), "L")));
  c.seed(2, committed(write_req("k", "new", ts(3, -500), "L")));
  OpId op = c.get("k");
  REQUIRE(c.sent_to<wire::ReadRequest>() == std::vector<int>{1, 2});
  ReadResult r = c.read_result(op);
  CHECK(r.status.is_ok());
  CHECK(r.found);
  CHECK(r.value == "new");
  CHECK(r.ts == ts(3, -500));
  CHECK(r.lock == "L");
}

TEST_CASE("a read of a missing key finds nothing", "[coordinator][read]") {
  Cluster c;
  ReadResult r = c.read_result(c.get("k"));
  CHECK(r.status.is_ok());
  CHECK_FALSE(r.found);
  CHECK(c.sent<wire::ReadRequest>().size() == 2);
}

TEST_CASE("held-back commits ride in the next write to each replica", "[coordinator][write]") {
  Cluster c;
  WriteResult first = c.write_result(c.put("a", "x", kFence3));
  REQUIRE(first.status.is_ok());
  c.advance_to(kLazySend - 1);
  REQUIRE(c.sent<wire::CommitRequest>().empty());

  size_t mark = c.log().size();
  REQUIRE(c.write_result(c.put("b", "y", kFence3)).status.is_ok());
  CHECK(c.sent<wire::CommitRequest>().empty());  // no message of their own
  auto writes = c.sent<wire::WriteRequest>(mark);
  REQUIRE(writes.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(writes[i].first == i);
    REQUIRE(writes[i].second.commits.size() == 1);
    CHECK(writes[i].second.commits[0].key == "a");
    CHECK(writes[i].second.commits[0].ts == first.ts);
    CHECK(writes[i].second.commits[0].hash.has_value());
    CHECK(c.replica(i).stored("a")->state == VersionState::kCommitted);
  }
  // The second write's own commits wait for a third, or go alone once due.
  c.advance_to(c.elapsed() + kLazySend);
  CHECK(c.sent<wire::CommitRequest>(mark).size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(c.replica(i).stored("b")->state == VersionState::kCommitted);
}

TEST_CASE("replicas older than carried commits get the write again without them, and commits alone", "[coordinator][write]") {
  Cluster c;
  c.older_than_carried_commits = {1, 2};
  WriteResult first = c.write_result(c.put("a", "x", kFence3));
  REQUIRE(first.status.is_ok());
  size_t mark = c.log().size();
  OpId second = c.put("b", "y", kFence3);  // carries a's commit: replicas 1 and 2 refuse it
  CHECK_FALSE(c.done(second));
  c.advance_to(kHedge);  // sent again without commits
  REQUIRE(c.write_result(second).status.is_ok());
  c.advance_to(kHedge + kLazySend);
  for (int i = 0; i < 3; ++i) {
    INFO("replica " << i);
    CHECK(c.replica(i).stored("a")->state == VersionState::kCommitted);
    CHECK(c.replica(i).stored("b")->state == VersionState::kCommitted);
  }
  // From now on commits ride only to the replica that takes them.
  mark = c.log().size();
  REQUIRE(c.write_result(c.put("c", "z", kFence3)).status.is_ok());
  REQUIRE(c.write_result(c.put("d", "w", kFence3)).status.is_ok());
  for (const auto& [replica, body] : c.sent<wire::WriteRequest>(mark)) {
    INFO("replica " << replica);
    CHECK((body.commits.empty() || replica == 0));
  }
  CHECK(c.sent<wire::CommitRequest>(mark).size() == 2);  // c's commit, alone, to replicas 1 and 2
}

TEST_CASE("a held-back commit goes alone when no write goes to its replica", "[coordinator][write]") {
  Cluster c;
  REQUIRE(c.write_result(c.put("a", "x", kFence3)).status.is_ok());
  size_t mark = c.log().size();
  c.get("a");  // reads, not writes: they carry nothing
  auto commits = c.sent<wire::CommitRequest>(mark);
  REQUIRE(commits.size() == 3);
  for (const auto& [replica, body] : c.sent<wire::ReadRequest>(mark)) CHECK(body.key == "a");
}

TEST_CASE("a write carries at most kMaxCarriedCommitBytes of commits", "[coordinator][write]") {
  Cluster c;
  const std::string long_key(499, 'k');  // 528 bytes carried (no receipts): 31 fit in 16384, not 32
  c.hold = [](const Send& s) { return is<wire::WriteRequest>(s); };
  std::vector<OpId> puts;
  for (int i = 10; i < 42; ++i) puts.push_back(c.put(long_key + std::to_string(i), "v", kFence3));
  c.release();  // 32 writes acknowledged together: 32 commits held back for each replica
  for (OpId op : puts) REQUIRE(c.write_result(op).status.is_ok());
  REQUIRE(c.sent<wire::CommitRequest>().empty());
  c.hold = nullptr;
  size_t mark = c.log().size();
  REQUIRE(c.write_result(c.put("next", "v", kFence3)).status.is_ok());
  for (const auto& [replica, body] : c.sent<wire::WriteRequest>(mark)) {
    size_t bytes = 0;
    for (const auto& commit : body.commits) bytes += wire::carried_commit_bytes(commit);
    CHECK(bytes <= wire::Limits::kMaxCarriedCommitBytes);
    CHECK(body.commits.size() == 31);
  }
  CHECK(c.sent<wire::CommitRequest>(mark).size() == 3);  // the one left over, to each replica
}

TEST_CASE("a read of a pending version with W copies returns it and commits it everywhere", "[coordinator][read]") {
  Cluster c;
  c.seed_all(committed(write_req("k", "old", ts(2, -1000), "L")));
  // The writer's commits are lost, and replica 2 never got the write.
  c.hold = [](const Send& s) { return is<wire::CommitRequest>(s) || s.replica == 2; };
  OpId w = c.put("k", "new", kFence3);  // operation 1
  WriteResult written = c.write_result(w);
  REQUIRE(written.status.is_ok());
  c.advance_to(kLazySend);  // the commits go out, and are held
  c.held.clear();
  c.hold = nullptr;
  REQUIRE(c.replica(0).stored("k")->state == VersionState::kPending);
  REQUIRE(c.replica(1).stored("k")->state == VersionState::kPending);

  size_t mark = c.log().size();
  OpId op = c.get("k");  // operation 2: asks 2 and 0 first
  REQUIRE(c.sent_to<wire::ReadRequest>(mark).size() >= 3);
  CHECK(c.sent_to<wire::ReadRequest>(mark)[0] == 2);
  ReadResult r = c.read_result(op);
  CHECK(r.found);
  CHECK(r.value == "new");
  CHECK(r.ts == written.ts);
  c.advance_to(c.elapsed() + kLazySend);
  // The replica that answered older is repaired with it, committed; the holders
  // are told to commit theirs (by a commit or a committed write).
  std::set<int> repaired, committed_at;
  for (const auto& [replica, body] : c.sent<wire::WriteRequest>(mark)) {
    CHECK(body.committed);
    CHECK(body.ts == written.ts);
    repaired.insert(replica);
  }
  for (const auto& [replica, body] : c.sent<wire::CommitRequest>(mark)) {
    if (body.ts == written.ts) committed_at.insert(replica);
  }
  CHECK(repaired.count(2) == 1);
  for (int i : {0, 1}) CHECK((repaired.count(i) + committed_at.count(i)) >= 1);
  for (int i = 0; i < 3; ++i) {
    auto v = c.replica(i).stored("k");
    REQUIRE(v);
    CHECK(v->value == "new");
    CHECK(v->state == VersionState::kCommitted);
  }
}

TEST_CASE("a read never returns a pending version only one replica holds, once all N answered",
          "[coordinator][read][fence]") {
  Cluster c;
  c.seed_all(committed(write_req("k", "old", ts(2, -1000), "L")));
  c.seed(1, write_req("k", "in flight", ts(5, -500), "L"));  // a write that reached one replica (so far)
  OpId op = c.get("k");
  ReadResult r = c.read_result(op);
  CHECK(r.status.is_ok());
  CHECK(r.found);
  CHECK(r.value == "old");
  CHECK(r.ts == ts(2, -1000));
  std::vector<int> asked = c.sent_to<wire::ReadRequest>();
  CHECK(std::set<int>(asked.begin(), asked.end()) == std::set<int>{0, 1, 2});
  // It may still succeed: it is neither purged nor overwritten.
  CHECK(c.sent<wire::PurgeRequest>().empty());
  CHECK(c.sent<wire::WriteRequest>().empty());
  CHECK(c.replica(1).stored("k")->value == "in flight");
}

TEST_CASE("a pending version superseded by the fence floor is purged and never returned",
          "[coordinator][read][fence]") {
  Cluster c;
  const FencedTimestamp loser = ts(3, -500);
  SECTION("over an older committed version") {
    c.seed_all(committed(write_req("k", "old", ts(2, -1000), "L")));
    c.seed(1, write_req("k", "superseded", loser, "L"));
    c.seed(0, fence_req("L", 5));
    c.seed(2, fence_req("L", 5));
    OpId op = c.get("k");
    ReadResult r = c.read_result(op);
    CHECK(r.status.is_ok());
    CHECK(r.found);
    CHECK(r.value == "old");
  }
  SECTION("with no other version: the floors are asked for by lock") {
    c.seed(1, write_req("k", "superseded", loser, "L"));
    c.seed(0, fence_req("L", 5));
    c.seed(2, fence_req("L", 5));
    OpId op = c.get("k");
    ReadResult r = c.read_result(op);
    CHECK(r.status.is_ok());
    CHECK_FALSE(r.found);
    bool asked_floor = false;
    for (const auto& [replica, body] : c.sent<wire::ReadRequest>()) asked_floor |= body.floor_of == "L";
    CHECK(asked_floor);
  }
  c.advance_to(c.elapsed() + kLazySend);
  auto purges = c.sent<wire::PurgeRequest>();
  REQUIRE_FALSE(purges.empty());
  for (const auto& [replica, body] : purges) {
    CHECK(replica == 1);
    CHECK(body.key == "k");
    CHECK(body.ts == loser);
  }
  auto v = c.replica(1).stored("k");
  CHECK((!v || v->ts != loser));
}

// The hole the fenced read closed (lock sim seed 80,018,916): an earlier
// holder's write reached replica 1 before the next holder's fence, which
// reached replicas 1 and 2 only. A plain read then skips the write (one copy,
// and replica 0 could still take it) and leaves it pending: replica 0 takes
// it later and it is acknowledged, after a read that said "absent". A fenced
// read raises replica 0's floor before it answers: the write can never reach
// W copies, so the read purges it.
TEST_CASE("a fenced read leaves no earlier holder's write in flight able to land", "[coordinator][read][fence]") {
  const FencedTimestamp stalled = ts(3, -500);
  for (const bool fenced : {false, true}) {
    DYNAMIC_SECTION((fenced ? "fenced read" : "plain read")) {
      Cluster c;
      c.seed(1, write_req("k", "stalled", stalled, "L"));
      c.seed(1, fence_req("L", 7));
      c.seed(2, fence_req("L", 7));
      ReadResult r = c.read_result(c.get("k", fenced ? Fence{"L", 7} : Fence{}));
      REQUIRE(r.status.is_ok());
      CHECK_FALSE(r.found);
      c.advance_to(kLazySend);
      // The earlier holder's write goes on to replica 0.
      const Code late = c.replica(0).call(write_req("k", "stalled", stalled, "L")).status.code();
      if (fenced) {
        for (const auto& [replica, body] : c.sent<wire::ReadRequest>()) {
          INFO("replica " << replica);
          REQUIRE(body.fence);
          CHECK(*body.fence == wire::FenceRequest{"L", 7});
        }
        CHECK(c.sent_to<wire::PurgeRequest>() == std::vector<int>{1});
        CHECK_FALSE(c.replica(1).stored("k"));
        CHECK(late == Code::kFenced);
        CHECK(c.replica(0).floor("L") == 7);
      } else {  // the hole: two copies, acknowledged after the read said absent
        CHECK(c.sent_to<wire::PurgeRequest>().empty());
        CHECK(late == Code::kOk);
        CHECK(c.replica(1).stored("k"));
      }
    }
  }
}

TEST_CASE("a fenced read asks every replica with its fence, hedges included", "[coordinator][read][fence]") {
  Cluster c;
  c.seed_all(committed(write_req("k", "v", ts(2, -1000), "L")));
  c.hold = to(2);
  OpId op = c.get("k", Fence{"L", 4, "seq"});
  c.advance_to(kHedge);
  CHECK(c.sent_to<wire::ReadRequest>() == std::vector<int>{1, 2, 0, 2});
  for (const auto& [replica, body] : c.sent<wire::ReadRequest>()) {
    REQUIRE(body.fence);
    CHECK(*body.fence == wire::FenceRequest{"L", 4, "seq"});
  }
  ReadResult r = c.read_result(op);
  CHECK(r.value == "v");
  CHECK(c.replica(0).floor("L") == 4);
  CHECK(c.replica(1).floor("L") == 4);
  // Half a fence is a bad request, and nothing is sent.
  const size_t sent = c.log().size();
  CHECK(c.read_result(c.get("k", Fence{"L", 0})).status.code() == Code::kBadRequest);
  CHECK(c.read_result(c.get("k", Fence{"", 5})).status.code() == Code::kBadRequest);
  CHECK(c.log().size() == sent);
}

TEST_CASE("a fenced read whose sequencer replicas refuse is bad_sequencer, without waiting",
          "[coordinator][read][sequencer]") {
  const ClusterKey key = ClusterKey::from_hex(std::string(64, '1')).value();
  Cluster c({}, replica::ReplicaAuth{key, "g", 2});
  const Fence good{"L", 3, sign_sequencer({"g", "L", LockMode::kExclusive, 3}, key)};
  CHECK(c.read_result(c.get("k", good)).status.is_ok());
  ReadResult bad = c.read_result(c.get("k", Fence{"L", 4, good.sequencer}));
  CHECK(bad.status.code() == Code::kBadSequencer);
  CHECK(c.elapsed() == 0);
  for (int i = 0; i < 3; ++i) CHECK(c.replica(i).floor("L") <= 3);
}

TEST_CASE("a read that cannot decide about a pending version is unavailable at the deadline",
          "[coordinator][read][fence]") {
  Cluster c;
  c.seed(2, committed(write_req("k", "old", ts(2, -1000), "L")));
  c.seed(1, write_req("k", "in flight", ts(5, -500), "L"));
  c.hold = to(0);  // the replica that would decide is silent
  OpId op = c.get("k");
  CHECK_FALSE(c.done(op));
  CHECK(c.held.size() == 1);  // it was asked
  for (uint64_t t = kHedge; t < kTimeout; t += kHedge) {
    c.advance_to(t);
    REQUIRE_FALSE(c.done(op));
  }
  c.advance_to(kTimeout - 1);
  CHECK_FALSE(c.done(op));
  c.advance_to(kTimeout);
  ReadResult r = c.read_result(op);
  CHECK(r.status.code() == Code::kUnavailable);
  CHECK_FALSE(r.found);
  CHECK(c.sent<wire::PurgeRequest>().empty());
  CHECK(c.coord().in_flight() == 0);
}

TEST_CASE("a read repairs the replica that answered older and waits for it", "[coordinator][read]") {
  Cluster c;
  c.seed_all(committed(write_req("k", "old", ts(2, -1000), "L")));
  c.seed(0, committed(write_req("k", "new", ts(3, -500), "L")));
  c.seed(1, committed(write_req("k", "new", ts(3, -500), "L")));
  c.hold = [](const Send& s) { return is<wire::WriteRequest>(s); };
  OpId op = c.get("k");  // asks 1 and 2
  auto repairs = c.sent<wire::WriteRequest>();
  REQUIRE(repairs.size() == 1);
  CHECK(repairs[0].first == 2);
  CHECK(repairs[0].second.value == "new");
  CHECK(repairs[0].second.ts == ts(3, -500));
  CHECK(repairs[0].second.committed);
  CHECK_FALSE(c.done(op));

  SECTION("answered: the read completes") {
    c.release();
    ReadResult r = c.read_result(op);
    CHECK(r.status.is_ok());
    CHECK(r.value == "new");
    CHECK(c.elapsed() == 0);
    CHECK(c.replica(2).stored("k")->value == "new");
    CHECK(c.replica(2).stored("k")->state == VersionState::kCommitted);
  }
  SECTION("never answered: the read completes at the deadline, repair being best effort") {
    c.advance_to(kTimeout - 1);
    CHECK_FALSE(c.done(op));
    c.advance_to(kTimeout);
    ReadResult r = c.read_result(op);
    CHECK(r.status.is_ok());
    CHECK(r.value == "new");
  }
}

TEST_CASE("a read asks the third replica after hedge_ms when one of the first R is silent", "[coordinator][read]") {
  Cluster c;
  c.seed_all(committed(write_req("k", "v", ts(2, -1000), "L")));
  c.hold = to(2);
  OpId op = c.get("k");  // asks 1 and 2
  CHECK(c.sent_to<wire::ReadRequest>() == std::vector<int>{1, 2});
  CHECK(c.coord().next_deadline_ms() == c.now() + kHedge);
  c.advance_to(kHedge - 1);
  CHECK(c.sent_to<wire::ReadRequest>() == std::vector<int>{1, 2});
  CHECK_FALSE(c.done(op));
  c.advance_to(kHedge);
  // The third replica is asked, and the silent one again (its request may be lost).
  CHECK(c.sent_to<wire::ReadRequest>() == std::vector<int>{1, 2, 0, 2});
  ReadResult r = c.read_result(op);
  CHECK(r.found);
  CHECK(r.value == "v");
}

// Regression (review): a replica whose request or reply was lost was never asked again.
TEST_CASE("a read asks again a replica whose request was lost", "[coordinator][read]") {
  Cluster c;
  c.seed_all(committed(write_req("k", "v", ts(2, -1000), "L")));
  c.hold = [](const Send& s) { return s.replica != 2; };  // replica 0 is down, the request to 1 is lost
  OpId op = c.get("k");  // asks 1 and 2
  c.held.clear();
  c.hold = to(0);
  CHECK_FALSE(c.done(op));
  c.advance_to(kHedge);
  ReadResult r = c.read_result(op);
  CHECK(r.status.is_ok());
  CHECK(r.value == "v");
}

TEST_CASE("a read asks another replica at once when one cannot be reached", "[coordinator][read]") {
  Cluster c;
  c.seed_all(committed(write_req("k", "v", ts(2, -1000), "L")));
  c.unreachable = {2};
  OpId op = c.get("k");
  CHECK(c.sent_to<wire::ReadRequest>() == std::vector<int>{1, 2, 0});
  CHECK(c.read_result(op).value == "v");
  CHECK(c.elapsed() == 0);
}

TEST_CASE("a read of a tombstone finds nothing and repairs the tombstone", "[coordinator][read]") {
  Cluster c;
  OpId w = c.put("k", "v", kFence3);  // operation 1
  REQUIRE(c.write_result(w).status.is_ok());
  c.hold = to(0);
  OpId d = c.del("k", kFence3);  // operation 2: replica 0 keeps the value
  WriteResult deleted = c.write_result(d);
  REQUIRE(deleted.status.is_ok());
  c.held.clear();
  c.hold = nullptr;
  REQUIRE_FALSE(c.replica(0).stored("k")->tombstone);

  size_t mark = c.log().size();
  OpId op = c.get("k");  // operation 3: asks 0 and 1
  ReadResult r = c.read_result(op);
  CHECK(r.status.is_ok());
  CHECK_FALSE(r.found);
  CHECK(r.value.empty());
  CHECK(r.ts == deleted.ts);
  auto repairs = c.sent<wire::WriteRequest>(mark);
  REQUIRE(repairs.size() == 1);
  CHECK(repairs[0].first == 0);
  CHECK(repairs[0].second.tombstone);
  CHECK(c.replica(0).stored("k")->tombstone);
}

TEST_CASE("equal timestamps with different content are ordered like the replicas order them", "[coordinator][read]") {
  const FencedTimestamp same = ts(4, -100);
  const auto alpha = committed(write_req("k", "alpha", same, "L"));
  const auto beta = committed(write_req("k", "beta", same, "L"));
  // What a replica keeps when it gets both, in either order.
  FakeReplica ab, ba;
  ab.call(alpha);
  ab.call(beta);
  ba.call(beta);
  ba.call(alpha);
  REQUIRE(ab.stored("k")->value == ba.stored("k")->value);
  const std::string winner = ab.stored("k")->value;

  for (bool swapped : {false, true}) {
    CAPTURE(swapped);
    Cluster c;
    c.seed(1, swapped ? beta : alpha);
    c.seed(2, swapped ? alpha : beta);
    OpId op = c.get("k");  // asks 1 and 2
    ReadResult r = c.read_result(op);
    CHECK(r.found);
    CHECK(r.value == winner);
    CHECK(r.ts == same);
    // The replica holding the other one is repaired to the winner.
    CHECK(c.replica(1).stored("k")->value == winner);
    CHECK(c.replica(2).stored("k")->value == winner);
  }
}

// ---- replicas that cannot answer, and versions replaced before they were read ----

TEST_CASE("a replica whose copy is corrupt is asked again at most every hedge_ms", "[coordinator][read]") {
  Cluster c;
  c.seed_all(committed(write_req("k", "old", ts(2, -1000), "L")));
  REQUIRE(c.replica(2).store.corrupt("k"));
  c.seed(1, write_req("k", "in flight", ts(5, -500), "L"));
  OpId op = c.get("k");  // asks 1 (pending copy) and 2 (corrupt: no version, no floor)
  for (uint64_t t = kHedge; t <= kTimeout && !c.done(op); t += kHedge) c.advance_to(t);
  ReadResult r = c.read_result(op);
  // Whether a corrupt copy may hide a copy of the pending version decides between
  // the two answers; a wrong value or a flood of requests is never right.
  CHECK((r.status.code() == Code::kUnavailable || (r.status.is_ok() && r.value == "old")));
  CHECK(c.sent<wire::ReadRequest>().size() <= kTimeout / kHedge + 4);
}

// Regression (review, /tmp/review-c/stale_repair.cc): a read repair decided
// while replica 0 lagged landed after a newer acknowledged version was stored
// there and its record damaged, and replaced the record: replicas 0 and 2 then
// agreed on the older version, and a read of them went back in time.
TEST_CASE("a read repair decided before a record was damaged does not replace it", "[coordinator][read]") {
  Cluster c;
  c.seed_all(committed(write_req("x", "v1", ts(3, -3000), "L")));
  for (int i : {1, 2}) c.seed(i, committed(write_req("x", "v2", ts(3, -2000), "L")));  // replica 0 missed v2
  // Reader P hears from replicas 1 (v2) and 0 (v1); its repair of replica 0 is delayed.
  c.unreachable = {2};
  c.hold = [](const Send& s) {
    const auto* w = std::get_if<wire::WriteRequest>(&s.request.body);
    return s.replica == 0 && w != nullptr && w->committed;
  };
  OpId p = c.get("x");
  REQUIRE(c.held.size() == 1);
  c.advance_to(kTimeout);
  REQUIRE(c.read_result(p).value == "v2");
  c.hold = nullptr;
  // v3 is acknowledged by replicas 0 and 1 (2 is down) and committed there.
  OpId w = c.put("x", "v3", kFence3);
  REQUIRE(c.write_result(w).status.is_ok());
  c.advance_to(kTimeout + kLazySend);
  REQUIRE(c.replica(0).stored("x")->value == "v3");
  // A bit flip in replica 0's record, then P's repair lands.
  REQUIRE(c.replica(0).store.corrupt("x"));
  c.release();
  CHECK(c.replica(0).call({0, wire::ReadRequest{"x"}}).status.code() == Code::kCorrupt);
  // Reader Q hears from replicas 0 and 2 only: never v2, v3 being acknowledged.
  c.unreachable = {1};
  OpId q = c.get("x");
  uint64_t t = kTimeout + kLazySend;
  while (!c.done(q)) c.advance_to(t += kHedge);
  ReadResult r = c.read_result(q);
  INFO(r.status.to_string() << " value=" << r.value);
  CHECK((r.status.code() == Code::kUnavailable || r.value == "v3"));
  // With replica 1 back, a read returns v3 (and repairs replica 2 with it).
  c.unreachable.clear();
  OpId last = c.get("x");
  while (!c.done(last)) c.advance_to(t += kHedge);
  CHECK(c.read_result(last).value == "v3");
  CHECK(c.replica(2).stored("x")->value == "v3");
}

// Regression (review): the answers a read repair is decided from may predate a
// newer version that the damaged record held (written after they were taken,
// then damaged); a repair decided from them replaced it with an older version.
TEST_CASE("answers taken before a damage was reported do not decide its repair", "[coordinator][read]") {
  Cluster c;
  c.seed_all(committed(write_req("x", "old", ts(3, -1000), "L")));
  bool block_reads = true;
  // Reads of replicas 0 and 2 wait; replica 2 misses every write.
  c.hold = [&block_reads](const Send& s) {
    if (s.replica == 2 && !is<wire::ReadRequest>(s)) return true;
    return block_reads && s.replica != 1 && is<wire::ReadRequest>(s);
  };
  OpId p = c.get("x");   // asks 1 ("old") and 2 (waits)
  c.advance_to(kHedge);  // asks 0 (waits)
  REQUIRE(c.sent_to<wire::ReadRequest>() == std::vector<int>{1, 2, 0, 2});
  // Meanwhile "new" is acknowledged by replicas 0 and 1 and committed there,
  // and then replica 0's record is damaged.
  OpId w = c.put("x", "new", kFence3);
  REQUIRE(c.write_result(w).status.is_ok());
  c.advance_to(kHedge + kLazySend);
  REQUIRE(c.replica(0).stored("x")->value == "new");
  REQUIRE(c.replica(0).store.corrupt("x"));
  const std::optional<uint64_t> damage = c.replica(0).store.key_digest("x").value();
  REQUIRE(damage);
  // Replica 0 answers `corrupt`; replica 1's answer predates that: it is asked again.
  block_reads = false;
  const size_t mark = c.log().size();
  c.release(to(0));
  CHECK(c.sent_to<wire::ReadRequest>(mark) == std::vector<int>{1});
  c.release([](const Send& s) { return s.replica == 2 && is<wire::ReadRequest>(s); });
  c.advance_to(kTimeout);
  ReadResult r = c.read_result(p);
  CHECK(r.status.is_ok());
  CHECK(r.value == "new");
  // Replica 0's repair named the damage, and carried "new", not "old".
  std::vector<wire::WriteRequest> repairs;
  for (const auto& [replica, write] : c.sent<wire::WriteRequest>(mark)) {
    if (replica == 0) repairs.push_back(write);
  }
  REQUIRE(repairs.size() == 1);
  CHECK(repairs[0].replaces == damage);
  CHECK(repairs[0].value == "new");
  CHECK(c.replica(0).stored("x")->value == "new");
}

TEST_CASE("a replica unreachable when asked for its floor does not make the coordinator spin",
          "[coordinator][read]") {
  Cluster c;
  c.seed(0, committed(write_req("k", "old", ts(2, -1000), "L")));
  c.seed(1, write_req("k", "in flight", ts(5, -500), "L"));
  // Replica 2 answers the first read (nothing stored), then drops off the network.
  c.hold = [&c](const Send& s) {
    const auto* read = std::get_if<wire::ReadRequest>(&s.request.body);
    if (s.replica == 2 && read != nullptr && !read->floor_of.empty()) c.unreachable.insert(2);
    return false;
  };
  OpId op = c.get("k");
  for (uint64_t t = kHedge; t <= kTimeout && !c.done(op); t += kHedge) c.advance_to(t);
  ReadResult r = c.read_result(op);
  CHECK(r.status.is_ok());
  CHECK(r.value == "old");
}

TEST_CASE("an acknowledged write is not purged when a failed newer write replaced one of its copies",
          "[coordinator][read][fence]") {
  Cluster c;
  // Token 3 writes "acked": replicas 0 and 1 store it (ok), its commits are lost,
  // replica 2 never gets it.
  c.hold = [](const Send& s) { return is<wire::CommitRequest>(s) || s.replica == 2; };
  OpId w = c.put("k", "acked", kFence3);
  REQUIRE(c.write_result(w).status.is_ok());
  c.held.clear();
  c.hold = nullptr;
  // The next holder (token 5) fences replicas 1 and 2, and its first write reaches
  // replica 1 alone, replacing the copy there, before the holder dies.
  c.seed(1, fence_req("L", 5));
  c.seed(2, fence_req("L", 5));
  c.seed(1, write_req("k", "failed", ts(5, 10), "L"));
  OpId op = c.get("k");
  for (uint64_t t = kHedge; t <= kTimeout && !c.done(op); t += kHedge) c.advance_to(t);
  ReadResult r = c.read_result(op);
  INFO(r.status.to_string() << " found=" << r.found << " value=" << r.value);
  CHECK((r.status.code() == Code::kUnavailable || (r.found && r.value == "acked")));
  CHECK(c.sent<wire::PurgeRequest>().empty());
  auto kept = c.replica(0).stored("k");
  CHECK((kept && kept->value == "acked"));
}

// ---- determinism ----

struct Run {
  std::vector<Send> sends;
  std::vector<client::Completion> completions;
};

Run scenario() {
  Cluster c;
  c.seed_all(committed(write_req("k", "old", ts(2, -1000), "L")));
  c.seed(2, fence_req("L", 6));
  c.hold = [](const Send& s) { return s.replica == 1 && is<wire::CommitRequest>(s); };
  c.unreachable = {0};
  c.put("k", "a", {"L", 4});
  c.put("j", "b", {});
  c.get("k");
  c.advance_to(kHedge);
  c.unreachable.clear();
  c.fence({"L", 7});
  c.get("j");
  c.advance_to(2 * kHedge);
  c.release();
  c.del("k", {"L", 7});
  c.get("k");
  c.advance_to(kTimeout);
  c.advance_to(2 * kTimeout);
  return {c.log(), c.completions};
}

TEST_CASE("the same calls yield the same sends and results", "[coordinator]") {
  Run a = scenario(), b = scenario();
  REQUIRE(a.sends.size() == b.sends.size());
  CHECK(a.sends.size() > 20);
  for (size_t i = 0; i < a.sends.size(); ++i) {
    CAPTURE(i);
    CHECK(a.sends[i].replica == b.sends[i].replica);
    CHECK(a.sends[i].request == b.sends[i].request);
  }
  REQUIRE(a.completions.size() == b.completions.size());
  CHECK(a.completions.size() == 7);
  for (size_t i = 0; i < a.completions.size(); ++i) {
    CAPTURE(i);
    CHECK(a.completions[i].op == b.completions[i].op);
    REQUIRE(a.completions[i].result.index() == b.completions[i].result.index());
    if (const auto* w = std::get_if<WriteResult>(&a.completions[i].result)) {
      const auto& v = std::get<WriteResult>(b.completions[i].result);
      CHECK(w->status.to_string() == v.status.to_string());
      CHECK(w->ts == v.ts);
      CHECK(w->floor == v.floor);
    } else {
      const auto& r = std::get<ReadResult>(a.completions[i].result);
      const auto& s = std::get<ReadResult>(b.completions[i].result);
      CHECK(r.status.to_string() == s.status.to_string());
      CHECK(r.found == s.found);
      CHECK(r.value == s.value);
      CHECK(r.ts == s.ts);
    }
  }
}

// ---- the replica set version (docs/design.md "The replica set") ----

// A config certificate of `version` for the replicas the tests' coordinator
// talks to, unsigned: the fake replicas check no sequencers, and take it
// unchecked as a --insecure replica does.
std::string unsigned_certificate(uint64_t version, wire::ReplicaPhase phase = wire::ReplicaPhase::kServing) {
  wire::ReplicaSet set{.version = version, .phase = phase, .replicas = {}, .write_quorum = 2, .read_quorum = 2};
  for (uint32_t i = 1; i <= 3; ++i) set.replicas.push_back({i, "tcp://127.0.0.1:" + std::to_string(7400 + i)});
  return wire::join_config_certificate(wire::encode_replica_set(set), std::string(64, 's'));
}

uint64_t kept_version(FakeReplica& r) {
  ReplicaReply stats = r.call({0, wire::StatsRequest{}});
  REQUIRE(stats.stats);
  return stats.stats->config_version;
}

TEST_CASE("coordinator: every request names its replica set version, and a replica that does not know it gets "
          "the certificate first",
          "[coordinator][config]") {
  CoordinatorOptions options;
  options.config = 5;
  options.config_certificate = unsigned_certificate(5);
  Cluster c(options);
  c.seed(0, {0, wire::InstallConfigRequest{unsigned_certificate(5)}, "", 0});
  OpId put = c.put("k", "v", {});
  // Replicas 1 and 2 keep no set: they refuse version 5, get the certificate,
  // and the write again after a hedge.
  CHECK_FALSE(c.done(put));
  CHECK(c.sent_to<wire::InstallConfigRequest>() == std::vector<int>{1, 2});
  c.advance_to(kHedge);
  REQUIRE(c.done(put));
  CHECK(c.write_result(put).status.is_ok());
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(kept_version(c.replica(i)) == 5);
    CHECK(c.replica(i).stored("k", 5).has_value());
  }
  OpId get = c.get("k");
  REQUIRE(c.done(get));
  CHECK(c.read_result(get).value == "v");
  for (const Send& s : c.log()) CHECK(s.request.config == 5);
  // One certificate per replica: the replicas knew it from then on.
  CHECK(c.sent<wire::InstallConfigRequest>().size() == 2);

  SECTION("without the certificate the replicas go on refusing, and the write fails") {
    CoordinatorOptions bare;
    bare.config = 5;
    Cluster d(bare);
    OpId refused = d.put("k", "v", {});
    d.advance_to(kTimeout);
    REQUIRE(d.done(refused));
    CHECK(d.write_result(refused).status.code() == Code::kUnavailable);
    CHECK(d.sent<wire::InstallConfigRequest>().empty());
  }
}

TEST_CASE("coordinator: a read too is sent again once the replica installed the set", "[coordinator][config]") {
  CoordinatorOptions options;
  options.config = 2;
  options.config_certificate = unsigned_certificate(2);
  Cluster c(options);
  OpId get = c.get("k");
  CHECK_FALSE(c.done(get));
  c.advance_to(kHedge);
  REQUIRE(c.done(get));
  CHECK(c.read_result(get).status.is_ok());
  CHECK_FALSE(c.read_result(get).found);
}

TEST_CASE("coordinator: the certificates of a newer set that replicas hand back are reported, each once",
          "[coordinator][config]") {
  Cluster c;  // version 0: the cluster file's list
  for (int i = 0; i < 2; ++i) c.seed(i, {0, wire::InstallConfigRequest{unsigned_certificate(3)}, "", 0});
  CHECK(c.coord().take_newer_configs().empty());
  OpId put = c.put("k", "v", {});
  c.advance_to(kTimeout);
  REQUIRE(c.done(put));
  // Two of three refused: the write cannot reach W on this set.
  CHECK(c.write_result(put).status.code() == Code::kUnavailable);
  CHECK_THAT(c.write_result(put).status.message(), Catch::Contains("stale_config"));
  CHECK(c.coord().take_newer_configs() == std::vector<std::string>{unsigned_certificate(3)});
  CHECK(c.coord().take_newer_configs().empty());
  CHECK_FALSE(c.replica(0).stored("k", 3).has_value());
}

// A replacement pauses the set for some milliseconds: a write waits it out,
// asking again each hedge, and learns the next set from the refusals that
// follow.
TEST_CASE("coordinator: over a paused set, a write waits out the pause instead of failing", "[coordinator][config]") {
  const std::string paused = unsigned_certificate(4, wire::ReplicaPhase::kPaused);
  CoordinatorOptions options;
  options.config = 4;
  options.config_certificate = paused;
  options.paused = true;
  Cluster c(options);
  for (int i = 0; i < 3; ++i) c.seed(i, {0, wire::InstallConfigRequest{paused}, "", 0});
  OpId put = c.put("k", "v", {});
  for (uint64_t t = kHedge; t <= 3 * kHedge; t += kHedge) c.advance_to(t);
  CHECK_FALSE(c.done(put));  // every replica refused it, transiently
  CHECK(c.sent<wire::WriteRequest>().size() == 12);  // sent again each hedge
  // The next set: its replicas say so, and the caller moves there.
  const std::string next = unsigned_certificate(5);
  for (int i = 0; i < 3; ++i) c.seed(i, {0, wire::InstallConfigRequest{next}, "", 0});
  c.advance_to(5 * kHedge);
  CHECK(c.coord().take_newer_configs() == std::vector<std::string>{next});
  CHECK_FALSE(c.replica(0).stored("k", 5).has_value());

  SECTION("without `paused` the refusals end it at once") {
    CoordinatorOptions serving = options;
    serving.paused = false;
    Cluster d(serving);
    for (int i = 0; i < 3; ++i) d.seed(i, {0, wire::InstallConfigRequest{paused}, "", 0});
    OpId refused = d.put("k", "v", {});
    REQUIRE(d.done(refused));
    CHECK(d.write_result(refused).status.code() == Code::kUnavailable);
  }
  SECTION("a pause that outlasts the timeout ends the write unavailable, at the deadline") {
    Cluster e(options);
    for (int i = 0; i < 3; ++i) e.seed(i, {0, wire::InstallConfigRequest{paused}, "", 0});
    OpId late = e.put("late", "v", {});
    e.advance_to(kTimeout - kHedge);
    CHECK_FALSE(e.done(late));
    e.advance_to(kTimeout);
    REQUIRE(e.done(late));
    CHECK(e.write_result(late).status.code() == Code::kUnavailable);
    CHECK_THAT(e.write_result(late).status.message(), Catch::Contains("replica set version 4 is paused"));
  }
}

}  // namespace
}  // namespace palisade
