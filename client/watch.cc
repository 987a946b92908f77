#include "palisade/watch.h"

#include <utility>

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
