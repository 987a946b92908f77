// The replica rules (docs/design.md "Replicas") as a table of cases, run through the
// sans-I/O handler on the in-memory store.
#include <catch2/catch.hpp>

#include "base/hybrid_clock.h"
#include "auth/config_certificate.h"
#include "auth/repair_seal.h"
#include "replica/handler.h"
#include "replica/merkle.h"
#include "replica/memory_store.h"
#include "client/replica_connection.h"
#include "tests/support/forwarding_store.h"
#include "tests/support/replica_requests.h"
#include "tests/support/sequencers.h"

namespace palisade {
namespace {

using test::commit_req;
using test::delete_req;
using test::fence_req;
using test::fenced_read_req;
using test::purge_req;
using test::read_req;
using test::with_sequencer;
using test::write_req;
using wire::ReplicaReply;
using wire::ReplicaRequest;
using wire::VersionState;

constexpr uint64_t kNowMs = 1'700'000'000'000;

FencedTimestamp ts(uint64_t token, uint64_t ms_offset = 0, uint64_t logical = 0) {
  return {token, hlc::make(kNowMs + ms_offset, logical)};
}

struct Replica {
  explicit Replica(std::optional<replica::ReplicaAuth> auth = std::nullopt) : handler{store, clock, std::move(auth)} {}

  ManualClock physical{kNowMs};
  HybridClock clock{physical};
  replica::MemoryStore store;
  replica::ReplicaHandler handler{store, clock};

  ReplicaReply call(ReplicaRequest r) {
    auto replies = handler.handle_batch(std::span<const ReplicaRequest>(&r, 1));
    REQUIRE(replies.size() == 1);
    return replies[0];
  }
  // All versions of the key, newest first.
  std::vector<wire::Version> versions(const std::string& key) {
    auto r = call(read_req(key));
    REQUIRE(r.status.is_ok());
    return r.versions;
  }
  // The newest version of the key.
  std::optional<wire::Version> stored(const std::string& key) {
    auto v = versions(key);
    return v.empty() ? std::nullopt : std::optional(v.front());
  }
  // The fence floor of `lock`.
  uint64_t floor(const std::string& lock) {
    auto r = read_req("no such key");
    std::get<wire::ReadRequest>(r.body).floor_of = lock;
    ReplicaReply reply = call(r);
    REQUIRE(reply.status.is_ok());
    return reply.floors.at(lock);
  }
  // Writes and commits: an acknowledged version.
  void committed_write(ReplicaRequest w) {
    const auto& req = std::get<wire::WriteRequest>(w.body);
    REQUIRE(call(w).status.is_ok());
    REQUIRE(call(commit_req(req.key, req.ts)).applied);
  }
};

TEST_CASE("write rules: fenced, stale, idempotent, stored as pending", "[replica]") {
  struct Case {
    const char* name;
    std::vector<ReplicaRequest> committed_before;  // written and committed first
    ReplicaRequest request;
    Code code;
    std::optional<std::string> newest_after;  // newest value stored for "k" afterwards
  };
  const std::vector<Case> cases = {
      {"first write is stored", {}, write_req("k", "a", ts(1), "L"), Code::kOk, "a"},
      {"unfenced first write is stored", {}, write_req("k", "a", ts(0)), Code::kOk, "a"},
      {"older than the committed version is stale", {write_req("k", "new", ts(3, 10), "L")},
       write_req("k", "old", ts(3, 5), "L"), Code::kStale, "new"},
      {"higher token beats a later clock", {write_req("k", "old", ts(3, 100), "L")}, write_req("k", "new", ts(4, 0), "L"),
       Code::kOk, "new"},
      {"lower token loses to an earlier clock even on another lock", {write_req("k", "new", ts(4, 0), "M")},
       write_req("k", "old", ts(3, 100), "L"), Code::kStale, "new"},
      {"unfenced write loses to a fenced one", {write_req("k", "fenced", ts(1, 0), "L")},
       write_req("k", "plain", ts(0, 100)), Code::kStale, "fenced"},
      {"same timestamp same content is idempotent", {write_req("k", "a", ts(2), "L")}, write_req("k", "a", ts(2), "L"),
       Code::kOk, "a"},
      {"tombstone is a write", {write_req("k", "a", ts(2), "L")}, delete_req("k", ts(2, 1), "L"), Code::kOk, ""},
      {"older tombstone is stale", {write_req("k", "a", ts(2, 5), "L")}, delete_req("k", ts(2, 1), "L"), Code::kStale,
       "a"},
      {"token without lock is refused", {}, write_req("k", "a", ts(3)), Code::kBadRequest, std::nullopt},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      Replica r;
      for (const auto& b : c.committed_before) r.committed_write(b);
      ReplicaReply reply = r.call(c.request);
      CHECK(reply.status.code() == c.code);
      auto v = r.stored("k");
      REQUIRE(v.has_value() == c.newest_after.has_value());
      if (v) CHECK(v->value == *c.newest_after);
    }
  }
}

TEST_CASE("fence floors: below is fenced, equal is accepted, other locks do not count", "[replica]") {
  Replica r;
  r.call(fence_req("L", 5));
  r.call(fence_req("M", 9));
  CHECK(r.call(write_req("a", "x", ts(4), "L")).status.code() == Code::kFenced);
  CHECK(r.call(write_req("b", "x", ts(5), "L")).status.is_ok());
  CHECK(r.call(write_req("c", "x", ts(6), "L")).status.is_ok());
  CHECK_FALSE(r.stored("a"));
  CHECK(r.stored("b"));
}

TEST_CASE("pending versions are kept side by side, newest first, until one is committed", "[replica]") {
  Replica r;
  r.committed_write(write_req("k", "base", ts(1), "L"));
  CHECK(r.call(write_req("k", "p2", ts(2, 5), "L")).status.is_ok());
  CHECK(r.call(write_req("k", "p1", ts(2, 1), "L")).status.is_ok());  // older than a pending one: kept too
  auto v = r.versions("k");
  REQUIRE(v.size() == 3);
  CHECK(v[0].value == "p2");
  CHECK(v[1].value == "p1");
  CHECK(v[2].value == "base");
  CHECK(v[2].state == VersionState::kCommitted);
  REQUIRE(r.call(commit_req("k", ts(2, 1))).applied);  // drops everything older than p1
  v = r.versions("k");
  REQUIRE(v.size() == 2);
  CHECK(v[0].value == "p2");
  CHECK(v[1].value == "p1");
  CHECK(v[1].state == VersionState::kCommitted);
  CHECK(r.call(write_req("k", "late", ts(2, 0), "L")).status.code() == Code::kStale);
}

TEST_CASE("a key with too many unresolved writes refuses more for now", "[replica]") {
  Replica r;
  uint64_t logical = 0;
  while (r.call(write_req("k", "v", ts(1, 0, ++logical), "L")).status.is_ok()) REQUIRE(logical < 100);
  CHECK(logical == wire::Limits::kMaxVersionsPerKey);
  CHECK(r.call(write_req("k", "v", ts(1, 0, ++logical), "L")).status.code() == Code::kUnavailable);
  CHECK(r.versions("k").size() == wire::Limits::kMaxVersionsPerKey - 1);
  REQUIRE(r.call(commit_req("k", ts(1, 0, 2))).applied);
  CHECK(r.call(write_req("k", "v", ts(1, 0, ++logical), "L")).status.is_ok());
}

TEST_CASE("a fenced write names the floor and raises nothing", "[replica]") {
  Replica r;
  REQUIRE(r.call(fence_req("L", 7)).floor == 7);
  ReplicaReply reply = r.call(write_req("k", "x", ts(6), "L"));
  CHECK(reply.status.code() == Code::kFenced);
  CHECK(reply.floor == 7);
  CHECK_FALSE(r.stored("k"));
}

TEST_CASE("an accepted write raises the fence floor of its lock", "[replica]") {
  Replica r;
  REQUIRE(r.call(write_req("k", "x", ts(9), "L")).status.is_ok());
  CHECK(r.call(fence_req("L", 3)).floor == 9);
  CHECK(r.call(write_req("other", "y", ts(8), "L")).status.code() == Code::kFenced);
}

TEST_CASE("the handler lists the fence floors each batch raised, and none of a batch that failed", "[replica]") {
  using Raises = std::vector<replica::ReplicaHandler::FloorRaise>;
  Replica r;
  r.call(fence_req("L", 5));
  CHECK(r.handler.floors_raised() == Raises{{"L", 5}});
  r.call(fence_req("L", 5));  // at the floor: nothing rose
  CHECK(r.handler.floors_raised().empty());
  REQUIRE(r.call(write_req("k", "x", ts(7), "L")).status.is_ok());
  CHECK(r.handler.floors_raised() == Raises{{"L", 7}});
  REQUIRE(r.call(write_req("k2", "x", ts(7), "L")).status.is_ok());
  CHECK(r.handler.floors_raised().empty());
  REQUIRE(r.call(write_req("k3", "x", ts(3), "L")).status.code() == Code::kFenced);
  CHECK(r.handler.floors_raised().empty());
  auto repair = write_req("k4", "x", ts(9), "L");
  std::get<wire::WriteRequest>(repair.body).committed = true;
  REQUIRE(r.call(repair).status.is_ok());
  CHECK(r.handler.floors_raised() == Raises{{"L", 9}});

  std::vector<ReplicaRequest> batch = {fence_req("M", 2), read_req("k"), fence_req("M", 3), fence_req("N", 1)};
  r.handler.handle_batch(batch);
  CHECK(r.handler.floors_raised() == Raises{{"M", 2}, {"M", 3}, {"N", 1}});
  r.store.fail_next_commit();
  batch = {fence_req("M", 4)};
  REQUIRE(r.handler.handle_batch(batch)[0].status.code() == Code::kStorageError);
  CHECK(r.handler.floors_raised().empty());
}

TEST_CASE("a stale write names the committed timestamp", "[replica]") {
  Replica r;
  r.committed_write(write_req("k", "x", ts(2, 50), "L"));
  ReplicaReply reply = r.call(write_req("k", "y", ts(2, 10), "L"));
  CHECK(reply.status.code() == Code::kStale);
  REQUIRE(reply.stored_ts);
  CHECK(*reply.stored_ts == ts(2, 50));
}

TEST_CASE("equal timestamps with different content are ordered the same on every replica", "[replica]") {
  auto a = write_req("k", "alpha", ts(3), "L");
  auto b = write_req("k", "beta", ts(3), "L");
  Replica ab, ba;
  ab.call(a);
  ab.call(b);
  ba.call(b);
  ba.call(a);
  REQUIRE(ab.versions("k").size() == 2);
  CHECK(ab.versions("k") == ba.versions("k"));
}

TEST_CASE("writes are pending until committed, and commit of another timestamp changes nothing", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(1), "L"));
  CHECK(r.stored("k")->state == VersionState::kPending);
  CHECK_FALSE(r.call(commit_req("k", ts(1, 1))).applied);
  CHECK(r.stored("k")->state == VersionState::kPending);
  CHECK(r.call(commit_req("k", ts(1))).applied);
  CHECK(r.stored("k")->state == VersionState::kCommitted);
  CHECK_FALSE(r.call(commit_req("missing", ts(1))).applied);
}

// Regression (simulator seed 13065): a duplicated write answered "fenced" after
// the floor rose made its writer believe it was not stored, though it was.
TEST_CASE("a duplicate of a stored write is ok even after the floor rose", "[replica]") {
  Replica r;
  auto w = write_req("k", "x", ts(2), "L");
  REQUIRE(r.call(w).status.is_ok());
  r.call(fence_req("L", 3));
  CHECK(r.call(w).status.is_ok());
  CHECK(r.call(write_req("k", "y", ts(2, 1), "L")).status.code() == Code::kFenced);
}

// Regression (simulator seed 187232): the same, after a newer commit dropped the
// version. The replica cannot tell that duplicate from a new write, so its
// refusal names what it dropped, and the writer does not count it as final.
TEST_CASE("a refusal names the newest version dropped with the write's token", "[replica]") {
  Replica r;
  auto w = write_req("k", "x", ts(2, 10), "L");
  REQUIRE(r.call(w).status.is_ok());
  r.call(fence_req("L", 3));
  r.committed_write(write_req("k", "y", ts(3, 20), "L"));  // drops x
  const ReplicaReply dup = r.call(w);
  CHECK(dup.status.code() == Code::kFenced);
  REQUIRE(dup.dropped);
  CHECK(*dup.dropped == ts(2, 10));
  // A write of token 2 newer than anything dropped was never stored here: final.
  const ReplicaReply newer = r.call(write_req("k", "z", ts(2, 11), "L"));
  CHECK(newer.status.code() == Code::kFenced);
  CHECK_FALSE(newer.dropped);
  // So was one of a token this replica dropped nothing of.
  CHECK_FALSE(r.call(write_req("k", "z", ts(1, 5), "L")).dropped);
  // Stale refusals name it too: y dropped by a newer write of token 3.
  r.committed_write(write_req("k", "y2", ts(3, 30), "L"));
  const ReplicaReply stale = r.call(write_req("k", "y", ts(3, 20), "L"));
  CHECK(stale.status.code() == Code::kStale);
  REQUIRE(stale.dropped);
  CHECK(*stale.dropped == ts(3, 20));
}

TEST_CASE("a repair that drops versions records them as a commit does", "[replica]") {
  Replica r;
  auto w = write_req("k", "x", ts(2, 10), "L");
  REQUIRE(r.call(w).status.is_ok());
  r.call(fence_req("L", 5));
  auto repair = write_req("k", "y", ts(4, 10), "L");
  std::get<wire::WriteRequest>(repair.body).committed = true;
  REQUIRE(r.call(repair).status.is_ok());
  const ReplicaReply dup = r.call(w);
  CHECK(dup.status.code() == Code::kFenced);
  CHECK(dup.dropped == ts(2, 10));
}

TEST_CASE("what a replica dropped is kept per token for the newest tokens, and bounds the older ones",
          "[replica]") {
  Replica r;
  const size_t kept = replica::Versions::kDroppedTokensKept;
  r.committed_write(write_req("k", "unfenced", ts(0, 1)));
  for (uint64_t token = 1; token <= kept + 2; ++token) {
    r.committed_write(write_req("k", "v" + std::to_string(token), ts(token, token * 10), "L"));
  }
  // Dropped: token 0 and tokens 1 .. kept + 1 (kept + 2 is committed). Token 0
  // and the kept - 1 newest fenced tokens are kept; tokens 1 and 2 are not.
  auto dropped_of = [&](const FencedTimestamp& t, const std::string& lock) {
    return r.call(write_req("k", "late", t, lock)).dropped;
  };
  CHECK(dropped_of(ts(0, 0), "") == ts(0, 1));  // unfenced writes keep their own entry
  CHECK_FALSE(dropped_of(ts(0, 2), ""));         // newer than the unfenced one dropped
  CHECK(dropped_of(ts(kept + 1, 1), "L") == ts(kept + 1, (kept + 1) * 10));  // a kept token
  CHECK(dropped_of(ts(3, 5), "L") == ts(3, 30));                              // the oldest kept
  // The newest forgotten version bounds every fenced token up to its own.
  CHECK(dropped_of(ts(1, 99), "L") == ts(2, 20));
  CHECK(dropped_of(ts(2, 5), "L") == ts(2, 20));
  CHECK_FALSE(dropped_of(ts(2, 21), "L"));
}

TEST_CASE("commit and purge with a content hash pick that version among equal timestamps", "[replica]") {
  Replica r;
  auto a = write_req("k", "alpha", ts(3), "L");
  auto b = write_req("k", "beta", ts(3), "L");
  r.call(a);
  r.call(b);
  const auto& aw = std::get<wire::WriteRequest>(a.body);
  uint64_t alpha = wire::content_hash(wire::Version{aw.ts, aw.lock, VersionState::kPending, false, aw.value});
  auto commit = commit_req("k", ts(3));
  std::get<wire::CommitRequest>(commit.body).hash = alpha;
  REQUIRE(r.call(commit).applied);
  bool alpha_committed = false;
  for (const auto& v : r.versions("k")) alpha_committed |= v.value == "alpha" && v.state == VersionState::kCommitted;
  CHECK(alpha_committed);
  auto purge = purge_req("k", ts(3));
  std::get<wire::PurgeRequest>(purge.body).hash = alpha;
  CHECK_FALSE(r.call(purge).applied);  // committed: never purged
}

// A commit carried by a write: wire::WriteRequest::commits.
wire::CommitRequest carried(const ReplicaRequest& w) {
  const auto& req = std::get<wire::WriteRequest>(w.body);
  return {req.key, req.ts, wire::content_hash(wire::Version{req.ts, req.lock, VersionState::kPending, req.tombstone,
                                                            req.value})};
}

ReplicaRequest carrying(ReplicaRequest w, std::vector<wire::CommitRequest> commits) {
  std::get<wire::WriteRequest>(w.body).commits = std::move(commits);
  return w;
}

TEST_CASE("commits carried by a write apply as commit requests would", "[replica]") {
  Replica r;
  auto a = write_req("a", "x", ts(1), "L");
  auto b = write_req("b", "y", ts(1, 1), "L");
  r.call(a);
  r.call(b);
  auto named_otherwise = carried(b);
  named_otherwise.hash = *named_otherwise.hash + 1;  // names no stored version: nothing happens
  REQUIRE(r.call(carrying(write_req("c", "z", ts(1, 2), "L"), {carried(a), named_otherwise})).status.is_ok());
  CHECK(r.stored("a")->state == VersionState::kCommitted);
  CHECK(r.stored("b")->state == VersionState::kPending);
  CHECK(r.stored("c")->state == VersionState::kPending);  // the carrier itself stays pending
}

TEST_CASE("commits carried by a refused write still apply", "[replica]") {
  Replica r;
  auto a = write_req("a", "x", ts(1), "L");
  r.call(a);
  r.call(fence_req("L", 2));
  auto refused = r.call(carrying(write_req("k", "late", ts(1, 1), "L"), {carried(a)}));
  CHECK(refused.status.code() == Code::kFenced);
  CHECK(r.stored("a")->state == VersionState::kCommitted);
  CHECK_FALSE(r.stored("k"));
  auto b = write_req("b", "y", ts(2), "L");
  r.call(b);
  CHECK(r.call(carrying(write_req("", "v", ts(2, 1), "L"), {carried(b)})).status.code() == Code::kBadRequest);
  CHECK(r.stored("b")->state == VersionState::kCommitted);
}

TEST_CASE("carried commits apply before the write that carries them", "[replica]") {
  Replica r;
  auto newer = write_req("k", "new", ts(1, 5), "L");
  r.call(newer);
  // Committed first, the newer version makes this older write stale; the other
  // order would store it and then drop it, answering ok.
  auto reply = r.call(carrying(write_req("k", "old", ts(1), "L"), {carried(newer)}));
  CHECK(reply.status.code() == Code::kStale);
  CHECK(r.stored("k")->value == "new");
  CHECK(r.stored("k")->state == VersionState::kCommitted);
}

TEST_CASE("a write carrying the commit of an earlier version of its own key", "[replica]") {
  Replica r;
  auto first = write_req("k", "x", ts(1), "L");
  r.call(first);
  REQUIRE(r.call(carrying(write_req("k", "y", ts(1, 1), "L"), {carried(first)})).status.is_ok());
  auto v = r.versions("k");
  REQUIRE(v.size() == 2);
  CHECK((v[0].value == "y" && v[0].state == VersionState::kPending));
  CHECK((v[1].value == "x" && v[1].state == VersionState::kCommitted));
}

TEST_CASE("an idempotent retry does not undo a commit", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(1), "L"));
  r.call(commit_req("k", ts(1)));
  CHECK(r.call(write_req("k", "x", ts(1), "L")).status.is_ok());
  CHECK(r.stored("k")->state == VersionState::kCommitted);
}

TEST_CASE("purge drops only the named pending version", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(1), "L"));
  r.call(write_req("k", "y", ts(2), "L"));
  CHECK_FALSE(r.call(purge_req("k", ts(1, 1))).applied);
  CHECK(r.call(purge_req("k", ts(2))).applied);
  CHECK(r.stored("k")->value == "x");
  CHECK(r.call(purge_req("k", ts(1))).applied);
  CHECK_FALSE(r.stored("k"));
  r.committed_write(write_req("c", "y", ts(2), "L"));
  CHECK_FALSE(r.call(purge_req("c", ts(2))).applied);
  CHECK(r.stored("c"));
}

TEST_CASE("read returns the versions, their state and the fence floors of their locks", "[replica]") {
  Replica r;
  r.committed_write(write_req("k", "x", ts(4), "L"));
  r.call(write_req("k", "y", ts(5), "M"));
  r.call(fence_req("L", 6));
  ReplicaReply reply = r.call(read_req("k"));
  REQUIRE(reply.versions.size() == 2);
  CHECK(reply.newest()->value == "y");
  CHECK(reply.newest()->lock == "M");
  CHECK(reply.newest()->state == VersionState::kPending);
  CHECK(reply.versions[1].value == "x");
  CHECK(reply.versions[1].ts == ts(4));
  CHECK(reply.versions[1].state == VersionState::kCommitted);
  CHECK(reply.floors == std::map<std::string, uint64_t>{{"L", 6}, {"M", 5}});
  CHECK(reply.clock > 0);
  CHECK(r.call(read_req("absent")).versions.empty());
}

TEST_CASE("read with floor_of reports that lock's floor, also for a missing key", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(4), "L"));
  r.call(fence_req("M", 8));
  auto req = read_req("k");
  std::get<wire::ReadRequest>(req.body).floor_of = "M";
  CHECK(r.call(req).floors.at("M") == 8);
  auto missing = read_req("absent");
  std::get<wire::ReadRequest>(missing.body).floor_of = "M";
  ReplicaReply reply = r.call(missing);
  CHECK(reply.versions.empty());
  CHECK(reply.floors.at("M") == 8);
}

// The fenced read closes the gap a fence alone leaves: the versions it
// answers with are all this replica will ever hold under older tokens.
TEST_CASE("a fenced read raises the floor, then answers, in one step", "[replica]") {
  Replica r;
  REQUIRE(r.call(write_req("k", "old", ts(3), "L")).status.is_ok());
  ReplicaReply reply = r.call(fenced_read_req("k", "L", 7));
  REQUIRE(reply.status.is_ok());
  REQUIRE(reply.versions.size() == 1);
  CHECK(reply.versions[0].value == "old");  // stored before the fence: still answered
  CHECK(reply.floor == 7);
  CHECK(reply.floors.at("L") == 7);
  CHECK(r.handler.floors_raised() == std::vector<replica::ReplicaHandler::FloorRaise>{{"L", 7}});
  // A write of an earlier holder that comes after it is refused for good.
  CHECK(r.call(write_req("k", "late", ts(5), "L")).status.code() == Code::kFenced);
  CHECK(r.call(write_req("other", "late", ts(6), "L")).status.code() == Code::kFenced);
  CHECK(r.call(write_req("k", "holder", ts(7, 1), "L")).status.is_ok());
  // Below the floor it raises nothing, and reports the floor, as a fence does;
  // a key never written is answered too.
  reply = r.call(fenced_read_req("absent", "L", 4));
  REQUIRE(reply.status.is_ok());
  CHECK(reply.versions.empty());
  CHECK(reply.floor == 7);
  CHECK(reply.floors.at("L") == 7);
  CHECK(r.handler.floors_raised().empty());
  // Reads of one batch see the fence that came before them in it.
  std::vector<ReplicaRequest> batch = {fenced_read_req("k", "M", 2), read_req("k")};
  std::get<wire::ReadRequest>(batch[1].body).floor_of = "M";
  auto replies = r.handler.handle_batch(batch);
  CHECK(replies[1].floors.at("M") == 2);
}

TEST_CASE("a fenced read is refused as its fence would be, and changes nothing", "[replica]") {
  Replica r;
  REQUIRE(r.call(write_req("k", "x", ts(3), "L")).status.is_ok());
  ReplicaReply bad = r.call(fenced_read_req("k", "L", 0));
  CHECK(bad.status.code() == Code::kBadRequest);
  CHECK(bad.versions.empty());
  CHECK(r.floor("L") == 3);
  // A replica whose disk failed serves plain reads, not fenced ones.
  r.store.fail_next_commit();
  REQUIRE(r.call(fence_req("L", 4)).status.code() == Code::kStorageError);
  CHECK(r.call(read_req("k")).status.is_ok());
  ReplicaReply failed = r.call(fenced_read_req("k", "L", 5));
  CHECK(failed.status.code() == Code::kStorageError);
  CHECK(failed.versions.empty());
}

TEST_CASE("a committed write stores the version committed and upgrades an equal pending one", "[replica]") {
  Replica r;
  auto repair = write_req("k", "x", ts(4), "L");
  std::get<wire::WriteRequest>(repair.body).committed = true;
  r.call(write_req("k", "x", ts(4), "L"));
  CHECK(r.stored("k")->state == VersionState::kPending);
  CHECK(r.call(repair).status.is_ok());
  CHECK(r.stored("k")->state == VersionState::kCommitted);
  auto fresh = write_req("j", "y", ts(4), "L");
  std::get<wire::WriteRequest>(fresh.body).committed = true;
  r.call(fresh);
  CHECK(r.stored("j")->state == VersionState::kCommitted);
}

TEST_CASE("a committed repair is not refused by a floor raised after it was acknowledged", "[replica]") {
  Replica r;
  r.call(fence_req("L", 9));
  auto repair = write_req("k", "x", ts(4), "L");
  CHECK(r.call(repair).status.code() == Code::kFenced);
  std::get<wire::WriteRequest>(repair.body).committed = true;
  CHECK(r.call(repair).status.is_ok());
  CHECK(r.stored("k")->value == "x");
  CHECK(r.call(fence_req("L", 1)).floor == 9);
}

TEST_CASE("a committed write keeps newer pending versions and drops older ones", "[replica]") {
  Replica r;
  r.call(write_req("k", "old", ts(1), "L"));
  r.call(write_req("k", "new", ts(3), "L"));
  auto repair = write_req("k", "mid", ts(2), "L");
  std::get<wire::WriteRequest>(repair.body).committed = true;
  REQUIRE(r.call(repair).status.is_ok());
  auto v = r.versions("k");
  REQUIRE(v.size() == 2);
  CHECK(v[0].value == "new");
  CHECK(v[1].value == "mid");
  CHECK(v[1].state == VersionState::kCommitted);
}

TEST_CASE("bad writes are refused without changing anything", "[replica]") {
  Replica r;
  CHECK(r.call(write_req("", "x", ts(1), "L")).status.code() == Code::kBadRequest);
  CHECK(r.call(write_req("k", "x", ts(0), "L")).status.code() == Code::kBadRequest);
  CHECK(r.call(write_req("k", "x", ts(1), "")).status.code() == Code::kBadRequest);
  CHECK(r.call(fence_req("", 1)).status.code() == Code::kBadRequest);
  CHECK(r.call(fence_req("L", 0)).status.code() == Code::kBadRequest);
  CHECK_FALSE(r.stored("k"));
}

TEST_CASE("a timestamp too far in the future is refused as clock skew", "[replica]") {
  Replica r;
  CHECK(r.call(write_req("k", "x", ts(1, 501), "L")).status.code() == Code::kClockSkew);
  CHECK_FALSE(r.stored("k"));
  CHECK(r.call(write_req("k", "x", ts(1, 499), "L")).status.is_ok());
}

TEST_CASE("replies carry a clock past every timestamp the replica accepted", "[replica]") {
  Replica r;
  ReplicaReply reply = r.call(write_req("k", "x", ts(1, 400), "L"));
  CHECK(reply.clock > ts(1, 400).hlc);
}

// Regression (review): a plain write over a corrupt record could replace the
// committed version it held with an older one, and reads went back in time.
TEST_CASE("a corrupt version is reported, never returned, and replaced only by a repair", "[replica]") {
  Replica r;
  r.committed_write(write_req("k", "new", ts(5, 10), "L"));
  REQUIRE(r.store.corrupt("k"));
  CHECK(r.call(read_req("k")).status.code() == Code::kCorrupt);
  CHECK(r.call(read_req("k")).versions.empty());
  CHECK(r.call(write_req("k", "older", ts(5, 1), "L")).status.code() == Code::kCorrupt);
  CHECK(r.call(read_req("k")).status.code() == Code::kCorrupt);
  auto repair = write_req("k", "new", ts(5, 10), "L");
  std::get<wire::WriteRequest>(repair.body).committed = true;
  std::get<wire::WriteRequest>(repair.body).replaces = r.call(read_req("k")).digest;
  CHECK(r.call(repair).status.is_ok());
  CHECK(r.stored("k")->value == "new");
  CHECK(r.stored("k")->state == VersionState::kCommitted);
}

// A repair of `key` as a committed write, naming the corrupt record it replaces.
ReplicaRequest repair_req(std::string key, std::string value, FencedTimestamp t, std::optional<uint64_t> replaces) {
  ReplicaRequest r = write_req(std::move(key), std::move(value), t, "L");
  auto& w = std::get<wire::WriteRequest>(r.body);
  w.committed = true;
  w.replaces = replaces;
  return r;
}

// Regression (review, /tmp/review-c/stale_repair.cc): a repair decided before
// the record was damaged, or decided against another damage, replaced it; an
// older version then stood where a newer acknowledged one had been.
TEST_CASE("a corrupt record is replaced only by a repair that names its digest", "[replica]") {
  Replica r;
  r.committed_write(write_req("k", "v3", ts(5, 30), "L"));
  REQUIRE(r.store.corrupt("k"));
  // Every `corrupt` about the key names the digest of the damaged record, the
  // one its leaf lists.
  const ReplicaReply read = r.call(read_req("k"));
  REQUIRE(read.status.code() == Code::kCorrupt);
  REQUIRE(read.digest.has_value());
  std::vector<wire::LeafEntry> leaf;
  REQUIRE(r.store.list_leaf(wire::tree_node_of(replica::key_position("k"), wire::kTreeLeafLevel), leaf).is_ok());
  REQUIRE(leaf.size() == 1);
  CHECK(leaf[0].corrupt);
  CHECK(leaf[0].digest == *read.digest);
  CHECK(r.call(commit_req("k", ts(5, 30))).digest == read.digest);
  CHECK(r.call(purge_req("k", ts(5, 30))).digest == read.digest);
  CHECK(r.call(write_req("k", "v4", ts(5, 40), "L")).digest == read.digest);

  SECTION("a repair decided before the damage (no digest) changes nothing") {
    const ReplicaReply refused = r.call(repair_req("k", "v2", ts(5, 20), std::nullopt));
    CHECK(refused.status.code() == Code::kCorrupt);
    CHECK(refused.digest == read.digest);
  }
  SECTION("a repair decided against another damage changes nothing") {
    const ReplicaReply refused = r.call(repair_req("k", "v2", ts(5, 20), *read.digest ^ 1));
    CHECK(refused.status.code() == Code::kCorrupt);
    CHECK(refused.digest == read.digest);
  }
  SECTION("only a committed write names a record it replaces") {
    ReplicaRequest plain = repair_req("k", "v2", ts(5, 20), read.digest);
    std::get<wire::WriteRequest>(plain.body).committed = false;
    CHECK(r.call(plain).status.code() == Code::kBadRequest);
  }
  SECTION("copies follow the same rule") {
    wire::Version v2{ts(5, 20), "L", VersionState::kCommitted, false, "v2"};
    const ReplicaReply refused = r.call({1, wire::CopyManyRequest{{{"k", v2}, {"k", v2, *read.digest ^ 1}}}});
    CHECK(refused.refused == 2);
    CHECK(refused.first_refusal.find("corrupt") != std::string::npos);
    const ReplicaReply copied = r.call({1, wire::CopyManyRequest{{{"k", v2, read.digest}}}});
    CHECK(copied.refused == 0);
    CHECK(r.stored("k")->value == "v2");
    return;
  }
  // Nothing changed: the same damaged record is there.
  CHECK(r.call(read_req("k")).digest == read.digest);
  // The repair decided against this damage replaces it.
  CHECK(r.call(repair_req("k", "v2", ts(5, 20), read.digest)).status.is_ok());
  CHECK(r.stored("k")->value == "v2");
  CHECK(r.stored("k")->state == VersionState::kCommitted);
  // Over a healthy record `replaces` changes nothing: the usual rules decide.
  CHECK(r.call(repair_req("k", "v1", ts(5, 10), read.digest)).status.code() == Code::kStale);
  CHECK(r.call(repair_req("k", "v3", ts(5, 30), std::nullopt)).status.is_ok());
  CHECK(r.stored("k")->value == "v3");
  // What the damaged record held is unknown: no refusal of the key is final here now.
  r.call(fence_req("L", 7));
  CHECK(r.call(write_req("k", "late", ts(5, 50), "L")).dropped == FencedTimestamp{UINT64_MAX, UINT64_MAX});
  // Unfenced writes too: an unfenced write the damaged record held is refused stale, not finally.
  const ReplicaReply unfenced = r.call(write_req("k", "late", ts(0, 50)));
  CHECK(unfenced.status.code() == Code::kStale);
  CHECK(unfenced.dropped == FencedTimestamp{0, UINT64_MAX});
}

TEST_CASE("a digest names one damage: the key damaged again needs the new one", "[replica]") {
  Replica r;
  r.committed_write(write_req("k", "v1", ts(5, 10), "L"));
  REQUIRE(r.store.corrupt("k"));
  const std::optional<uint64_t> first = r.call(read_req("k")).digest;
  REQUIRE(first);
  REQUIRE(r.call(repair_req("k", "v1", ts(5, 10), first)).status.is_ok());
  r.committed_write(write_req("k", "v2", ts(5, 20), "L"));
  REQUIRE(r.store.corrupt("k"));
  const std::optional<uint64_t> second = r.call(read_req("k")).digest;
  REQUIRE(second);
  CHECK(second != first);
  // A repair of the first damage that arrives late finds the second one.
  CHECK(r.call(repair_req("k", "v1", ts(5, 10), first)).status.code() == Code::kCorrupt);
  CHECK(r.call(read_req("k")).digest == second);
  CHECK(r.call(repair_req("k", "v2", ts(5, 20), second)).status.is_ok());
  CHECK(r.stored("k")->value == "v2");
}

TEST_CASE("a failed commit fails the whole batch and then refuses writes, not reads", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(1), "L"));
  r.store.fail_next_commit();
  std::vector<ReplicaRequest> batch = {write_req("k", "y", ts(2), "L"), read_req("k")};
  auto replies = r.handler.handle_batch(batch);
  CHECK(replies[0].status.code() == Code::kStorageError);
  CHECK(replies[1].status.code() == Code::kStorageError);
  CHECK(r.handler.writes_refused());
  CHECK(r.call(write_req("k", "z", ts(3), "L")).status.code() == Code::kStorageError);
  CHECK(r.stored("k")->value == "x");
}

TEST_CASE("a full disk fails that write alone and keeps what is stored", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(1), "L"));
  r.store.set_capacity_bytes(200);
  std::vector<ReplicaRequest> batch = {write_req("big", std::string(500, 'v'), ts(2), "L"), fence_req("L", 3)};
  auto replies = r.handler.handle_batch(batch);
  CHECK(replies[0].status.code() == Code::kStorageError);
  CHECK(replies[1].status.is_ok());
  CHECK_FALSE(r.handler.writes_refused());
  CHECK(r.stored("k")->value == "x");
  CHECK(r.call(fence_req("L", 1)).floor == 3);
}

TEST_CASE("a crash loses only what was never committed", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(1), "L"));
  replica::Change c{.key = "k2", .put = nullptr, .lock = "L", .floor = 99};
  REQUIRE(r.store.apply(c).is_ok());
  r.store.crash();
  CHECK(r.stored("k")->value == "x");
  CHECK(r.call(fence_req("L", 1)).floor == 1);
}

// ---- Sequencers: a replica that holds the cluster key authenticates fenced writes.

const ClusterKey kKey = ClusterKey::from_hex(std::string(64, '5')).value();
const ClusterKey kOtherKey = ClusterKey::from_hex(std::string(64, '6')).value();
constexpr const char* kGroup = "grp";

// W = 2; each replica its own id.
replica::ReplicaAuth auth(uint64_t replica_id = 1) { return {kKey, kGroup, 2, replica_id}; }

std::string seq(std::string lock, uint64_t token, LockMode mode = LockMode::kExclusive, const ClusterKey& key = kKey,
                std::string group = kGroup) {
  return sign_sequencer({std::move(group), std::move(lock), mode, token}, key);
}

TEST_CASE("with a cluster key, fenced writes and fences need a valid sequencer of their grant", "[replica][sequencer]") {
  const std::string good = seq("L", 5);
  std::string altered_mac = good;
  altered_mac.back() = altered_mac.back() == 'A' ? 'B' : 'A';
  // A forged grant of token 2^63 (signed with a guessed key) would fence L for ever.
  const uint64_t huge = uint64_t{1} << 63;
  struct Case {
    const char* name;
    ReplicaRequest request;
    Code code;
  };
  const std::vector<Case> cases = {
      {"write with its sequencer", with_sequencer(write_req("k", "x", ts(5), "L"), good), Code::kOk},
      {"delete with its sequencer", with_sequencer(delete_req("k", ts(5), "L"), good), Code::kOk},
      {"fence with its sequencer", with_sequencer(fence_req("L", 5), good), Code::kOk},
      {"write without a sequencer", write_req("k", "x", ts(5), "L"), Code::kBadSequencer},
      {"delete without a sequencer", delete_req("k", ts(5), "L"), Code::kBadSequencer},
      {"fence without a sequencer", fence_req("L", 5), Code::kBadSequencer},
      {"write with a forged MAC",
       with_sequencer(write_req("k", "x", ts(huge), "L"), seq("L", huge, LockMode::kExclusive, kOtherKey)),
       Code::kBadSequencer},
      {"fence with a forged MAC", with_sequencer(fence_req("L", huge), seq("L", huge, LockMode::kExclusive, kOtherKey)),
       Code::kBadSequencer},
      {"write with an altered MAC", with_sequencer(write_req("k", "x", ts(5), "L"), altered_mac), Code::kBadSequencer},
      {"write with another group's sequencer",
       with_sequencer(write_req("k", "x", ts(5), "L"), seq("L", 5, LockMode::kExclusive, kKey, "other")),
       Code::kBadSequencer},
      {"fence with another group's sequencer",
       with_sequencer(fence_req("L", 5), seq("L", 5, LockMode::kExclusive, kKey, "other")), Code::kBadSequencer},
      {"write under a shared lock", with_sequencer(write_req("k", "x", ts(5), "L"), seq("L", 5, LockMode::kShared)),
       Code::kBadSequencer},
      {"fence of a shared lock", with_sequencer(fence_req("L", 5), seq("L", 5, LockMode::kShared)),
       Code::kBadSequencer},
      {"write with another lock's sequencer", with_sequencer(write_req("k", "x", ts(5), "L"), seq("M", 5)),
       Code::kBadSequencer},
      {"fence with another lock's sequencer", with_sequencer(fence_req("L", 5), seq("M", 5)), Code::kBadSequencer},
      {"fenced read with its sequencer", with_sequencer(fenced_read_req("k", "L", 5), good), Code::kOk},
      {"fenced read without a sequencer", fenced_read_req("k", "L", 5), Code::kBadSequencer},
      {"fenced read with a forged MAC",
       with_sequencer(fenced_read_req("k", "L", huge), seq("L", huge, LockMode::kExclusive, kOtherKey)),
       Code::kBadSequencer},
      {"fenced read with another lock's sequencer", with_sequencer(fenced_read_req("k", "L", 5), seq("M", 5)),
       Code::kBadSequencer},
      {"write of a higher token than its sequencer", with_sequencer(write_req("k", "x", ts(6), "L"), good),
       Code::kBadSequencer},
      {"write of a lower token than its sequencer", with_sequencer(write_req("k", "x", ts(4), "L"), good),
       Code::kBadSequencer},
      {"fence of another token", with_sequencer(fence_req("L", huge), good), Code::kBadSequencer},
      {"write with garbage for a sequencer", with_sequencer(write_req("k", "x", ts(5), "L"), "ps2.garbage"),
       Code::kBadSequencer},
      {"unfenced write without a sequencer", write_req("k", "x", ts(0)), Code::kOk},
      {"unfenced write with garbage for a sequencer", with_sequencer(write_req("k", "x", ts(0)), "garbage"), Code::kOk},
      {"bad request before bad sequencer", write_req("k", "x", ts(5), ""), Code::kBadRequest},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      Replica r(auth());
      REQUIRE(r.handler.verifies_sequencers());
      ReplicaReply reply = r.call(c.request);
      INFO(reply.status.to_string());
      CHECK(reply.status.code() == c.code);
      const bool fence = std::holds_alternative<wire::FenceRequest>(c.request.body) ||
                         std::holds_alternative<wire::ReadRequest>(c.request.body);
      if (c.code == Code::kOk) {
        if (!fence) CHECK(r.stored("k"));
        if (fence || std::get<wire::WriteRequest>(c.request.body).ts.token != 0) CHECK(r.floor("L") == 5);
      } else {
        // Nothing stored, no floor raised, and the refusal says why.
        CHECK_FALSE(r.stored("k"));
        CHECK(r.floor("L") == 0);
        CHECK(r.floor("M") == 0);
        CHECK_FALSE(reply.status.message().empty());
        CHECK(reply.floor == 0);
      }
    }
  }
}

TEST_CASE("with a cluster key, a refused sequencer leaves what is stored and the floor unchanged", "[replica][sequencer]") {
  Replica r(auth());
  REQUIRE(r.call(with_sequencer(fence_req("L", 5), seq("L", 5))).status.is_ok());
  REQUIRE(r.call(with_sequencer(write_req("k", "x", ts(5), "L"), seq("L", 5))).status.is_ok());
  const uint64_t huge = uint64_t{1} << 63;
  auto forged = with_sequencer(write_req("k", "evil", ts(huge), "L"), seq("L", huge, LockMode::kExclusive, kOtherKey));
  CHECK(r.call(forged).status.code() == Code::kBadSequencer);
  CHECK(r.call(with_sequencer(fence_req("L", huge), seq("L", huge, LockMode::kExclusive, kOtherKey))).status.code() ==
        Code::kBadSequencer);
  CHECK(r.stored("k")->value == "x");
  CHECK(r.versions("k").size() == 1);
  CHECK(r.floor("L") == 5);
  // The holder of the next grant still writes.
  CHECK(r.call(with_sequencer(write_req("k", "y", ts(6), "L"), seq("L", 6))).status.is_ok());
  CHECK(r.stored("k")->value == "y");
  // A retry of a stored write needs its sequencer too, and gets ok with it.
  CHECK(r.call(write_req("k", "y", ts(6), "L")).status.code() == Code::kBadSequencer);
  CHECK(r.call(with_sequencer(write_req("k", "y", ts(6), "L"), seq("L", 6))).status.is_ok());
  // A superseded holder with a valid sequencer is fenced, as without a key.
  ReplicaReply old = r.call(with_sequencer(write_req("k2", "late", ts(5), "L"), seq("L", 5)));
  CHECK(old.status.code() == Code::kFenced);
  CHECK(old.floor == 6);
}

TEST_CASE("a sequencer that verified is not checked again, and still grants only its lock and token",
          "[replica][sequencer]") {
  Replica r(auth());
  const std::string good = seq("L", 5);
  REQUIRE(r.call(with_sequencer(write_req("a", "x", ts(5), "L"), good)).status.is_ok());
  CHECK(r.handler.sequencer_checks() == 1);
  CHECK(r.call(with_sequencer(write_req("b", "x", ts(5), "L"), good)).status.is_ok());
  CHECK(r.call(with_sequencer(fence_req("L", 5), good)).status.is_ok());
  CHECK(r.handler.sequencer_checks() == 1);
  // Remembered, it is held to the same rules: another token or lock is refused.
  CHECK(r.call(with_sequencer(write_req("c", "x", ts(6), "L"), good)).status.code() == Code::kBadSequencer);
  CHECK(r.call(with_sequencer(fence_req("M", 5), good)).status.code() == Code::kBadSequencer);
  CHECK(r.handler.sequencer_checks() == 1);
  // A text that failed is checked every time it comes.
  std::string altered = good;
  altered.back() = altered.back() == 'A' ? 'B' : 'A';
  for (int i = 0; i < 2; ++i) {
    CHECK(r.call(with_sequencer(write_req("d", "x", ts(5), "L"), altered)).status.code() == Code::kBadSequencer);
  }
  CHECK(r.handler.sequencer_checks() == 3);
  CHECK_FALSE(r.stored("c"));
  CHECK_FALSE(r.stored("d"));
  // 1024 other grants fill what is remembered: `good` is checked once more.
  for (uint64_t token = 1; token <= 1024; ++token) {
    REQUIRE(r.call(with_sequencer(fence_req("M", token), seq("M", token))).status.is_ok());
  }
  CHECK(r.handler.sequencer_checks() == 3 + 1024);
  CHECK(r.call(with_sequencer(write_req("e", "x", ts(5), "L"), good)).status.is_ok());
  CHECK(r.handler.sequencer_checks() == 3 + 1024 + 1);
}

// The receipt a replica hands for a write it accepts.
wire::Receipt receipt_of(Replica& r, const ReplicaRequest& write) {
  ReplicaReply reply = r.call(write);
  REQUIRE(reply.status.is_ok());
  REQUIRE(reply.receipts.size() == 1);
  return reply.receipts[0];
}

ReplicaRequest committed(ReplicaRequest w, wire::Certificate certificate = {}) {
  auto& write = std::get<wire::WriteRequest>(w.body);
  write.committed = true;
  write.certificate = std::move(certificate);
  return w;
}

ReplicaRequest certified(ReplicaRequest commit, wire::Certificate certificate) {
  std::get<wire::CommitRequest>(commit.body).certificate = std::move(certificate);
  return commit;
}

ReplicaRequest from_repairer(ReplicaRequest r) {
  r.from_repairer = true;
  return r;
}

TEST_CASE("with a cluster key, repair copies need the version's sequencer too", "[replica][sequencer]") {
  Replica r(auth(1)), other(auth(2));
  // A forged committed write (a repair copy with no or a forged sequencer)
  // must not plant a version with a huge token.
  auto forged = committed(write_req("k", "x", ts(uint64_t{1} << 63), "L"));
  CHECK(r.call(from_repairer(forged)).status.code() == Code::kBadSequencer);
  CHECK(r.call(from_repairer(with_sequencer(forged, seq("L", 5)))).status.code() == Code::kBadSequencer);
  CHECK_FALSE(r.stored("k"));
  // A version keeps its sequencer, reads return it, and a copy carrying it is
  // accepted as a repair.
  CHECK(r.call(with_sequencer(write_req("k", "x", ts(4), "L"), seq("L", 4))).status.is_ok());
  REQUIRE(r.stored("k"));
  CHECK(r.stored("k")->sequencer == seq("L", 4));
  auto repair = committed(with_sequencer(write_req("k", "x", ts(4), "L"), r.stored("k")->sequencer));
  CHECK(other.call(from_repairer(repair)).status.is_ok());
  CHECK(other.stored("k")->state == VersionState::kCommitted);
  CHECK(other.stored("k")->sequencer == seq("L", 4));
  // Unfenced repair copies need none, nor proof; a purge never carries one.
  CHECK(other.call(committed(write_req("u", "v", ts(0), ""))).status.is_ok());
  CHECK(other.stored("u")->state == VersionState::kCommitted);
  CHECK(r.call(with_sequencer(write_req("j", "z", ts(7, 1), "L"), seq("L", 7))).status.is_ok());
  CHECK(r.call(purge_req("j", ts(7, 1))).applied);
}

TEST_CASE("with a cluster key, a version under a lock is committed only on proof of W acknowledgements",
          "[replica][sequencer][receipts]") {
  // A superseded holder of L (token 4; token 5 fenced replicas 2 and 3) got
  // its write onto replica 1 only. Committing it there would make it readable
  // (a reader returns a version committed on any replica).
  Replica r1(auth(1)), r2(auth(2)), r3(auth(3));
  const auto write = with_sequencer(write_req("k", "late", ts(4), "L"), seq("L", 4));
  const wire::Receipt mine = receipt_of(r1, write);
  CHECK(mine.replica == 1);
  for (Replica* fenced : {&r2, &r3}) {
    REQUIRE(fenced->call(with_sequencer(fence_req("L", 5), seq("L", 5))).status.is_ok());
    CHECK(fenced->call(write).status.code() == Code::kFenced);
  }
  struct Case {
    const char* name;
    ReplicaRequest request;
  };
  const wire::Receipt forged{.replica = 2, .mac = mine.mac};
  const std::vector<Case> refused = {
      {"a commit without a certificate", commit_req("k", ts(4))},
      {"a commit with its one receipt", certified(commit_req("k", ts(4)), {mine})},
      {"a commit with its one receipt twice", certified(commit_req("k", ts(4)), {mine, mine})},
      {"a commit with a receipt claimed for another replica", certified(commit_req("k", ts(4)), {mine, forged})},
      {"a committed write without a certificate", committed(write)},
      {"a committed write of a new value", committed(with_sequencer(write_req("k", "new", ts(4, 1), "L"), seq("L", 4)),
                                                     {mine, forged})},
  };
  for (const Case& c : refused) {
    DYNAMIC_SECTION(c.name) {
      ReplicaReply reply = r1.call(c.request);
      INFO(reply.status.to_string());
      CHECK(reply.status.code() == Code::kBadRequest);
      CHECK_THAT(reply.status.message(), Catch::Contains("receipts") && Catch::Contains("lock 'L'"));
      CHECK_FALSE(reply.applied);
      REQUIRE(r1.versions("k").size() == 1);
      CHECK(r1.stored("k")->state == VersionState::kPending);
      CHECK(r1.stored("k")->value == "late");
    }
  }
  SECTION("receipts of another version prove nothing") {
    Replica r4(auth(4));
    const wire::Receipt other = receipt_of(r4, with_sequencer(write_req("k", "other", ts(4), "L"), seq("L", 4)));
    CHECK(r1.call(certified(commit_req("k", ts(4)), {mine, other})).status.code() == Code::kBadRequest);
    CHECK(r1.stored("k")->state == VersionState::kPending);
  }
  SECTION("a replica of another key or group cannot vouch") {
    Replica stranger({{kOtherKey, kGroup, 2, 9}});
    const wire::Receipt theirs =
        receipt_of(stranger, with_sequencer(write_req("k", "late", ts(4), "L"), seq("L", 4, LockMode::kExclusive, kOtherKey)));
    CHECK(r1.call(certified(commit_req("k", ts(4)), {mine, theirs})).status.code() == Code::kBadRequest);
    CHECK(r1.stored("k")->state == VersionState::kPending);
  }
}

TEST_CASE("with a cluster key, a kept replica set's larger W is the receipts a commit needs",
          "[replica][sequencer][receipts]") {
  // The cluster file says W 2; an addition made the set 4 replicas with W 3.
  Replica r1(auth(1)), r2(auth(2)), r3(auth(3));
  const wire::ReplicaSet set{.version = 1,
                             .phase = wire::ReplicaPhase::kServing,
                             .replicas = {{1, "tcp://127.0.0.1:7201"},
                                          {2, "tcp://127.0.0.1:7202"},
                                          {3, "tcp://127.0.0.1:7203"},
                                          {4, "tcp://127.0.0.1:7204"}},
                             .write_quorum = 3,
                             .read_quorum = 2};
  const auto in_set = [](ReplicaRequest r) {
    r.config = 1;
    return r;
  };
  for (Replica* r : {&r1, &r2, &r3}) {
    ReplicaRequest install;
    install.body = wire::InstallConfigRequest{sign_config_certificate(SequencerSigner(kKey, kGroup), set)};
    REQUIRE(r->call(install).status.is_ok());
  }
  const auto write = in_set(with_sequencer(write_req("k", "x", ts(4), "L"), seq("L", 4)));
  wire::Certificate certificate = {receipt_of(r1, write), receipt_of(r2, write)};
  ReplicaReply refused = r1.call(in_set(certified(commit_req("k", ts(4)), certificate)));
  CHECK(refused.status.code() == Code::kBadRequest);
  CHECK_THAT(refused.status.message(), Catch::Contains("needs proof that 3 replicas"));
  CHECK_FALSE(refused.applied);
  const auto state = [&] {
    ReplicaReply read = r1.call(in_set(read_req("k")));
    REQUIRE(read.versions.size() == 1);
    return read.versions[0].state;
  };
  CHECK(state() == VersionState::kPending);
  certificate.push_back(receipt_of(r3, write));
  CHECK(r1.call(in_set(certified(commit_req("k", ts(4)), certificate))).applied);
  CHECK(state() == VersionState::kCommitted);
}

TEST_CASE("a spare takes versions only from a repairer until it keeps a replica set", "[replica][sequencer]") {
  replica::ReplicaAuth spare_auth = auth(4);
  spare_auth.spare = true;
  Replica spare(spare_auth), member(auth(1));
  const auto write = with_sequencer(write_req("k", "x", ts(4), "L"), seq("L", 4));
  // A client's write, commit or purge: refused, and nothing is stored.
  for (const ReplicaRequest& r :
       {write, certified(commit_req("k", ts(4)), {receipt_of(member, write)}), purge_req("k", ts(4))}) {
    ReplicaReply reply = spare.call(r);
    CHECK(reply.status.code() == Code::kUnavailable);
    CHECK_THAT(reply.status.message(), Catch::Contains("spare"));
  }
  CHECK_FALSE(spare.stored("k"));
  // A fill's fences, reads and sealed copies: taken.
  CHECK(spare.call(with_sequencer(fence_req("L", 4), seq("L", 4))).status.is_ok());
  CHECK(spare.call(read_req("k")).status.is_ok());
  CHECK(spare.call(from_repairer(committed(write))).status.is_ok());
  REQUIRE(spare.stored("k"));
  CHECK(spare.stored("k")->state == VersionState::kCommitted);
  // Once a set lists it, it serves clients as every member does.
  const wire::ReplicaSet set{.version = 1,
                             .phase = wire::ReplicaPhase::kServing,
                             .replicas = {{1, "tcp://127.0.0.1:7201"}, {2, "tcp://127.0.0.1:7204", "", 4}},
                             .write_quorum = 2,
                             .read_quorum = 1};
  ReplicaRequest install;
  install.body = wire::InstallConfigRequest{sign_config_certificate(SequencerSigner(kKey, kGroup), set)};
  REQUIRE(spare.call(install).status.is_ok());
  ReplicaRequest next = with_sequencer(write_req("j", "y", ts(4), "L"), seq("L", 4));
  next.config = 1;
  CHECK(spare.call(next).status.is_ok());
  // A replica that is no spare took the client's write from the start.
  CHECK(member.call(with_sequencer(write_req("j", "y", ts(4), "L"), seq("L", 4))).status.is_ok());
}

TEST_CASE("with a cluster key, W receipts or a repairer's seal commit a version under a lock",
          "[replica][sequencer][receipts]") {
  Replica r1(auth(1)), r2(auth(2)), r3(auth(3));
  const auto write = with_sequencer(write_req("k", "x", ts(4), "L"), seq("L", 4));
  const wire::Certificate certificate = {receipt_of(r1, write), receipt_of(r2, write)};
  SECTION("a commit with the receipts of two replicas") {
    ReplicaReply reply = r1.call(certified(commit_req("k", ts(4)), certificate));
    CHECK(reply.status.is_ok());
    CHECK(reply.applied);
    CHECK(r1.stored("k")->state == VersionState::kCommitted);
  }
  SECTION("commits carried in a write") {
    auto carrier = with_sequencer(write_req("other", "y", ts(4), "L"), seq("L", 4));
    std::get<wire::WriteRequest>(carrier.body).commits = {
        std::get<wire::CommitRequest>(certified(commit_req("k", ts(4)), certificate).body)};
    REQUIRE(r2.call(carrier).status.is_ok());
    CHECK(r2.stored("k")->state == VersionState::kCommitted);
  }
  SECTION("a read repair of a replica that missed it") {
    CHECK(r3.call(committed(write, certificate)).status.is_ok());
    CHECK(r3.stored("k")->state == VersionState::kCommitted);
    CHECK(r3.stored("k")->value == "x");
  }
  SECTION("a commit of a copy already there, after a newer grant fenced the replica") {
    REQUIRE(r2.call(with_sequencer(fence_req("L", 5), seq("L", 5))).status.is_ok());
    CHECK(r2.call(certified(commit_req("k", ts(4)), certificate)).applied);
    CHECK(r2.stored("k")->state == VersionState::kCommitted);
  }
  SECTION("below the floor, a certificate does not store a version anew: only a repairer does") {
    // Else a superseded holder could bring back its acknowledged version once
    // the new holder deleted the key and the tombstone was collected.
    REQUIRE(r3.call(with_sequencer(fence_req("L", 5), seq("L", 5))).status.is_ok());
    ReplicaReply refused = r3.call(committed(write, certificate));
    CHECK(refused.status.code() == Code::kFenced);
    CHECK(refused.floor == 5);
    CHECK_FALSE(r3.stored("k"));
    CHECK(r3.call(from_repairer(committed(write))).status.is_ok());
    CHECK(r3.stored("k")->state == VersionState::kCommitted);
  }
  SECTION("a repairer's copy and commit, with no certificate") {
    REQUIRE(r3.call(with_sequencer(fence_req("L", 5), seq("L", 5))).status.is_ok());
    CHECK(r3.call(from_repairer(committed(write))).status.is_ok());
    CHECK(r3.stored("k")->state == VersionState::kCommitted);
    ReplicaReply copied = r3.call(
        from_repairer({9, wire::CopyManyRequest{{{"k2", {ts(4), "L", VersionState::kCommitted, false, "z", seq("L", 4)}}}}}));
    CHECK(copied.refused == 0);
    CHECK(r3.stored("k2")->state == VersionState::kCommitted);
    CHECK(r1.call(from_repairer(commit_req("k", ts(4)))).applied);
  }
  SECTION("a repairer's pending copy (a paused fill's completion) passes the floor and stays pending") {
    REQUIRE(r3.call(with_sequencer(fence_req("L", 5), seq("L", 5))).status.is_ok());
    const wire::Copy pending{.key = "k2",
                             .version = {ts(4), "L", VersionState::kPending, false, "z", seq("L", 4)},
                             .pending = true};
    CHECK(r3.call(from_repairer({9, wire::CopyManyRequest{{pending}}})).refused == 0);
    CHECK(r3.stored("k2")->state == VersionState::kPending);
    CHECK(r3.stored("k2")->value == "z");
    // From anyone else it is a plain write, and the floor refuses it.
    ReplicaReply refused = r2.call(with_sequencer(fence_req("L", 5), seq("L", 5)));
    REQUIRE(refused.status.is_ok());
    refused = r2.call({9, wire::CopyManyRequest{{pending}}});
    CHECK(refused.refused == 1);
    CHECK_THAT(refused.first_refusal, Catch::Contains("fenced"));
    CHECK_FALSE(r2.stored("k2"));
  }
  SECTION("a copy from anyone else is refused") {
    ReplicaReply copied =
        r3.call({9, wire::CopyManyRequest{{{"k2", {ts(4), "L", VersionState::kCommitted, false, "z", seq("L", 4)}}}}});
    CHECK(copied.refused == 1);
    CHECK_THAT(copied.first_refusal, Catch::Contains("receipts"));
    CHECK_FALSE(r3.stored("k2"));
  }
  SECTION("unfenced versions need no proof") {
    REQUIRE(r1.call(write_req("u", "v", ts(0), "")).status.is_ok());
    CHECK(r1.call(commit_req("u", ts(0))).applied);
  }
  SECTION("reads hand a receipt per version, which prove it as the write's did") {
    ReplicaReply read1 = r1.call(read_req("k")), read2 = r2.call(read_req("k"));
    REQUIRE(read1.receipts.size() == 1);
    CHECK(read1.receipts[0] == certificate[0]);
    CHECK(r3.call(committed(write, {read1.receipts[0], read2.receipts[0]})).status.is_ok());
  }
}

TEST_CASE("a sealed frame marks its request a repairer's only when the seal verifies", "[replica][sequencer][seal]") {
  Replica r(auth(1));
  const std::string request = wire::encode_request(commit_req("k", ts(4)));
  const RepairSeal seal(kKey, kGroup);
  uint64_t id = 0;
  SECTION("a plain frame") {
    auto plain = r.handler.decode(request, {}, &id);
    REQUIRE(plain.is_ok());
    CHECK_FALSE(plain.value().from_repairer);
  }
  SECTION("sealed now, or within the seal's lifetime") {
    for (uint64_t at : {kNowMs, kNowMs - kSealLifetimeMs, kNowMs + kSealLifetimeMs}) {
      auto sealed = r.handler.decode(seal.seal(request, at), {}, &id);
      REQUIRE(sealed.is_ok());
      CHECK(sealed.value().from_repairer);
      CHECK(std::holds_alternative<wire::CommitRequest>(sealed.value().body));
    }
  }
  SECTION("refused: another key or group, an altered byte, too old or too new, cut short") {
    std::string altered = seal.seal(request, kNowMs);
    altered.back() ^= 1;
    for (const std::string& frame :
         {RepairSeal(kOtherKey, kGroup).seal(request, kNowMs), RepairSeal(kKey, "other").seal(request, kNowMs), altered,
          seal.seal(request, kNowMs - kSealLifetimeMs - 1), seal.seal(request, kNowMs + kSealLifetimeMs + 1)}) {
      auto refused = r.handler.decode(frame, {}, &id);
      REQUIRE_FALSE(refused.is_ok());
      CHECK(refused.status().code() == Code::kBadRequest);
      CHECK_THAT(refused.status().message(), Catch::Contains("seal"));
    }
    CHECK(r.handler.decode(seal.seal(request, kNowMs).substr(0, RepairSeal::kHeaderBytes), {}, &id).status().code() ==
          Code::kMalformed);
  }
  SECTION("a replica without the key reads the request and trusts nothing") {
    Replica insecure;
    auto sealed = insecure.handler.decode(RepairSeal(kOtherKey, kGroup).seal(request, kNowMs), {}, &id);
    REQUIRE(sealed.is_ok());
    CHECK_FALSE(sealed.value().from_repairer);
  }
}

TEST_CASE("without a cluster key, sequencers are neither needed nor checked", "[replica][sequencer]") {
  Replica r;
  CHECK_FALSE(r.handler.verifies_sequencers());
  CHECK(r.call(fence_req("L", 5)).status.is_ok());
  CHECK(r.call(write_req("k", "x", ts(5), "L")).status.is_ok());
  CHECK(r.call(with_sequencer(write_req("k2", "x", ts(6), "L"), "ps2.garbage")).status.is_ok());
  CHECK(r.call(with_sequencer(write_req("k3", "x", ts(7), "L"), seq("M", 1, LockMode::kShared, kOtherKey))).status.is_ok());
  CHECK(r.call(with_sequencer(fence_req("L", 9), "not a sequencer")).status.is_ok());
  CHECK(r.floor("L") == 9);
}

// A store whose apply() throws, like an allocation that fails, for one key.
class ThrowingStore final : public test::ForwardingStore {
 public:
  explicit ThrowingStore(std::string key) : throw_on_(std::move(key)) {}
  Status apply(const replica::Change& c) override {
    if (c.key == throw_on_) throw std::bad_alloc();
    return inner.apply(c);
  }

 private:
  std::string throw_on_;
};

TEST_CASE("a batch that throws part-way keeps none of its changes for the next batch to commit", "[replica]") {
  ManualClock physical{kNowMs};
  HybridClock clock{physical};
  ThrowingStore store("boom");
  replica::ReplicaHandler handler{store, clock};
  const std::vector<ReplicaRequest> batch = {write_req("before", "x", ts(1), "L"), write_req("boom", "x", ts(1), "L")};
  CHECK_THROWS_AS(handler.handle_batch(batch), std::bad_alloc);
  // The next batch changes something and commits: "before" was never answered and must not be in it.
  const std::vector<ReplicaRequest> next = {write_req("after", "y", ts(2), "L")};
  REQUIRE(handler.handle_batch(next)[0].status.is_ok());
  CHECK(store.inner.get("before").value().empty());
  CHECK(store.inner.get("after").value().size() == 1);
  // Nor does the change feed: it tells only what a committed batch stored.
  auto changes = handler.feed().read(wire::ChangesRequest{"", 0, 10}).changes;
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].key == "after");
}

}  // namespace
}  // namespace palisade

namespace palisade {
namespace {

ReplicaRequest scan_req(std::string prefix, std::string after = "", uint32_t limit = 1000) {
  return {1, wire::ScanRequest{std::move(prefix), std::move(after), limit}};
}

std::vector<std::string> keys_of(const ReplicaReply& reply) {
  std::vector<std::string> out;
  for (const wire::ScannedKey& k : reply.scanned) out.push_back(k.key);
  return out;
}

TEST_CASE("scan: a prefix's keys in byte order, each with what a read gives, and more when cut", "[replica][scan]") {
  Replica r;
  r.committed_write(write_req("a/1", "one", ts(0)));
  REQUIRE(r.call(write_req("a/1", "newer", ts(0, 5))).status.is_ok());  // pending over the committed
  r.committed_write(write_req("a/2", "two", ts(3), "L"));
  REQUIRE(r.call(fence_req("L", 4)).status.is_ok());
  r.committed_write(delete_req("a/3", ts(0)));
  r.committed_write(write_req("b/1", "other", ts(0)));
  ReplicaReply all = r.call(scan_req("a/"));
  REQUIRE(all.status.is_ok());
  CHECK(keys_of(all) == std::vector<std::string>{"a/1", "a/2", "a/3"});
  CHECK_FALSE(all.more);
  for (const wire::ScannedKey& k : all.scanned) {
    INFO(k.key);
    CHECK_FALSE(k.record.corrupt);
    CHECK(k.record.versions == r.versions(k.key));
  }
  CHECK(all.floors == std::map<std::string, uint64_t>{{"L", 4}});  // the locks the versions name
  CHECK(all.receipts.empty());  // no cluster key, no receipts
  ReplicaReply cut = r.call(scan_req("a/", "", 2));
  CHECK(keys_of(cut) == std::vector<std::string>{"a/1", "a/2"});
  CHECK(cut.more);
  ReplicaReply rest = r.call(scan_req("a/", "a/2", 2));
  CHECK(keys_of(rest) == std::vector<std::string>{"a/3"});
  CHECK_FALSE(rest.more);
  ReplicaReply exact = r.call(scan_req("a/", "a/1", 2));  // exactly the limit left: nothing more
  CHECK(keys_of(exact) == std::vector<std::string>{"a/2", "a/3"});
  CHECK_FALSE(exact.more);
  CHECK(r.call(scan_req("c/")).scanned.empty());
}

TEST_CASE("scan: a reply stops before the key that would pass the budget, and lists a corrupt key as such",
          "[replica][scan]") {
  Replica r;
  const std::string big(wire::kScanReplyBudgetBytes / 3, 'b');
  for (const char* key : {"k/1", "k/2", "k/3", "k/4"}) r.committed_write(write_req(key, big, ts(0)));
  ReplicaReply first = r.call(scan_req("k/"));
  CHECK(keys_of(first) == std::vector<std::string>{"k/1", "k/2"});
  CHECK(first.more);
  r.committed_write(write_req("h/huge", std::string(wire::kScanReplyBudgetBytes, 'h'), ts(0)));
  r.committed_write(write_req("h/next", "n", ts(0)));
  ReplicaReply alone = r.call(scan_req("h/"));
  CHECK(keys_of(alone) == std::vector<std::string>{"h/huge"});  // the first key always
  CHECK(alone.more);
  REQUIRE(r.store.corrupt("k/2"));
  ReplicaReply damaged = r.call(scan_req("k/", "k/1", 1));
  REQUIRE(damaged.status.is_ok());
  REQUIRE(damaged.scanned.size() == 1);
  CHECK(damaged.scanned[0].key == "k/2");
  CHECK(damaged.scanned[0].record.corrupt);
  CHECK(damaged.scanned[0].record.versions.empty());
}

TEST_CASE("scan: with a cluster key, a receipt per version listed, as a read gives", "[replica][scan][receipts]") {
  Replica r(auth(1));
  const auto write = with_sequencer(write_req("s/1", "v", ts(4), "L"), seq("L", 4));
  REQUIRE(r.call(write).status.is_ok());
  REQUIRE(r.call(write_req("s/2", "w", ts(0))).status.is_ok());
  ReplicaReply listed = r.call(scan_req("s/"));
  REQUIRE(listed.scanned.size() == 2);
  ReplicaReply read = r.call(read_req("s/1"));
  REQUIRE(listed.receipts.size() == 2);
  CHECK(listed.receipts[0] == read.receipts.at(0));
  CHECK(listed.receipts[1] == r.call(read_req("s/2")).receipts.at(0));
}

}  // namespace
}  // namespace palisade

namespace palisade {
namespace {

// ---- The change feed: what a committed batch stored by a write or committed.

// The feed's changes of every key, as "key=value:p" (pending) or ":c" (committed).
std::vector<std::string> feed_of(Replica& r) {
  ReplicaReply reply = r.call({1, wire::ChangesRequest{"", 0, 1000}});
  REQUIRE(reply.status.is_ok());
  REQUIRE(reply.feed.has_value());
  std::vector<std::string> out;
  for (const wire::FeedChange& c : reply.changes) {
    out.push_back(c.key + "=" + c.version.value + (c.version.state == VersionState::kCommitted ? ":c" : ":p"));
  }
  return out;
}

TEST_CASE("the feed tells each write stored and each version committed, in order", "[replica][feed]") {
  Replica r;
  REQUIRE(r.call(write_req("a", "1", ts(1), "L")).status.is_ok());
  REQUIRE(r.call(write_req("b", "2", ts(0, 1))).status.is_ok());
  REQUIRE(r.call(commit_req("a", ts(1))).applied);
  // A committed write (a reader's repair) and a commit it carries.
  ReplicaRequest repair = write_req("c", "3", ts(1, 2), "L");
  std::get<wire::WriteRequest>(repair.body).committed = true;
  std::get<wire::WriteRequest>(repair.body).commits = {{"b", ts(0, 1)}};
  REQUIRE(r.call(repair).status.is_ok());
  CHECK(feed_of(r) == std::vector<std::string>{"a=1:p", "b=2:p", "a=1:c", "b=2:c", "c=3:c"});
}

TEST_CASE("the feed tells nothing refused, retried, purged or copied pending", "[replica][feed]") {
  Replica r;
  r.committed_write(write_req("k", "new", ts(2, 10), "L"));
  REQUIRE(feed_of(r).size() == 2);
  CHECK(r.call(write_req("k", "old", ts(2, 5), "L")).status.code() == Code::kStale);
  r.call(fence_req("L", 3));
  CHECK(r.call(write_req("k", "zombie", ts(2, 20), "L")).status.code() == Code::kFenced);
  CHECK(r.call(write_req("k", "new", ts(2, 10), "L")).status.is_ok());  // a retry: stored already
  REQUIRE(r.call(write_req("p", "x", ts(0, 1))).status.is_ok());
  REQUIRE(r.call(purge_req("p", ts(0, 1))).applied);
  CHECK(r.call(commit_req("k", ts(2, 10))).status.is_ok());  // committed already: nothing applied
  const wire::Copy pending{.key = "q",
                           .version = {ts(0, 3), "", VersionState::kPending, false, "fill"},
                           .pending = true};
  CHECK(r.call({9, wire::CopyManyRequest{{pending}}}).refused == 0);
  CHECK(r.stored("q")->value == "fill");
  const wire::Copy committed{.key = "q2", .version = {ts(0, 4), "", VersionState::kCommitted, false, "copy"}};
  CHECK(r.call({9, wire::CopyManyRequest{{committed}}}).refused == 0);
  CHECK(feed_of(r) == std::vector<std::string>{"k=new:p", "k=new:c", "p=x:p", "q2=copy:c"});
}

TEST_CASE("the feed keeps nothing of a batch that failed to commit", "[replica][feed]") {
  Replica r;
  r.store.fail_next_commit();
  CHECK(r.call(write_req("k", "x", ts(1), "L")).status.code() == Code::kStorageError);
  CHECK(feed_of(r).empty());
  CHECK(r.handler.feed().size() == 0);
}

TEST_CASE("the feed's log id is the handler's, and bounds apply", "[replica][feed]") {
  ManualClock physical{kNowMs};
  HybridClock clock{physical};
  replica::MemoryStore store;
  replica::ReplicaHandler handler{store, clock, std::nullopt, {.log = 0xfeed, .max_changes = 2}};
  for (uint64_t i = 1; i <= 3; ++i) {
    const std::vector<ReplicaRequest> batch = {write_req("k" + std::to_string(i), "v", ts(0, i))};
    REQUIRE(handler.handle_batch(batch)[0].status.is_ok());
  }
  const std::vector<ReplicaRequest> ask = {{1, wire::ChangesRequest{"", 0, 10}}};
  ReplicaReply reply = handler.handle_batch(ask)[0];
  CHECK(reply.feed == wire::FeedPosition{0xfeed, 2, 3});
  REQUIRE(reply.changes.size() == 2);
  CHECK(reply.changes[0].key == "k2");
}

}  // namespace
}  // namespace palisade
