// The daemons' HTTP endpoint (--metrics-listen): GET /metrics (the registry
// in the Prometheus text format 0.0.4), /healthz and /readyz (health.h: 200
// "ok", or 503 with why not). cpp-httplib serves it on threads of its own,
// apart from the daemon's loop, with two workers and no keep-alive: a few
// scrapers at a time, never a cost to the loop beyond rendering.
//
// Thread safety: start and the destructor from one thread.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "metrics/health.h"
#include "metrics/listen_address.h"
#include "metrics/registry.h"
#include "palisade/status.h"

namespace httplib {
class Server;
}

namespace palisade::metrics {

class HttpServer {
 public:
  // Binds `address` and serves from a thread of its own; Unavailable, saying
  // why, when the address cannot be bound. `registry` and `health` must
  // outlive the server.
  static Result<std::unique_ptr<HttpServer>> start(const ListenAddress& address, const Registry& registry,
                                                   const Health& health);
  // Stops serving and joins its threads.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port it listens on (the one chosen when the address named port 0).
  int port() const { return port_; }

 private:
  HttpServer();

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> loop_returned_{false};  // listen_after_bind() returned
  int port_ = 0;
};

}  // namespace palisade::metrics
