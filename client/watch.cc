#include "palisade/watch.h"

#include <algorithm>
#include <utility>

#include "client/polling.h"

namespace palisade {

Watcher::Watcher(QuorumStore& store, WatchOptions options) : store_(store), options_(std::move(options)) {}

void Watcher::resume(std::map<std::string, FencedTimestamp> seen) {
  seen_ = std::move(seen);
  alive_.clear();
  // Whether a key had a value is not kept: one seen is taken as alive, so
  // that one gone since is told deleted (at worst a second time).
  for (const auto& [key, ts] : seen_) alive_[key] = true;
  first_ = false;
}

Status Watcher::read_round(std::map<std::string, Now>& now) {
  if (!options_.prefix) {
    ReadResult read = store_.get(options_.key);
    if (!read.status.is_ok()) return read.status;
    if (read.found || read.ts != FencedTimestamp{}) {
      now[options_.key] = {!read.found, std::move(read.value), read.ts, std::move(read.lock)};
    }
    return Status::ok();
  }
  std::string after;
  do {
    ScanResult page = store_.scan(options_.key, after, options_.page);
    if (!page.status.is_ok()) return page.status;
    for (KeyValue& e : page.entries) now[e.key] = {false, std::move(e.value), e.ts, std::move(e.lock)};
    for (KeyValue& d : page.deleted) now[d.key] = {true, "", d.ts, ""};
    after = std::move(page.next);
  } while (!after.empty());
  return Status::ok();
}

Result<std::vector<WatchEvent>> Watcher::poll() {
  std::map<std::string, Now> now;
  if (Status s = read_round(now); !s.is_ok()) return s;
  std::vector<WatchEvent> events;
  const bool first = std::exchange(first_, false);
  const bool tell = !first || options_.initial;
  // Keys told before and read now as nothing at all: deleted, their
  // tombstones forgotten since. Read by the read rules, so never a key that
  // has a value.
  for (auto& [key, alive] : alive_) {
    if (alive && !now.contains(key)) {
      events.push_back({WatchEvent::Kind::kDelete, key, "", {}, ""});
      alive = false;
      seen_[key] = {};
    }
  }
  for (auto& [key, read] : now) {
    auto seen = seen_.find(key);
    if (seen != seen_.end() && read.ts <= seen->second) continue;  // told already (reads never go back in time)
    seen_[key] = read.ts;
    alive_[key] = !read.deleted;
    // A delete of a key not seen yet is told after the first round (it was
    // written and deleted between two rounds); the first round only learns it.
    if (!tell || (first && read.deleted)) continue;
    events.push_back(
        read.deleted ? WatchEvent{WatchEvent::Kind::kDelete, key, "", read.ts, ""}
                     : WatchEvent{WatchEvent::Kind::kPut, key, std::move(read.value), read.ts, std::move(read.lock)});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const WatchEvent& a, const WatchEvent& b) { return a.key < b.key; });
  return events;
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
