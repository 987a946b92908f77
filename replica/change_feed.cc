#include "replica/change_feed.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace palisade::replica {

ChangeFeed::ChangeFeed(FeedOptions options) : options_(options) {
  PALISADE_CHECK(options_.log != 0 && options_.max_changes >= 1);
}

// As the reply carries it: number, key, flags and timestamp, lock, value.
size_t ChangeFeed::size_of(const wire::FeedChange& c) {
  return 8 + 2 + c.key.size() + 17 + 2 + c.version.lock.size() + 4 + c.version.value.size() + 2;
}

void ChangeFeed::append(std::string_view key, const wire::Version& v) {
  wire::FeedChange& c = changes_.emplace_back(wire::FeedChange{next_seq_++, std::string(key), v});
  c.version.sequencer.clear();
  bytes_ += size_of(c);
  // The newest change stays, whatever its size.
  while (changes_.size() > 1 && (changes_.size() > options_.max_changes || bytes_ > options_.max_bytes)) {
    bytes_ -= size_of(changes_.front());
    changes_.pop_front();
  }
}

wire::ReplicaReply ChangeFeed::read(const wire::ChangesRequest& r) const {
  wire::ReplicaReply reply;
  const uint64_t first = changes_.empty() ? 0 : changes_.front().seq;
  reply.feed = wire::FeedPosition{options_.log, first, std::min(r.after, next_seq_ - 1)};
  if (changes_.empty() || r.after >= next_seq_ - 1) return reply;
  size_t at = r.after < first ? 0 : static_cast<size_t>(r.after - first + 1);
  const size_t end = std::min(changes_.size(), at + kChangesLookedAt);
  size_t bytes = 0;
  for (; at < end; ++at) {
    const wire::FeedChange& c = changes_[at];
    if (!c.key.starts_with(r.prefix)) {
      reply.feed->next = c.seq;
      continue;
    }
    const size_t size = size_of(c);
    if (reply.changes.size() == r.limit || (!reply.changes.empty() && bytes + size > wire::kChangesReplyBudgetBytes)) {
      break;
    }
    bytes += size;
    reply.changes.push_back(c);
    reply.feed->next = c.seq;
  }
  reply.more = at < changes_.size();
  return reply;
}

}  // namespace palisade::replica
