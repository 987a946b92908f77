// Reads of the replicas' change feeds (Coordinator::start_feed) on
// tests/unit/coordinator_cluster.h's fake cluster: a page from every replica
// that answers, each from its own position, and nothing of a replica that
// does not.
#include "tests/unit/coordinator_cluster.h"

namespace palisade {
namespace {

std::vector<std::string> keys_of(const std::optional<ReplicaReply>& page) {
  std::vector<std::string> out;
  if (page) {
    for (const wire::FeedChange& c : page->changes) out.push_back(c.key);
  }
  return out;
}

TEST_CASE("a feed read asks every replica from its own position, and hands back each page", "[coordinator][feed]") {
  Cluster c;
  c.seed_all(write_req("a/1", "one", ts(0, -30)));
  c.seed(0, write_req("a/2", "two", ts(0, -20)));
  c.seed_all(write_req("b/1", "other prefix", ts(0, -10)));
  const FeedResult r = c.feed_result(c.feed("a/", {0, 1, 0}));
  REQUIRE(r.status.is_ok());
  CHECK(r.n == 3);
  CHECK(r.w == 2);
  REQUIRE(r.pages.size() == 3);
  CHECK(keys_of(r.pages[0]) == std::vector<std::string>{"a/1", "a/2"});
  CHECK(keys_of(r.pages[1]).empty());  // after its first change
  CHECK(r.pages[1]->feed->next == 2);  // looked at b/1
  CHECK(keys_of(r.pages[2]) == std::vector<std::string>{"a/1"});
  const auto asked = c.sent<wire::ChangesRequest>();
  REQUIRE(asked.size() == 3);
  CHECK(asked[1].second.after == 1);
  CHECK(asked[1].second.prefix == "a/");
}

TEST_CASE("a feed read ends hedge_ms after its start with R pages, without a replica behind", "[coordinator][feed]") {
  Cluster c;
  c.seed_all(write_req("k", "v", ts(0, -10)));
  c.hold = to(2);
  const OpId op = c.feed("", {0, 0, 0});
  CHECK_FALSE(c.done(op));  // replica 2 may still answer
  c.advance_to(50);
  const FeedResult r = c.feed_result(op);
  REQUIRE(r.status.is_ok());
  CHECK(r.pages[0].has_value());
  CHECK(r.pages[1].has_value());
  CHECK_FALSE(r.pages[2].has_value());
  CHECK(c.coordinator().pending_requests() == 0);
}

TEST_CASE("a feed page outside what was asked is not handed back", "[coordinator][feed]") {
  Cluster c;
  c.seed_all(write_req("a/1", "one", ts(0, -20)));
  c.seed_all(write_req("a/2", "two", ts(0, -10)));
  using Break = std::function<void(ReplicaReply&)>;
  uint64_t elapsed = 0;
  for (const auto& spoiling : std::vector<std::pair<std::string, Break>>{
           {"no feed position", [](ReplicaReply& r) { r.feed.reset(); }},
           {"a change outside the prefix", [](ReplicaReply& r) { r.changes[0].key = "b/1"; }},
           {"a change not after `after`", [](ReplicaReply& r) { r.changes[0].seq = 0; }},
           {"a change past the position's next", [](ReplicaReply& r) { r.changes[1].seq = r.feed->next + 1; }}}) {
    INFO(spoiling.first);
    c.tamper = [&](int replica, ReplicaReply& r) {
      if (replica == 0 && r.changes.size() == 2) spoiling.second(r);
    };
    const OpId op = c.feed("a/", {0, 0, 0});
    c.advance_to(elapsed += kHedge);
    const FeedResult r = c.feed_result(op);
    REQUIRE(r.status.is_ok());
    CHECK_FALSE(r.pages[0].has_value());  // asked again at the next read
    CHECK(keys_of(r.pages[1]) == std::vector<std::string>{"a/1", "a/2"});
    CHECK(keys_of(r.pages[2]) == std::vector<std::string>{"a/1", "a/2"});
  }
}

TEST_CASE("a feed read that waits for all ends when the last replica answers", "[coordinator][feed]") {
  Cluster c;
  c.hold = to(2);
  const OpId op = c.started_feed_waiting("", {0, 0, 0});
  c.advance_to(60);
  CHECK_FALSE(c.done(op));  // R answered, but it waits for replica 2
  c.release();
  const FeedResult r = c.feed_result(op);
  CHECK(r.pages[2].has_value());
}

TEST_CASE("a feed read with fewer than R pages asks again, and ends at the timeout", "[coordinator][feed]") {
  Cluster c;
  c.seed_all(write_req("k", "v", ts(0, -10)));
  c.hold = [](const Send& s) { return s.replica != 0; };
  const OpId op = c.feed("", {0, 0, 0});
  c.advance_to(60);  // past hedge_ms: asked again
  CHECK(c.sent_to<wire::ChangesRequest>() == std::vector<int>{0, 1, 2, 1, 2});
  CHECK_FALSE(c.done(op));
  c.advance_to(2000);
  const FeedResult r = c.feed_result(op);
  REQUIRE(r.status.is_ok());
  CHECK(r.pages[0].has_value());
  CHECK_FALSE(r.pages[1].has_value());
  CHECK_FALSE(r.pages[2].has_value());
}

TEST_CASE("a feed read of another cluster's replicas is refused, and one named for another N reads nothing",
          "[coordinator][feed]") {
  Cluster c;
  c.foreign = {0, 1, 2};
  const FeedResult refused = c.feed_result(c.feed("", {0, 0, 0}));
  CHECK(refused.status.code() == Code::kWrongCluster);
  c.foreign = {2};
  const FeedResult some = c.feed_result(c.feed("", {0, 0, 0}));
  CHECK(some.status.is_ok());
  CHECK_FALSE(some.pages[2].has_value());
  const size_t before = c.log().size();
  const FeedResult other_set = c.feed_result(c.feed("", {0, 0}));
  CHECK(other_set.status.is_ok());
  CHECK(other_set.n == 3);
  REQUIRE(other_set.pages.size() == 3);
  CHECK(std::none_of(other_set.pages.begin(), other_set.pages.end(), [](const auto& p) { return p.has_value(); }));
  CHECK(c.log().size() == before);
}

}  // namespace
}  // namespace palisade
