// The rules of a replica set change (antientropy/replica_change.h): the
// quorums a change may give the new set, and what its fills must show.
#include <catch2/catch.hpp>

#include "antientropy/replica_change.h"

namespace palisade {
namespace {

wire::ReplicaSet set_of(uint32_t n, uint32_t w, uint32_t r) {
  wire::ReplicaSet s{.version = 4,
                     .phase = wire::ReplicaPhase::kServing,
                     .replicas = {},
                     .write_quorum = w,
                     .read_quorum = r};
  for (uint32_t i = 1; i <= n; ++i) s.replicas.push_back({.id = i, .address = "tcp://r" + std::to_string(i)});
  return s;
}

Quorums after(ReplicaChangeKind kind, const wire::ReplicaSet& old, Quorums asked = {}) {
  auto q = quorums_after(kind, old, asked);
  INFO(q.status().to_string());
  REQUIRE(q.is_ok());
  return q.value();
}

std::string refusal(ReplicaChangeKind kind, const wire::ReplicaSet& old, Quorums asked) {
  auto q = quorums_after(kind, old, asked);
  REQUIRE_FALSE(q.is_ok());
  CHECK(q.code() == Code::kBadRequest);
  return q.status().message();
}

TEST_CASE("replica change: defaults keep W from falling and R as it was when it still meets W", "[antientropy]") {
  using K = ReplicaChangeKind;
  CHECK(after(K::kReplace, set_of(3, 2, 2)) == Quorums{2, 2});
  CHECK(after(K::kAdd, set_of(3, 2, 2)) == Quorums{3, 2});  // a majority of 4
  CHECK(after(K::kAdd, set_of(4, 3, 2)) == Quorums{3, 3});  // R 2 no longer meets W 3 of 5
  CHECK(after(K::kRemove, set_of(4, 3, 2)) == Quorums{3, 2});  // W stays 3 of 3
  CHECK(after(K::kRemove, set_of(5, 3, 3)) == Quorums{3, 3});
  CHECK(after(K::kRemove, set_of(3, 2, 2)) == Quorums{2, 2});
  CHECK(after(K::kAdd, set_of(4, 3, 2), {.write = 4, .read = 2}) == Quorums{4, 2});
}

TEST_CASE("replica change: quorums that break a rule are refused, naming it", "[antientropy]") {
  using K = ReplicaChangeKind;
  CHECK_THAT(refusal(K::kReplace, set_of(3, 2, 2), {.write = 3}), Catch::Contains("keeps W 2 and R 2"));
  // W never falls: the replicas that stay keep only their own floors.
  CHECK_THAT(refusal(K::kRemove, set_of(4, 3, 2), {.write = 2}), Catch::Contains("W never falls"));
  CHECK_THAT(refusal(K::kAdd, set_of(3, 2, 2), {.write = 4}), Catch::Contains("above W + 1"));
  CHECK_THAT(refusal(K::kRemove, set_of(2, 2, 1), {}), Catch::Contains("within 1..1"));
  CHECK_THAT(refusal(K::kRemove, set_of(1, 1, 1), {}), Catch::Contains("last replica"));
  CHECK_THAT(refusal(K::kAdd, set_of(3, 2, 2), {.write = 3, .read = 1}), Catch::Contains("above N 4"));
  CHECK_THAT(refusal(K::kAdd, set_of(5, 2, 4), {.write = 2, .read = 5}), Catch::Contains("majority"));
}

TEST_CASE("replica change: a fill lets a change go on only with everything its new set needs", "[antientropy]") {
  using K = ReplicaChangeKind;
  AntiEntropyReport ok;
  CHECK(fill_shortfall(K::kAdd, ok, false, "tcp://new", {}).empty());
  CHECK(fill_shortfall(K::kRemove, ok, true, "", {"tcp://r1", "tcp://r2"}).empty());
  CHECK_THAT(fill_shortfall(K::kAdd, Status(Code::kUnavailable, "fewer than two"), false, "tcp://new", {}),
             Catch::Contains("fewer than two"));

  AntiEntropyReport silent_target = ok;
  silent_target.unreachable = {"tcp://new"};
  CHECK_THAT(fill_shortfall(K::kReplace, silent_target, false, "tcp://new", {}), Catch::Contains("did not answer"));
  AntiEntropyReport refused = ok;
  refused.target_refused = 1;
  refused.first_refusal = "disk full";
  CHECK_THAT(fill_shortfall(K::kAdd, refused, true, "tcp://new", {}), Catch::Contains("disk full"));

  // Undecided versions stop a paused fill only.
  AntiEntropyReport undecided = ok;
  undecided.undecided = 2;
  undecided.first_undecided = "k";
  CHECK(fill_shortfall(K::kReplace, undecided, false, "tcp://new", {}).empty());
  CHECK_THAT(fill_shortfall(K::kReplace, undecided, true, "tcp://new", {}), Catch::Contains("key 'k'"));

  // A removal's paused fill needs every replica that stays; the one leaving may be dead.
  AntiEntropyReport leaving_dead = ok;
  leaving_dead.unreachable = {"tcp://r3"};
  leaving_dead.refusing = {"tcp://r3"};
  CHECK(fill_shortfall(K::kRemove, leaving_dead, true, "", {"tcp://r1", "tcp://r2"}).empty());
  AntiEntropyReport staying_dead = ok;
  staying_dead.unreachable = {"tcp://r2"};
  CHECK_THAT(fill_shortfall(K::kRemove, staying_dead, true, "", {"tcp://r1", "tcp://r2"}),
             Catch::Contains("tcp://r2, which stays, did not answer"));
  AntiEntropyReport staying_refused = ok;
  staying_refused.refusing = {"tcp://r1"};
  staying_refused.first_refusal = "disk full";
  CHECK_THAT(fill_shortfall(K::kRemove, staying_refused, true, "", {"tcp://r1", "tcp://r2"}),
             Catch::Contains("did not take every copy (disk full)"));
  // In a replacement, the target stands in for the one that leaves: those that stay need not answer.
  CHECK(fill_shortfall(K::kReplace, staying_dead, true, "tcp://new", {"tcp://r1", "tcp://r2"}).empty());
}

}  // namespace
}  // namespace palisade
