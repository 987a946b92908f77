// Which endpoints refuse a TCP connection now. ZeroMQ retries a refused
// connect in silence, so a command run with nothing listening would wait out
// its whole timeout before saying "unavailable"; a refusal is known at once.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "palisade/status.h"

namespace palisade::cli {

// The endpoints of `endpoints` that refused a TCP connection (or whose host
// does not resolve) within `timeout`. One that neither accepted nor refused
// by then is not listed: it may just be slow. Not tcp:// ones are not tried.
std::vector<std::string> refusing(const std::vector<std::string>& endpoints, std::chrono::milliseconds timeout);

// Unavailable, at once, when fewer than `needed` of `endpoints` (the `what`:
// "replicas", "lock group nodes") could answer because the others refuse
// connections: "nothing answers" when none could. Ok otherwise.
Status enough_listening(const std::vector<std::string>& endpoints, size_t needed, const std::string& what,
                        std::chrono::milliseconds timeout = std::chrono::seconds(1));

}  // namespace palisade::cli
