#include "metrics/listen_address.h"

#include <charconv>

namespace palisade::metrics {

Result<ListenAddress> parse_listen_address(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status(Code::kBadRequest, "metrics address '" + std::string(text) + "' " + why +
                                         " (expected HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:9464)");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("has no port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.starts_with('[')) {
    if (!host.ends_with(']') || host.size() < 3) return bad("has an unclosed or empty [IPv6 address]");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("has an IPv6 address without [brackets]");
  }
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 ||
      port > 65535) {
    return bad("has no port number in 0..65535");
  }
  return ListenAddress{.host = host.empty() ? "0.0.0.0" : std::string(host), .port = port};
}

}  // namespace palisade::metrics
