#include "client/watch_state.h"

#include <algorithm>
#include <utility>

#include "wire/hash.h"

namespace palisade::client {
namespace {

// What tells apart two versions with one timestamp (writes without a lock
// from two clients can share one): their content, as replicas order them. A
// delete's lock is not part of it: a prefix read does not give it.
uint64_t content_of(const KeyRead& read) {
  return read.deleted ? hash64("", 1) : hash64(read.value, hash64(read.lock, 2));
}

KeyRead read_of(const wire::Version& v) { return {v.tombstone, v.value, v.ts, v.lock}; }

}  // namespace

bool WatchState::newer_than_told(const std::string& key, const FencedTimestamp& ts, uint64_t content) const {
  auto told = told_.find(key);
  if (told == told_.end()) return true;
  // Reads never go back in time, and one timestamp with other content is the
  // newer write of the two (they order it so).
  if (ts != told->second.ts) return told->second.ts < ts;
  return told->second.content && *told->second.content != content;
}

void WatchState::tell(std::vector<WatchEvent>& events, const std::string& key, const KeyRead& read, uint64_t content) {
  told_[key] = Told{read.ts, content, !read.deleted};
  events.push_back(read.deleted ? WatchEvent{WatchEvent::Kind::kDelete, key, "", read.ts, ""}
                                : WatchEvent{WatchEvent::Kind::kPut, key, read.value, read.ts, read.lock});
}

std::vector<WatchEvent> WatchState::round(const std::map<std::string, KeyRead>& now) {
  std::vector<WatchEvent> events;
  const bool first = std::exchange(first_, false);
  gap_ = false;
  for (Feed& f : feeds_) f.missed_round = !f.known;
  const bool tell_any = !first || initial_;
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
    if (!newer_than_told(key, read.ts, content)) continue;
    // Versions of the key the feeds hold back (they may prove acknowledged)
    // come first: the read's version waits its turn among them (a read
    // returns only an acknowledged version).
    if (!first && held_.contains(key)) {
      const wire::Version v{read.ts, read.lock, wire::VersionState::kCommitted, read.deleted, read.value};
      candidates_[key][{v.ts, wire::content_hash(v)}] = Candidate{v, {}, true};
      continue;
    }
    if (broken_tells_new_keys_only && told_.contains(key)) continue;
    // A delete of a key not told yet is told after the first round (it was
    // written and deleted between two rounds); the first round only learns
    // it, unless the feeds told the key's earlier versions in the same poll.
    if ((!tell_any || (first && read.deleted)) && !told_.contains(key)) {
      told_[key] = Told{read.ts, content, !read.deleted};
      continue;
    }
    tell(events, key, read, content);
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const WatchEvent& a, const WatchEvent& b) { return a.key < b.key; });
  return events;
}

void WatchState::use_feeds(uint64_t version, int n, int w) {
  if (version == version_ && static_cast<int>(feeds_.size()) == n && w_ == w) return;
  // Another set: the replicas' numbers name others now.
  if (!feeds_.empty()) gap_ = true;
  feeds_.assign(static_cast<size_t>(n), Feed{});
  version_ = version;
  w_ = w;
  candidates_.clear();
  held_.clear();
}

uint64_t WatchState::feed_after(int replica) const {
  const Feed& f = feeds_.at(static_cast<size_t>(replica));
  if (f.known) return f.after;
  return first_ ? kFeedHead : 0;
}

bool WatchState::feed_page(int replica, const wire::FeedPosition& position,
                           const std::vector<wire::FeedChange>& changes) {
  Feed& f = feeds_.at(static_cast<size_t>(replica));
  if (!f.known) {
    // Asked for its newest change (the first poll) or from its oldest kept:
    // then a feed that forgot changes may have forgotten some since the
    // watcher began, and one not read at the last round may have restarted
    // since, losing changes of its earlier log.
    if (!first_ && (position.first > 1 || f.missed_round)) gap_ = true;
    f = Feed{true, position.log, 0};
  } else if (position.log != f.log) {
    // The replica restarted: its changes since the last page are lost, and
    // this page's numbers are of the new feed. Read it from the start.
    gap_ = true;
    f = Feed{};
    return false;
  } else if (position.first > f.after + 1) {
    gap_ = true;
  }
  f.after = position.next;
  for (const wire::FeedChange& c : changes) {
    if (!newer_than_told(c.key, c.version.ts, content_of(read_of(c.version)))) continue;
    Candidate& seen = candidates_[c.key][{c.version.ts, wire::content_hash(c.version)}];
    seen.version = c.version;
    if (c.version.state == wire::VersionState::kCommitted) {
      seen.committed = true;
    } else {
      seen.written.insert(replica);
    }
  }
  return true;
}

std::vector<WatchEvent> WatchState::decide(const std::vector<bool>& caught_up) {
  std::vector<WatchEvent> events;
  const auto behind = static_cast<size_t>(std::count(caught_up.begin(), caught_up.end(), false));
  const auto w = static_cast<size_t>(w_);
  held_.clear();
  for (auto key = candidates_.begin(); key != candidates_.end();) {
    auto& versions = key->second;
    for (auto it = versions.begin(); it != versions.end();) {
      const Candidate& c = it->second;
      const KeyRead read = read_of(c.version);
      const uint64_t content = content_of(read);
      if (!newer_than_told(key->first, read.ts, content)) {
        it = versions.erase(it);
        continue;
      }
      const bool acknowledged = c.committed || c.written.size() >= w || (broken_trusts_one_feed && !c.written.empty());
      if (acknowledged) {
        if (!(broken_tells_new_keys_only && told_.contains(key->first))) tell(events, key->first, read, content);
        it = versions.erase(it);
        continue;
      }
      // It may have W copies on replicas whose feeds were not read: the
      // key's newer versions wait for it.
      if (c.written.size() + behind >= w) {
        held_.insert(key->first);
        break;
      }
      ++it;  // not acknowledged so far: a newer version told passes it by
    }
    key = versions.empty() ? candidates_.erase(key) : std::next(key);
  }
  if (undecided() > kMaxUndecided) {
    candidates_.clear();
    held_.clear();
    gap_ = true;
  }
  return events;
}

size_t WatchState::undecided() const {
  size_t n = 0;
  for (const auto& [key, versions] : candidates_) n += versions.size();
  return n;
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
