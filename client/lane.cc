#include "client/lane.h"

#include "common/transport.h"

namespace palisade::client {

Lane::Lane(zmq::context_t& ctx, const std::vector<std::string>& endpoints, CoordinatorOptions options,
           HybridClock& clock, wire::Limits limits)
    : limits_(limits), coordinator_(options, clock) {
  // Commits and purges are not awaited: give them a moment to leave at close.
  transport::SocketOptions socket_options{.linger_ms = 500};
  for (const auto& endpoint : endpoints) sockets_.push_back(transport::make_dealer(ctx, endpoint, socket_options));
}

void Lane::add_poll_items(std::vector<zmq::pollitem_t>& items) {
  for (auto& s : sockets_) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
}

void Lane::receive(size_t replica, uint64_t now_ms) {
  zmq::message_t msg;
  while (sockets_[replica].recv(msg, zmq::recv_flags::dontwait)) {
    auto reply = wire::decode_reply({static_cast<const char*>(msg.data()), msg.size()}, limits_);
    if (reply.is_ok()) coordinator_.on_reply(static_cast<int>(replica), reply.value(), now_ms);
  }
}

std::vector<Completion> Lane::flush(uint64_t now_ms) {
  for (auto sends = coordinator_.take_sends(); !sends.empty(); sends = coordinator_.take_sends()) {
    for (const Send& s : sends) {
      std::string bytes = wire::encode_request(s.request);
      bool sent = false;
      try {
        sent = sockets_[s.replica].send(zmq::buffer(bytes), zmq::send_flags::dontwait).has_value();
      } catch (const zmq::error_t&) {
      }
      if (!sent) coordinator_.on_unreachable(s.replica, s.request.id, now_ms);
    }
  }
  return coordinator_.take_completions();
}

}  // namespace palisade::client
