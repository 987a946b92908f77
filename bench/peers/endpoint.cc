#include "bench/peers/endpoint.h"

#include <stdexcept>

namespace palisade::bench::peers {

std::pair<std::string, int> split_host_port(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size()) {
    throw std::invalid_argument("not host:port: '" + endpoint + "'");
  }
  size_t used = 0;
  const int port = std::stoi(endpoint.substr(colon + 1), &used);
  if (used != endpoint.size() - colon - 1 || port <= 0 || port > 65535) {
    throw std::invalid_argument("bad port in '" + endpoint + "'");
  }
  return {endpoint.substr(0, colon), port};
}

}  // namespace palisade::bench::peers
