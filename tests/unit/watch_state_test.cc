// client::WatchState, what a Watcher tells from each round's reads
// (palisade/watch.h; docs/consistency.md "Watches").
#include "client/watch_state.h"

#include <catch2/catch.hpp>

#include <map>
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

}  // namespace
}  // namespace palisade::client
