#include "lockgroup/lock_events.h"

#include <spdlog/fmt/fmt.h>

#include "base/quoted.h"

namespace palisade::lockgroup {
namespace {

std::string listed(const std::vector<std::string>& locks) {
  std::string out = fmt::format("{} lock{}", locks.size(), locks.size() == 1 ? "" : "s");
  for (size_t i = 0; i < locks.size() && i < kMaxLocksListed; ++i) {
    out += (i == 0 ? ": " : ", ") + quoted_bytes(locks[i]);
  }
  if (locks.size() > kMaxLocksListed) out += fmt::format(" and {} more", locks.size() - kMaxLocksListed);
  return out;
}

}  // namespace

std::string describe(const LockEvent& e) {
  switch (e.kind) {
    case LockEvent::Kind::kGranted:
      return fmt::format("granted lock {} {} to session {}{}, token {}", quoted_bytes(e.lock), mode_name(e.mode),
                         e.session, e.again ? " again" : "", e.token);
    case LockEvent::Kind::kReleased:
      return fmt::format("released lock {} by session {}", quoted_bytes(e.lock), e.session);
    case LockEvent::Kind::kClosed:
      return fmt::format("session {} closed, releasing {}", e.session, listed(e.locks));
    case LockEvent::Kind::kExpired:
      return fmt::format("session {} expired, releasing {} (with their lock-delays)", e.session, listed(e.locks));
  }
  return "unknown lock event";
}

}  // namespace palisade::lockgroup
