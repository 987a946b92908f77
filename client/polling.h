// The loop of the recipes that poll (Election::observe, Watcher::run,
// LockWatcher::run): a round every `every` until a stop.
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>

#include "palisade/status.h"

namespace palisade::client {

// Runs `round` now and then every `every` until `stop` is requested (ok, at
// once: the wait ends with the stop). A round that fails unavailable or
// timeout is tried again at the next; any other error ends the loop and is
// returned.
// `on_status`, when given, is told each round whose code differs from the
// round before's (the first round's only when it fails).
Status poll_every(std::chrono::milliseconds every, std::stop_token stop, const std::function<Status()>& round,
                  const std::function<void(const Status&)>& on_status = {});

}  // namespace palisade::client
