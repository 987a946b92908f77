#include "metrics/http_server.h"

#include <cerrno>
#include <cstring>

#include <sys/socket.h>

#include <httplib.h>

namespace palisade::metrics {

namespace {

void answer(httplib::Response& response, const Health::Answer& a) {
  response.status = a.ok ? 200 : 503;
  response.set_content(a.text + "\n", "text/plain; charset=utf-8");
}

}  // namespace

HttpServer::HttpServer() : server_(std::make_unique<httplib::Server>()) {}

HttpServer::~HttpServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const ListenAddress& address, const Registry& registry,
                                                      const Health& health) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  httplib::Server& server = *s->server_;
  server.new_task_queue = [] { return new httplib::ThreadPool(2); };
  server.set_keep_alive_max_count(1);
  server.set_read_timeout(5);
  server.set_write_timeout(5);
  server.Get("/metrics", [&registry](const httplib::Request&, httplib::Response& response) {
    response.set_content(registry.render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/healthz",
             [&health](const httplib::Request&, httplib::Response& response) { answer(response, health.healthz()); });
  server.Get("/readyz",
             [&health](const httplib::Request&, httplib::Response& response) { answer(response, health.readyz()); });
  // A handler that throws answers 500; the daemon goes on.
  server.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
    response.status = 500;
    response.set_content("internal error\n", "text/plain");
  });
  // SO_REUSEADDR (a restart binds again at once) without httplib's
  // SO_REUSEPORT, with which a second daemon on the same port would bind too.
  server.set_socket_options([](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  errno = 0;
  const int port = address.port == 0                                 ? server.bind_to_any_port(address.host)
                   : server.bind_to_port(address.host, address.port) ? address.port
                                                                     : -1;
  if (port < 0) {
    return Status(Code::kUnavailable, "cannot listen for metrics on " + address.host + ":" +
                                          std::to_string(address.port) +
                                          (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string()));
  }
  s->port_ = port;
  s->thread_ = std::thread([&server, &returned = s->loop_returned_] {
    server.listen_after_bind();
    returned = true;  // stopped, or failed at once
  });
  // httplib's stop() does nothing before the loop runs: wait for it, so that
  // the destructor can always stop it.
  while (!server.is_running() && !s->loop_returned_) std::this_thread::yield();
  return s;
}

}  // namespace palisade::metrics
