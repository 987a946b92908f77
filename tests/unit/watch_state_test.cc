// client::WatchState, what a Watcher tells from each round's reads
// (palisade/watch.h; docs/consistency.md "Watches").
#include "client/watch_state.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

namespace palisade::client {
namespace {

using Kind = WatchEvent::Kind;
using Now = std::map<std::string, KeyRead>;

KeyRead put(const std::string& value, uint64_t token, uint64_t hlc) { return {false, value, {token, hlc}, ""}; }
KeyRead tombstone(uint64_t token, uint64_t hlc) { return {true, "", {token, hlc}, ""}; }

TEST_CASE("watch state: each key's newest version once, in order, never older", "[watch]") {
  WatchState state;
  auto first = state.round({{"a", put("1", 1, 10)}, {"gone", tombstone(1, 5)}});
  REQUIRE(first.size() == 1);  // the first round learns deletes without telling them
  CHECK(first[0].key == "a");
  CHECK(state.round({{"a", put("1", 1, 10)}, {"gone", tombstone(1, 5)}}).empty());
  CHECK(state.round({{"a", put("old", 1, 9)}}).size() == 0);  // older than told: not told
  auto next = state.round({{"a", put("2", 2, 1)}, {"b", tombstone(1, 7)}});
  REQUIRE(next.size() == 2);
  CHECK(next[0].key == "a");
  CHECK(next[0].value == "2");
  CHECK(next[1].key == "b");  // written and deleted between two rounds: told deleted
  CHECK(next[1].kind == Kind::kDelete);
  CHECK(next[1].ts == FencedTimestamp{1, 7});
}

// Two writes without a lock can share a timestamp; reads order them by
// content, so one timestamp with other content is the newer of the two.
TEST_CASE("watch state: one timestamp with other content is told, the same content is not", "[watch]") {
  WatchState state;
  REQUIRE(state.round({{"k", put("x", 0, 5)}}).size() == 1);
  CHECK(state.round({{"k", put("x", 0, 5)}}).empty());
  auto other = state.round({{"k", put("y", 0, 5)}});
  REQUIRE(other.size() == 1);
  CHECK(other[0].value == "y");
}

TEST_CASE("watch state: a key gone with its tombstone is told deleted, version unknown", "[watch]") {
  WatchState state;
  REQUIRE(state.round({{"k", put("x", 1, 1)}}).size() == 1);
  auto gone = state.round({});
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].kind == Kind::kDelete);
  CHECK(gone[0].ts == FencedTimestamp{});
  CHECK(state.round({}).empty());  // once
  CHECK(state.round({{"k", put("again", 1, 2)}}).size() == 1);
}

TEST_CASE("watch state: resumed, it tells only what is newer, and what is gone", "[watch]") {
  WatchState before;
  before.round({{"a", put("1", 1, 1)}, {"b", put("2", 1, 2)}});
  WatchState after;
  after.resume(before.seen());
  auto told = after.round({{"a", put("1", 1, 1)}, {"c", put("3", 1, 3)}});
  REQUIRE(told.size() == 2);
  CHECK(told[0].key == "b");
  CHECK(told[0].kind == Kind::kDelete);
  CHECK(told[1].key == "c");
}

TEST_CASE("watch state: without initial, the first round only learns", "[watch]") {
  WatchState state(/*initial=*/false);
  CHECK(state.round({{"a", put("1", 1, 1)}}).empty());
  CHECK(state.seen().at("a") == FencedTimestamp{1, 1});
  CHECK(state.round({{"a", put("2", 1, 2)}}).size() == 1);
}

TEST_CASE("watch state: negative control, a state that tells new keys only misses versions", "[watch]") {
  WatchState state;
  state.broken_tells_new_keys_only = true;
  REQUIRE(state.round({{"a", put("1", 1, 1)}}).size() == 1);
  CHECK(state.round({{"a", put("2", 1, 2)}}).empty());
}

// ---- Feeds: three replicas, W = 2.

wire::FeedChange change(uint64_t seq, const std::string& key, const std::string& value, uint64_t token, uint64_t hlc,
                        bool committed = false) {
  return {seq, key,
          wire::Version{{token, hlc},
                        token == 0 ? "" : "L",
                        committed ? wire::VersionState::kCommitted : wire::VersionState::kPending,
                        false,
                        value}};
}

// A watcher past its first round, whose three feeds start empty (log 7 + i).
WatchState fed() {
  WatchState state;
  state.use_feeds(1, 3, 2);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(state.feed_after(i) == WatchState::kFeedHead);
    state.feed_page(i, {7u + i, 0, 0}, {});
  }
  REQUIRE(state.round_due());
  REQUIRE(state.round({}).empty());
  REQUIRE_FALSE(state.round_due());
  return state;
}

std::vector<std::string> told(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const WatchEvent& e : events) out.push_back(e.key + "=" + (e.kind == Kind::kDelete ? "-" : e.value));
  return out;
}

const std::vector<bool> kAll = {true, true, true};

TEST_CASE("watch feeds: a version is told once W feeds hold it or one committed it", "[watch][feed]") {
  WatchState state = fed();
  state.feed_page(0, {7, 1, 1}, {change(1, "k", "a", 1, 10)});
  CHECK(state.decide(kAll).empty());  // one write: not acknowledged (yet)
  state.feed_page(1, {8, 1, 1}, {change(1, "k", "a", 1, 10)});
  CHECK(told(state.decide(kAll)) == std::vector<std::string>{"k=a"});
  CHECK(state.feed_after(0) == 1);
  // A version some replica committed is acknowledged (or returned by a read).
  state.feed_page(2, {9, 1, 1}, {change(1, "j", "b", 1, 11, true)});
  CHECK(told(state.decide(kAll)) == std::vector<std::string>{"j=b"});
  // Told once: a commit of a version told, or another copy, tells nothing.
  state.feed_page(0, {7, 1, 2}, {change(2, "k", "a", 1, 10, true)});
  CHECK(state.decide(kAll).empty());
  CHECK(state.undecided() == 0);
}

TEST_CASE("watch feeds: every version of a key, in timestamp order, written between two polls", "[watch][feed]") {
  WatchState state = fed();
  // Replica 0 stored three writes of k; replica 1 the same, in another order.
  state.feed_page(0, {7, 1, 3}, {change(1, "k", "1", 1, 10), change(2, "k", "3", 1, 30), change(3, "k", "2", 1, 20)});
  state.feed_page(1, {8, 1, 3}, {change(1, "k", "2", 1, 20), change(2, "k", "1", 1, 10), change(3, "k", "3", 1, 30)});
  CHECK(told(state.decide(kAll)) == std::vector<std::string>{"k=1", "k=2", "k=3"});
}

TEST_CASE("watch feeds: a version that may still prove acknowledged holds newer ones back", "[watch][feed]") {
  WatchState state = fed();
  // k@10 is on replica 0 alone; replica 2 did not answer: it may hold a second copy.
  state.feed_page(0, {7, 1, 2}, {change(1, "k", "old", 1, 10), change(2, "k", "new", 1, 20, true)});
  CHECK(state.decide({true, true, false}).empty());
  SECTION("replica 2 holds it: both are told, in order") {
    state.feed_page(2, {9, 1, 1}, {change(1, "k", "old", 1, 10)});
    CHECK(told(state.decide(kAll)) == std::vector<std::string>{"k=old", "k=new"});
  }
  SECTION("a round meanwhile: its version waits its turn behind the held one") {
    CHECK(state.held() == std::set<std::string>{"k"});
    state.feed_page(0, {70, 1, 1}, {});  // replica 0 restarted: a gap, and a round is due
    REQUIRE(state.round_due());
    CHECK(state.round({{"k", KeyRead{false, "new", {1, 20}, "L"}}}).empty());
    state.feed_page(2, {9, 1, 1}, {change(1, "k", "old", 1, 10)});
    CHECK(told(state.decide({false, true, true})) == std::vector<std::string>{"k=old", "k=new"});
    CHECK(state.held().empty());
  }
  SECTION("replica 2 does not: the newer one passes it by, and it is forgotten") {
    state.feed_page(2, {9, 0, 0}, {});
    CHECK(told(state.decide(kAll)) == std::vector<std::string>{"k=new"});
    state.feed_page(1, {8, 1, 1}, {change(1, "k", "old", 1, 10)});  // late: older than told
    CHECK(state.decide(kAll).empty());
    CHECK(state.undecided() == 0);
  }
}

TEST_CASE("watch feeds: past kMaxUndecided versions never acknowledged, they are forgotten for a gap",
          "[watch][feed]") {
  WatchState state = fed();
  // Failed writes of as many keys, each stored on replica 0 alone.
  std::vector<wire::FeedChange> failed;
  for (uint64_t i = 1; i <= WatchState::kMaxUndecided; ++i) failed.push_back(change(i, std::to_string(i), "x", 1, 10));
  state.feed_page(0, {7, 1, WatchState::kMaxUndecided}, failed);
  CHECK(state.decide(kAll).empty());
  CHECK(state.undecided() == WatchState::kMaxUndecided);  // kept: each may yet prove acknowledged
  CHECK_FALSE(state.round_due());
  state.feed_page(0, {7, 1, WatchState::kMaxUndecided + 1},
                  {change(WatchState::kMaxUndecided + 1, "one-more", "x", 1, 10)});
  CHECK(state.decide(kAll).empty());
  CHECK(state.undecided() == 0);
  CHECK(state.round_due());  // the next poll reads each key's newest
  CHECK(told(state.round({{"1", KeyRead{false, "y", {1, 20}, "L"}}})) == std::vector<std::string>{"1=y"});
}

TEST_CASE("watch feeds: a restarted replica's feed, or changes it forgot, are a gap", "[watch][feed]") {
  WatchState state = fed();
  state.feed_page(0, {7, 1, 5}, {});
  CHECK_FALSE(state.round_due());
  SECTION("another log: the page is not used, and the feed is read again from its start") {
    state.feed_page(0, {70, 1, 9}, {change(9, "k", "a", 1, 10, true)});
    CHECK(state.round_due());
    CHECK(state.decide(kAll).empty());
    CHECK(state.feed_after(0) == 0);
    // A poll reads the feeds again after a gap, then its round.
    state.feed_page(0, {70, 1, 9}, {change(9, "k", "a", 1, 10, true)});
    CHECK(told(state.decide(kAll)) == std::vector<std::string>{"k=a"});
    CHECK(state.round({{"k", KeyRead{false, "a", {1, 10}, "L"}}}).empty());
    CHECK_FALSE(state.round_due());
  }
  SECTION("a feed not read at the round: first read after it, it may have lost changes") {
    state.feed_page(0, {70, 1, 9}, {});
    REQUIRE(state.round_due());
    CHECK(state.round({}).empty());  // replica 0 did not answer the poll's reads again
    CHECK_FALSE(state.round_due());
    state.feed_page(0, {71, 1, 1}, {});  // its log may have begun after the round
    CHECK(state.round_due());
    CHECK(state.round({}).empty());
    state.feed_page(0, {71, 1, 2}, {});
    CHECK_FALSE(state.round_due());
  }
  SECTION("changes forgotten after the last page read") {
    state.feed_page(0, {7, 8, 9}, {change(8, "k", "a", 1, 10, true)});
    CHECK(state.round_due());
    CHECK(told(state.decide(kAll)) == std::vector<std::string>{"k=a"});  // what it kept still counts
  }
  SECTION("a new replica set") {
    state.use_feeds(2, 4, 3);
    CHECK(state.round_due());
    CHECK(state.feed_after(3) == 0);
  }
}

TEST_CASE("watch feeds: a first round tells the delete of a key the feeds told in the same poll", "[watch][feed]") {
  WatchState state;
  state.use_feeds(1, 3, 2);
  for (int i = 0; i < 3; ++i) state.feed_page(i, {7u + i, 0, 0}, {});
  // The first round's read failed; the next poll's feeds show a put, and its round the key deleted since.
  state.feed_page(0, {7, 1, 1}, {change(1, "k", "v", 1, 10, true)});
  CHECK(told(state.decide(kAll)) == std::vector<std::string>{"k=v"});
  CHECK(told(state.round({{"k", KeyRead{true, "", {1, 20}, ""}}})) == std::vector<std::string>{"k=-"});
  // After the first round, a delete of a key never told is told.
  CHECK(told(state.round({{"k", KeyRead{true, "", {1, 20}, ""}}, {"gone", KeyRead{true, "", {1, 5}, ""}}})) ==
        std::vector<std::string>{"gone=-"});
}

TEST_CASE("watch feeds: a round tells a key no version holds back at once", "[watch][feed]") {
  WatchState state = fed();
  // An unacknowledged version on one feed, every feed read: not held.
  state.feed_page(0, {7, 1, 1}, {change(1, "k", "failed", 1, 10)});
  CHECK(state.decide(kAll).empty());
  CHECK(state.held().empty());
  state.feed_page(0, {70, 1, 1}, {});  // a gap
  CHECK(told(state.round({{"k", KeyRead{false, "newer", {1, 20}, "L"}}})) == std::vector<std::string>{"k=newer"});
  CHECK(state.decide(kAll).empty());
  CHECK(state.undecided() == 0);
}

TEST_CASE("watch feeds: a round's version and a feed's agree on what was told", "[watch][feed]") {
  WatchState state = fed();
  CHECK(told(state.round({{"k", KeyRead{false, "b", {1, 20}, "L"}}})) == std::vector<std::string>{"k=b"});
  state.feed_page(0, {7, 1, 2}, {change(1, "k", "a", 1, 10, true), change(2, "k", "b", 1, 20, true)});
  CHECK(state.decide(kAll).empty());  // older, and the same
  state.feed_page(1, {8, 1, 1}, {change(1, "k", "-", 1, 30, true)});
  CHECK(told(state.decide(kAll)) == std::vector<std::string>{"k=-"});
  CHECK(state.round({{"k", KeyRead{false, "-", {1, 30}, "L"}}}).empty());
}

TEST_CASE("watch feeds: negative control, trusting one feed tells a write never acknowledged", "[watch][feed]") {
  WatchState state = fed();
  state.broken_trusts_one_feed = true;
  state.feed_page(0, {7, 1, 1}, {change(1, "k", "zombie", 1, 10)});
  CHECK(told(state.decide(kAll)) == std::vector<std::string>{"k=zombie"});
}

}  // namespace
}  // namespace palisade::client
