// --metrics-listen, the same for every daemon: the flag, and the endpoint it
// starts (http_server.h).
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "metrics/health.h"
#include "metrics/http_server.h"
#include "metrics/registry.h"

namespace palisade::metrics {

// Adds --metrics-listen HOST:PORT to `app`, into `*listen`; CLI11 refuses a
// malformed address with parse_listen_address's message.
void add_metrics_flag(CLI::App& app, std::string* listen);

// Starts the endpoint on `listen` (checked by the flag) and logs where;
// nullptr when empty (off). Unavailable when it cannot bind.
Result<std::unique_ptr<HttpServer>> serve_metrics(const std::string& listen, const Registry& registry,
                                                  const Health& health);

}  // namespace palisade::metrics
