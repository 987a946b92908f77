#include "cli/reachable.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace palisade::cli {
namespace {

// A socket connecting to a tcp://HOST:PORT endpoint, without blocking: -1 when
// the connect failed at once (refused on loopback, no such host), -2 when the
// endpoint is not tcp://.
int start_connect(const std::string& endpoint) {
  if (endpoint.rfind("tcp://", 0) != 0) return -2;
  const std::string address = endpoint.substr(6);
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) return -1;
  int fd = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  return fd;
}

}  // namespace

std::vector<std::string> refusing(const std::vector<std::string>& endpoints, std::chrono::milliseconds timeout) {
  std::vector<std::string> out;
  std::vector<pollfd> pending;
  std::vector<size_t> which;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const int fd = start_connect(endpoints[i]);
    if (fd == -1) out.push_back(endpoints[i]);
    if (fd >= 0) {
      pending.push_back({fd, POLLOUT, 0});
      which.push_back(i);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t open = pending.size();
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || poll(pending.data(), pending.size(), static_cast<int>(left.count())) <= 0) break;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pending[i].fd < 0 || pending[i].revents == 0) continue;
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(pending[i].fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) out.push_back(endpoints[which[i]]);
      close(pending[i].fd);
      pending[i].fd = -1;  // poll() skips it
      --open;
    }
  }
  for (const pollfd& p : pending) {
    if (p.fd >= 0) close(p.fd);
  }
  return out;
}

Status enough_listening(const std::vector<std::string>& endpoints, size_t needed, const std::string& what,
                        std::chrono::milliseconds timeout) {
  const std::vector<std::string> down = refusing(endpoints, timeout);
  if (endpoints.size() - down.size() >= needed) return Status::ok();
  std::string list;
  for (const std::string& e : down) list += (list.empty() ? "" : ", ") + e;
  const std::string head = down.size() == endpoints.size() ? "nothing answers: " : "";
  return Status(Code::kUnavailable, head + std::to_string(down.size()) + " of " + std::to_string(endpoints.size()) +
                                        " " + what + " refuse connections (" + list + "), " + std::to_string(needed) +
                                        " must answer; is the cluster running? (`palisade cluster up`)");
}

}  // namespace palisade::cli
