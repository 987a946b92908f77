#include "base/endpoint.h"

namespace palisade {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string tcp_problem(std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return "it has no port (tcp://HOST:PORT)";
  const std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  if (host.empty()) return "it has no host (tcp://HOST:PORT)";
  if (host == "*") return "'*' is for listening: name the host clients connect to";
  if (host.front() == '[' && host.back() != ']') return "its IPv6 address lacks a ']'";
  if (!all_digits(port) || port.size() > 5 || std::stoi(std::string(port)) < 1 || std::stoi(std::string(port)) > 65535) {
    return "its port '" + std::string(port) + "' is not a number 1..65535";
  }
  return "";
}

}  // namespace

std::string endpoint_problem(std::string_view endpoint) {
  const std::string quoted = "'" + std::string(endpoint) + "'";
  const size_t sep = endpoint.find("://");
  if (sep == std::string_view::npos) {
    return quoted + " is not an endpoint: write tcp://HOST:PORT (or ipc://PATH)";
  }
  const std::string_view scheme = endpoint.substr(0, sep);
  const std::string_view rest = endpoint.substr(sep + 3);
  std::string problem;
  if (scheme == "tcp") {
    problem = tcp_problem(rest);
  } else if (scheme == "ipc" || scheme == "inproc") {
    if (rest.empty()) problem = "it names no path";
  } else {
    problem = "'" + std::string(scheme) + "' is not a transport palisade speaks (tcp, ipc, inproc)";
  }
  return problem.empty() ? "" : "endpoint " + quoted + " is not valid: " + problem;
}

}  // namespace palisade
