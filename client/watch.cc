#include "palisade/watch.h"

#include <algorithm>
#include <utility>

#include "client/coordinator.h"
#include "client/polling.h"
#include "client/watch_state.h"

namespace palisade {

Watcher::Watcher(QuorumStore& store, WatchOptions options)
    : store_(store), options_(std::move(options)), state_(std::make_unique<client::WatchState>(options_.initial)) {}

Watcher::~Watcher() = default;
Watcher::Watcher(Watcher&&) noexcept = default;

std::map<std::string, FencedTimestamp> Watcher::seen() const { return state_->seen(); }

void Watcher::resume(const std::map<std::string, FencedTimestamp>& seen) { state_->resume(seen); }

Result<std::vector<WatchEvent>> Watcher::poll() {
  if (!options_.every_version) return round();
  std::vector<bool> caught_up;
  // Feeds that cannot be read (replicas older than them, a role that may
  // read the key but not every key it begins): each round's newest.
  if (!read_feeds(caught_up).is_ok()) return round();
  // After a gap the feeds are read once more, from now: pages taken before
  // the gap was seen may be older than versions the round would pass by.
  if (state_->gap() && !read_feeds(caught_up).is_ok()) return round();
  // What the feeds show first, then a round when one is due (the first
  // poll, a gap): it tells only what is newer still.
  std::vector<WatchEvent> events = state_->decide(caught_up);
  if (state_->round_due()) {
    auto read = round();
    if (!read.is_ok() && events.empty()) return read.status();
    // A round that fails is due again at the next poll.
    if (read.is_ok()) events.insert(events.end(), read.value().begin(), read.value().end());
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const WatchEvent& a, const WatchEvent& b) { return a.key < b.key; });
  return events;
}

Status Watcher::read_feeds(std::vector<bool>& caught_up) {
  const ReplicaSetInUse set = store_.replica_set();
  int n = static_cast<int>(set.replicas.size());
  state_->use_feeds(set.version, n, set.write_quorum);
  caught_up.assign(static_cast<size_t>(n), false);
  for (int page = 0; page < kFeedPagesPerPoll; ++page) {
    std::vector<uint64_t> after(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) after[static_cast<size_t>(i)] = state_->feed_after(i);
    // Versions held back, or a gap, wait for every replica's page, the slow
    // ones' too.
    client::FeedResult read =
        store_.read_feeds(options_.key, std::move(after), state_->gap() || !state_->held().empty());
    if (!read.status.is_ok()) return read.status;
    if (read.config != state_->feeds_version() || read.n != n) {
      // The store moved to another set meanwhile: its feeds start anew.
      state_->use_feeds(read.config, read.n, read.w);
      caught_up.assign(static_cast<size_t>(read.n), false);
      return Status::ok();
    }
    bool more = false;
    for (int i = 0; i < n; ++i) {
      const auto& got = read.pages[static_cast<size_t>(i)];
      if (!got) continue;
      std::vector<wire::FeedChange> changes = got->changes;
      if (!options_.prefix) std::erase_if(changes, [&](const wire::FeedChange& c) { return c.key != options_.key; });
      const bool used = state_->feed_page(i, *got->feed, changes);
      caught_up[static_cast<size_t>(i)] = used && !got->more;
      more = more || got->more;
    }
    if (!more) break;
  }
  return Status::ok();
}

Result<std::vector<WatchEvent>> Watcher::round() {
  std::map<std::string, client::KeyRead> now;
  if (!options_.prefix) {
    ReadResult read = store_.get(options_.key);
    if (!read.status.is_ok()) return read.status;
    if (read.found || read.ts != FencedTimestamp{}) {
      now[options_.key] = {!read.found, std::move(read.value), read.ts, std::move(read.lock)};
    }
    return state_->round(now);
  }
  // Every page first: a round that fails tells nothing and changes nothing.
  std::string after;
  do {
    ScanResult page = store_.scan(options_.key, after, options_.page);
    if (!page.status.is_ok()) return page.status;
    for (KeyValue& e : page.entries) now[e.key] = {false, std::move(e.value), e.ts, std::move(e.lock)};
    for (KeyValue& d : page.deleted) now[d.key] = {true, "", d.ts, ""};
    after = std::move(page.next);
  } while (!after.empty());
  return state_->round(now);
}

Status Watcher::run(const std::function<void(const WatchEvent&)>& on_event, std::stop_token stop,
                    std::chrono::milliseconds every, const std::function<void(const Status&)>& on_status) {
  return client::poll_every(
      every, std::move(stop),
      [&]() -> Status {
        auto events = poll();
        if (!events.is_ok()) return events.status();
        for (const WatchEvent& e : events.value()) on_event(e);
        return Status::ok();
      },
      on_status);
}

LockWatcher::LockWatcher(LockClient& client, std::string lock) : client_(client), lock_(std::move(lock)) {}

Result<std::optional<LockWatchEvent>> LockWatcher::poll() {
  auto grant = client_.current_grant(lock_);
  if (!grant.is_ok()) return grant.status();
  const auto same = [](const std::optional<Grant>& a, const std::optional<Grant>& b) {
    return a.has_value() == b.has_value() && (!a || (a->token == b->token && a->mode == b->mode));
  };
  if (told_ && same(*told_, grant.value())) return std::optional<LockWatchEvent>();
  told_ = grant.value();
  return std::optional<LockWatchEvent>(LockWatchEvent{lock_, grant.value()});
}

Status LockWatcher::run(const std::function<void(const LockWatchEvent&)>& on_event, std::stop_token stop,
                        std::chrono::milliseconds every, const std::function<void(const Status&)>& on_status) {
  return client::poll_every(
      every, std::move(stop),
      [&]() -> Status {
        auto event = poll();
        if (!event.is_ok()) return event.status();
        if (event.value()) on_event(*event.value());
        return Status::ok();
      },
      on_status);
}

}  // namespace palisade
