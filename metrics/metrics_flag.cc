#include "metrics/metrics_flag.h"

#include <spdlog/spdlog.h>

#include "metrics/listen_address.h"

namespace palisade::metrics {

void add_metrics_flag(CLI::App& app, std::string* listen) {
  app.add_option("--metrics-listen", *listen,
                 "Serve Prometheus metrics at http://HOST:PORT/metrics, and /healthz and /readyz\n"
                 "(docs/metrics.md), e.g. 127.0.0.1:9464. Default: off. Unauthenticated plain HTTP:\n"
                 "bind it to localhost or a monitoring network")
      ->type_name("HOST:PORT")
      ->check([](const std::string& text) {
        auto address = parse_listen_address(text);
        return address.is_ok() ? std::string() : address.status().message();
      });
}

Result<std::unique_ptr<HttpServer>> serve_metrics(const std::string& listen, const Registry& registry,
                                                  const Health& health) {
  if (listen.empty()) return std::unique_ptr<HttpServer>();
  auto address = parse_listen_address(listen);
  if (!address.is_ok()) return address.status();
  auto server = HttpServer::start(address.value(), registry, health);
  if (server.is_ok())
    spdlog::info("metrics, /healthz and /readyz on http://{} (port {})", listen, server.value()->port());
  return server;
}

}  // namespace palisade::metrics
