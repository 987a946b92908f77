// DESIGN's replica rules as a table of cases, run through the sans-I/O handler on
// the in-memory store.
#include <catch2/catch.hpp>

#include "common/hybrid_clock.h"
#include "replica/handler.h"
#include "replica/memory_store.h"
#include "tests/support/replica_connection.h"

namespace palisade {
namespace {

using test::commit_req;
using test::delete_req;
using test::fence_req;
using test::purge_req;
using test::read_req;
using test::write_req;
using wire::ReplicaReply;
using wire::ReplicaRequest;
using wire::VersionState;

constexpr uint64_t kNowMs = 1'700'000'000'000;

FencedTimestamp ts(uint64_t token, uint64_t ms_offset = 0, uint64_t logical = 0) {
  return {token, hlc::make(kNowMs + ms_offset, logical)};
}

struct Replica {
  ManualClock physical{kNowMs};
  HybridClock clock{physical};
  replica::MemoryStore store;
  replica::ReplicaHandler handler{store, clock};

  ReplicaReply call(ReplicaRequest r) {
    auto replies = handler.handle_batch(std::span<const ReplicaRequest>(&r, 1));
    REQUIRE(replies.size() == 1);
    return replies[0];
  }
  std::optional<wire::Version> stored(const std::string& key) {
    auto r = call(read_req(key));
    REQUIRE(r.status.is_ok());
    return r.version;
  }
};

TEST_CASE("write rules: fenced, stale, idempotent, stored as pending", "[replica]") {
  struct Case {
    const char* name;
    std::vector<ReplicaRequest> before;
    ReplicaRequest request;
    Code code;
    std::optional<std::string> value_after;  // value stored for "k" afterwards
  };
  const std::vector<Case> cases = {
      {"first write is stored", {}, write_req("k", "a", ts(1), "L"), Code::kOk, "a"},
      {"unfenced first write is stored", {}, write_req("k", "a", ts(0)), Code::kOk, "a"},
      {"token below floor is fenced", {fence_req("L", 5)}, write_req("k", "a", ts(4), "L"), Code::kFenced, std::nullopt},
      {"token equal to floor is accepted", {fence_req("L", 5)}, write_req("k", "a", ts(5), "L"), Code::kOk, "a"},
      {"floor of another lock does not fence", {fence_req("M", 9)}, write_req("k", "a", ts(4), "L"), Code::kOk, "a"},
      {"older timestamp is stale", {write_req("k", "new", ts(3, 10), "L")}, write_req("k", "old", ts(3, 5), "L"),
       Code::kStale, "new"},
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
      for (const auto& b : c.before) REQUIRE(r.call(b).status.is_ok());
      ReplicaReply reply = r.call(c.request);
      CHECK(reply.status.code() == c.code);
      auto v = r.stored("k");
      REQUIRE(v.has_value() == c.value_after.has_value());
      if (v) CHECK(v->value == *c.value_after);
    }
  }
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

TEST_CASE("a stale write names the stored timestamp", "[replica]") {
  Replica r;
  REQUIRE(r.call(write_req("k", "x", ts(2, 50), "L")).status.is_ok());
  ReplicaReply reply = r.call(write_req("k", "y", ts(2, 10), "L"));
  CHECK(reply.status.code() == Code::kStale);
  REQUIRE(reply.stored_ts);
  CHECK(*reply.stored_ts == ts(2, 50));
}

TEST_CASE("equal timestamps with different content pick one winner in any order", "[replica]") {
  auto a = write_req("k", "alpha", ts(3), "L");
  auto b = write_req("k", "beta", ts(3), "L");
  Replica ab, ba;
  ab.call(a);
  ab.call(b);
  ba.call(b);
  ba.call(a);
  CHECK(ab.stored("k")->value == ba.stored("k")->value);
}

TEST_CASE("writes are pending until committed; commit of another timestamp changes nothing", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(1), "L"));
  CHECK(r.stored("k")->state == VersionState::kPending);
  CHECK_FALSE(r.call(commit_req("k", ts(1, 1))).applied);
  CHECK(r.stored("k")->state == VersionState::kPending);
  CHECK(r.call(commit_req("k", ts(1))).applied);
  CHECK(r.stored("k")->state == VersionState::kCommitted);
  CHECK_FALSE(r.call(commit_req("missing", ts(1))).applied);
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
  CHECK_FALSE(r.call(purge_req("k", ts(1, 1))).applied);
  CHECK(r.call(purge_req("k", ts(1))).applied);
  CHECK_FALSE(r.stored("k"));
  r.call(write_req("c", "y", ts(1), "L"));
  r.call(commit_req("c", ts(1)));
  CHECK_FALSE(r.call(purge_req("c", ts(1))).applied);
  CHECK(r.stored("c"));
}

TEST_CASE("read returns the version, its state and the fence floor of its lock", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(4), "L"));
  r.call(fence_req("L", 6));
  ReplicaReply reply = r.call(read_req("k"));
  REQUIRE(reply.version);
  CHECK(reply.version->value == "x");
  CHECK(reply.version->lock == "L");
  CHECK(reply.version->ts == ts(4));
  CHECK(reply.floor == 6);
  CHECK(reply.clock > 0);
  CHECK_FALSE(r.call(read_req("absent")).version);
}

TEST_CASE("read with floor_of reports that lock's floor, also for a missing key", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(4), "L"));
  r.call(fence_req("M", 8));
  auto req = read_req("k");
  std::get<wire::ReadRequest>(req.body).floor_of = "M";
  CHECK(r.call(req).floor == 8);
  auto missing = read_req("absent");
  std::get<wire::ReadRequest>(missing.body).floor_of = "M";
  ReplicaReply reply = r.call(missing);
  CHECK_FALSE(reply.version);
  CHECK(reply.floor == 8);
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

TEST_CASE("a corrupt version is reported, never returned, and overwritten by a write", "[replica]") {
  Replica r;
  r.call(write_req("k", "x", ts(5), "L"));
  REQUIRE(r.store.corrupt("k"));
  CHECK(r.call(read_req("k")).status.code() == Code::kCorrupt);
  CHECK_FALSE(r.call(read_req("k")).version);
  CHECK(r.call(write_req("k", "x", ts(5), "L")).status.is_ok());
  CHECK(r.stored("k")->value == "x");
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
  replica::Change c{.key = "k2", .put = nullptr, .erase = false, .lock = "L", .floor = 99};
  REQUIRE(r.store.apply(c).is_ok());
  r.store.crash();
  CHECK(r.stored("k")->value == "x");
  CHECK(r.call(fence_req("L", 1)).floor == 1);
}

}  // namespace
}  // namespace palisade
