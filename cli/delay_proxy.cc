#include "cli/delay_proxy.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <vector>

#include "cli/process.h"

namespace palisade::cli {
namespace {

int port_of(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (endpoint.rfind("tcp://127.", 0) != 0 || colon == std::string::npos) {
    throw std::invalid_argument("a delay proxy forwards to tcp://127.x.y.z:PORT, not " + endpoint);
  }
  return std::stoi(endpoint.substr(colon + 1));
}

// Moves what `from` has to `to`; false when `from` closed or either failed.
bool pump(int from, int to) {
  char buf[64 * 1024];
  const ssize_t n = ::read(from, buf, sizeof buf);
  if (n <= 0) return false;
  for (ssize_t done = 0; done < n;) {
    const ssize_t w = ::write(to, buf + done, static_cast<size_t>(n - done));
    if (w <= 0) return false;
    done += w;
  }
  return true;
}

}  // namespace

DelayProxy::DelayProxy(const std::string& target) : target_port_(port_of(target)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = loopback_address(0);
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw std::runtime_error("the delay proxy cannot listen on loopback");
  }
  endpoint_ = "tcp://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  thread_ = std::thread([this] { run(); });
}

DelayProxy::~DelayProxy() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

void DelayProxy::set_held(bool held) {
  std::unique_lock lock(mu_);
  held_ = held;
  changed_.wait(lock, [&] { return applied_ == held; });
}

void DelayProxy::run() {
  struct Link {
    int client;
    int server;
  };
  std::vector<Link> links;
  while (!stop_) {
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
    bool held;
    {
      std::lock_guard lock(mu_);
      held = applied_ = held_;
    }
    changed_.notify_all();
    for (const Link& l : links) {
      fds.push_back({l.client, static_cast<short>(held ? 0 : POLLIN), 0});
      fds.push_back({l.server, static_cast<short>(held ? 0 : POLLIN), 0});
    }
    if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
    // The links polled, before a new one joins them without an entry in fds.
    for (size_t i = 0; i < links.size();) {
      const pollfd& c = fds[1 + 2 * i];
      const pollfd& s = fds[2 + 2 * i];
      bool open = true;
      if (c.revents & (POLLIN | POLLHUP | POLLERR)) open = pump(links[i].client, links[i].server);
      if (open && (s.revents & (POLLIN | POLLHUP | POLLERR))) open = pump(links[i].server, links[i].client);
      if (open) {
        ++i;
        continue;
      }
      ::close(links[i].client);
      ::close(links[i].server);
      links.erase(links.begin() + static_cast<std::ptrdiff_t>(i));
      fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(1 + 2 * i), fds.begin() + static_cast<std::ptrdiff_t>(3 + 2 * i));
    }
    if (fds[0].revents & POLLIN) {
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr = loopback_address(target_port_);
      if (client >= 0 && server >= 0 && ::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        links.push_back({client, server});
      } else {  // the target is down: the client sees a closed link and reconnects later
        if (client >= 0) ::close(client);
        if (server >= 0) ::close(server);
      }
    }
  }
  for (const Link& l : links) {
    ::close(l.client);
    ::close(l.server);
  }
}

}  // namespace palisade::cli
