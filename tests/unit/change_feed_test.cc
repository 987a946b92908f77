// The replica's change feed: numbering, prefixes, paging, and its bounds.
#include <catch2/catch.hpp>

#include "replica/change_feed.h"

namespace palisade {
namespace {

using replica::ChangeFeed;
using replica::FeedOptions;
using wire::ChangesRequest;
using wire::Version;
using wire::VersionState;

Version version(std::string value, uint64_t hlc = 1) {
  return {{0, hlc}, "", VersionState::kPending, false, std::move(value), "ps2.sequencer"};
}

std::vector<uint64_t> seqs(const wire::ReplicaReply& r) {
  std::vector<uint64_t> out;
  for (const wire::FeedChange& c : r.changes) out.push_back(c.seq);
  return out;
}

TEST_CASE("change feed: changes numbered from 1, read after a number, a prefix's only", "[replica][feed]") {
  ChangeFeed feed({.log = 77});
  auto empty = feed.read(ChangesRequest{"", 0, 10});
  CHECK(empty.feed == wire::FeedPosition{77, 0, 0});
  CHECK(empty.changes.empty());
  CHECK_FALSE(empty.more);

  feed.append("a/1", version("x", 1));
  feed.append("b/1", version("y", 2));
  feed.append("a/2", version("z", 3));
  auto all = feed.read(ChangesRequest{"", 0, 10});
  CHECK(all.feed == wire::FeedPosition{77, 1, 3});
  CHECK(seqs(all) == std::vector<uint64_t>{1, 2, 3});
  CHECK(all.changes[1].key == "b/1");
  CHECK(all.changes[1].version.value == "y");
  CHECK(all.changes[1].version.sequencer.empty());  // not kept: watchers need no sequencer

  auto a = feed.read(ChangesRequest{"a/", 1, 10});
  CHECK(seqs(a) == std::vector<uint64_t>{3});
  CHECK(a.feed->next == 3);
  // A prefix none matches still moves the position past what was looked at.
  auto c = feed.read(ChangesRequest{"c/", 0, 10});
  CHECK(c.changes.empty());
  CHECK(c.feed->next == 3);
  // Nothing after the newest; an `after` from a longer feed (another log) is answered from the newest.
  CHECK(feed.read(ChangesRequest{"", 3, 10}).changes.empty());
  CHECK(feed.read(ChangesRequest{"", 99, 10}).feed->next == 3);
}

TEST_CASE("change feed: a page stops at its limit or its byte budget, and says more", "[replica][feed]") {
  ChangeFeed feed({});
  for (int i = 0; i < 5; ++i) feed.append("k", version("v", i + 1));
  auto page = feed.read(ChangesRequest{"", 0, 2});
  CHECK(seqs(page) == std::vector<uint64_t>{1, 2});
  CHECK(page.feed->next == 2);
  CHECK(page.more);
  auto rest = feed.read(ChangesRequest{"", page.feed->next, 10});
  CHECK(seqs(rest) == std::vector<uint64_t>{3, 4, 5});
  CHECK_FALSE(rest.more);

  const std::string big(wire::kChangesReplyBudgetBytes / 2, 'v');
  ChangeFeed large({});
  for (int i = 0; i < 3; ++i) large.append("k", version(big, i + 1));
  auto first = large.read(ChangesRequest{"", 0, 10});
  CHECK(seqs(first) == std::vector<uint64_t>{1});  // a second would pass the budget
  CHECK(first.more);
}

TEST_CASE("change feed: a narrow prefix in a busy feed is looked for a bounded way at a time", "[replica][feed]") {
  ChangeFeed feed({.max_changes = 2 * ChangeFeed::kChangesLookedAt});
  for (size_t i = 0; i < ChangeFeed::kChangesLookedAt + 5; ++i) feed.append("busy", version("v", i + 1));
  feed.append("rare", version("r"));
  auto page = feed.read(ChangesRequest{"rare", 0, 10});
  CHECK(page.changes.empty());
  CHECK(page.feed->next == ChangeFeed::kChangesLookedAt);
  CHECK(page.more);
  auto next = feed.read(ChangesRequest{"rare", page.feed->next, 10});
  CHECK(seqs(next) == std::vector<uint64_t>{ChangeFeed::kChangesLookedAt + 6});
  CHECK_FALSE(next.more);
}

TEST_CASE("change feed: the oldest changes are forgotten past either bound, the newest kept", "[replica][feed]") {
  ChangeFeed by_count({.max_changes = 3});
  for (int i = 0; i < 5; ++i) by_count.append("k", version("v", i + 1));
  CHECK(by_count.size() == 3);
  auto page = by_count.read(ChangesRequest{"", 1, 10});
  // The reader that had seen change 1 learns that 2 was forgotten: the first kept is 3.
  CHECK(page.feed->first == 3);
  CHECK(seqs(page) == std::vector<uint64_t>{3, 4, 5});

  ChangeFeed by_bytes({.max_bytes = 1000});
  by_bytes.append("k", version(std::string(400, 'a')));
  by_bytes.append("k", version(std::string(400, 'b')));
  CHECK(by_bytes.size() == 2);
  by_bytes.append("k", version(std::string(400, 'c')));
  CHECK(by_bytes.size() == 2);
  CHECK(by_bytes.bytes() <= 1000);
  by_bytes.append("k", version(std::string(5000, 'd')));  // larger than the bound: kept alone
  CHECK(by_bytes.size() == 1);
  CHECK(by_bytes.read(ChangesRequest{"", 0, 10}).changes.at(0).seq == 4);
}

}  // namespace
}  // namespace palisade
