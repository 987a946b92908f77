#include "client/watch_state.h"

#include <algorithm>
#include <utility>

#include "wire/hash.h"

namespace palisade::client {
namespace {

// What tells apart two versions with one timestamp (writes without a lock
// from two clients can share one): their content, as replicas order them.
uint64_t content_of(const KeyRead& read) { return hash64(read.value, hash64(read.lock, read.deleted ? 1 : 2)); }

}  // namespace

std::vector<WatchEvent> WatchState::round(const std::map<std::string, KeyRead>& now) {
  std::vector<WatchEvent> events;
  const bool first = std::exchange(first_, false);
  const bool tell = !first || initial_;
  // Keys told with a value and now read as nothing at all: deleted, their
  // tombstones forgotten since (reads follow the read rules, so such a key
  // has no value).
  for (auto& [key, told] : told_) {
    if (told.alive && !now.contains(key)) {
      events.push_back({WatchEvent::Kind::kDelete, key, "", {}, ""});
      told = Told{};
    }
  }
  for (const auto& [key, read] : now) {
    const uint64_t content = content_of(read);
    auto told = told_.find(key);
    if (told != told_.end()) {
      // Told already: reads never go back in time, and one timestamp with
      // other content is the newer write of the two (they order it so).
      if (read.ts < told->second.ts) continue;
      if (read.ts == told->second.ts && (!told->second.content || *told->second.content == content)) continue;
      if (broken_tells_new_keys_only) continue;
    }
    told_[key] = Told{read.ts, content, !read.deleted};
    // A delete of a key not told yet is told after the first round (it was
    // written and deleted between two rounds); the first round only learns it.
    if (!tell || (first && read.deleted)) continue;
    events.push_back(read.deleted ? WatchEvent{WatchEvent::Kind::kDelete, key, "", read.ts, ""}
                                  : WatchEvent{WatchEvent::Kind::kPut, key, read.value, read.ts, read.lock});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const WatchEvent& a, const WatchEvent& b) { return a.key < b.key; });
  return events;
}

std::map<std::string, FencedTimestamp> WatchState::seen() const {
  std::map<std::string, FencedTimestamp> out;
  for (const auto& [key, told] : told_) out[key] = told.ts;
  return out;
}

void WatchState::resume(const std::map<std::string, FencedTimestamp>& seen) {
  told_.clear();
  // Whether a key had a value is not kept: one seen is taken as alive, so
  // that one gone since is told deleted (at worst a second time).
  for (const auto& [key, ts] : seen) told_[key] = Told{ts, std::nullopt, true};
  first_ = false;
}

}  // namespace palisade::client
