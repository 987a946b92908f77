#include "client/zmq_links.h"

#include <string_view>

#include "transport/transport.h"

namespace palisade::client {

ZmqLinks::ZmqLinks(zmq::context_t& ctx, const std::vector<std::string>& endpoints,
                   const std::optional<Credentials>& credentials) {
  // Commits and purges are not awaited: give them a moment to leave at close.
  const transport::SocketOptions socket_options{.linger_ms = 500};
  for (const auto& endpoint : endpoints) {
    sockets_.push_back(
        transport::make_dealer(ctx, endpoint, transport::dealer_options(socket_options, credentials, endpoint)));
  }
}

bool ZmqLinks::send(size_t replica, const std::vector<std::string>& frames) {
  try {
    for (size_t i = 0; i < frames.size(); ++i) {
      const auto more = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
      // ZeroMQ takes every frame of a message once it took the first.
      if (!transport::send(sockets_[replica], zmq::buffer(frames[i]), more | zmq::send_flags::dontwait)) return false;
    }
    return true;
  } catch (const zmq::error_t&) {
    return false;
  }
}

void ZmqLinks::add_poll_items(std::vector<zmq::pollitem_t>& items) {
  for (auto& socket : sockets_) items.push_back({socket.handle(), 0, ZMQ_POLLIN, 0});
}

void ZmqLinks::receive(size_t replica, Lane& lane, uint64_t now_ms) {
  zmq::message_t msg;
  while (transport::recv(sockets_[replica], msg)) {  // a frame at a time
    lane.on_frame(replica, {static_cast<const char*>(msg.data()), msg.size()}, now_ms);
  }
}

}  // namespace palisade::client
