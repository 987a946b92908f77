// The demo's TCP proxy that can hold traffic back (cli/delay_proxy.h), between
// plain loopback sockets: the test is both the clients and the target.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>

#include "cli/delay_proxy.h"
#include "cli/process.h"

namespace palisade::cli {
namespace {

constexpr int kTimeoutMs = 5000;

int port_of(const std::string& endpoint) { return std::stoi(endpoint.substr(endpoint.rfind(':') + 1)); }

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

// A socket closed when the test ends.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) { REQUIRE(fd_ >= 0); }
  ~Fd() { close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// What the proxy forwards to: a listening socket the test accepts on.
struct Target {
  Fd listener{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  int port = 0;

  Target() {
    sockaddr_in addr = loopback_address(0);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener.get(), 16) == 0);
    REQUIRE(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port); }
};

int connect_to(const std::string& endpoint) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr = loopback_address(port_of(endpoint));
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

int accept_from(const Target& target) {
  REQUIRE(readable(target.listener.get(), kTimeoutMs));
  return ::accept4(target.listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
}

// A client through the proxy, and the target's end of its link (the proxy
// connects on as it accepts).
struct Link {
  Fd client;
  Fd server;
  Link(const DelayProxy& proxy, const Target& target)
      : client(connect_to(proxy.endpoint())), server(accept_from(target)) {}
};

void send(const Fd& fd, const std::string& bytes) {
  REQUIRE(::write(fd.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
}

std::string receive(const Fd& fd, size_t n) {
  std::string got;
  while (got.size() < n) {
    REQUIRE(readable(fd.get(), kTimeoutMs));
    char buf[256];
    const ssize_t r = ::read(fd.get(), buf, std::min(sizeof buf, n - got.size()));
    REQUIRE(r > 0);
    got.append(buf, static_cast<size_t>(r));
  }
  return got;
}

void exchange(const Link& link, const std::string& tag) {
  send(link.client, "ask " + tag);
  CHECK(receive(link.server, 4 + tag.size()) == "ask " + tag);
  send(link.server, "answer " + tag);
  CHECK(receive(link.client, 7 + tag.size()) == "answer " + tag);
}

TEST_CASE("delay proxy: forwards each connection both ways as connections come and go", "[cli]") {
  Target target;
  DelayProxy proxy(target.endpoint());
  auto first = std::make_unique<Link>(proxy, target);
  exchange(*first, "1");
  // A connection accepted while another is open: both stay forwarded.
  Link second(proxy, target);
  exchange(second, "2");
  exchange(*first, "1 again");
  Link third(proxy, target);
  first.reset();  // closed by its client: the proxy closes the target's end
  exchange(third, "3");
  exchange(second, "2 again");
}

TEST_CASE("delay proxy: nothing sent while held gets through until release, then all of it in order", "[cli]") {
  Target target;
  DelayProxy proxy(target.endpoint());
  Link link(proxy, target);
  exchange(link, "before");
  proxy.hold();
  send(link.client, "held 1;");
  send(link.client, "held 2;");
  // Absence cannot be waited for: a proxy that let it through would do so
  // within this time on loopback, and the check would fail.
  CHECK_FALSE(readable(link.server.get(), 300));
  proxy.release();
  CHECK(receive(link.server, 14) == "held 1;held 2;");
  exchange(link, "after");
}

}  // namespace
}  // namespace palisade::cli
