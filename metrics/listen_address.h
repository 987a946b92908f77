// The HOST:PORT of --metrics-listen.
#pragma once

#include <string>
#include <string_view>

#include "palisade/status.h"

namespace palisade::metrics {

struct ListenAddress {
  std::string host;  // a name or an address; an IPv6 address without its brackets
  int port = 0;  // 0: any free port
};

// Parses "HOST:PORT", "[IPv6]:PORT" or ":PORT" (every interface: 0.0.0.0).
// BadRequest, saying what is wrong, for anything else.
Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace palisade::metrics
