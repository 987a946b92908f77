// host:port endpoints as the peer clients take them.
#pragma once

#include <string>
#include <utility>

namespace palisade::bench::peers {

// "127.0.0.1:6379" -> {"127.0.0.1", 6379}; throws std::invalid_argument when malformed.
std::pair<std::string, int> split_host_port(const std::string& endpoint);

}  // namespace palisade::bench::peers
