#include "common/transport.h"

namespace palisade::transport {
namespace {

void apply(zmq::socket_t& s, const SocketOptions& o) {
  s.set(zmq::sockopt::maxmsgsize, o.max_frame_bytes);
  s.set(zmq::sockopt::sndhwm, o.high_water_mark);
  s.set(zmq::sockopt::rcvhwm, o.high_water_mark);
  s.set(zmq::sockopt::linger, o.linger_ms);
}

// Drains the remaining frames of a message.
void discard_rest(zmq::socket_t& s) {
  while (s.get(zmq::sockopt::rcvmore)) {
    zmq::message_t frame;
    if (!s.recv(frame, zmq::recv_flags::dontwait)) return;
  }
}

}  // namespace

zmq::socket_t make_router(zmq::context_t& ctx, const std::string& bind_endpoint, const SocketOptions& options) {
  zmq::socket_t s(ctx, zmq::socket_type::router);
  apply(s, options);
  // Replies to a peer that vanished are dropped rather than blocking the loop.
  s.set(zmq::sockopt::router_mandatory, false);
  s.bind(bind_endpoint);
  return s;
}

zmq::socket_t make_dealer(zmq::context_t& ctx, const std::string& connect_endpoint, const SocketOptions& options) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  apply(s, options);
  // A send to a daemon that is not connected fails at once instead of queueing:
  // a request must never reach a replica long after its caller gave up on it.
  s.set(zmq::sockopt::immediate, !options.queue_until_connected);
  s.connect(connect_endpoint);
  return s;
}

std::optional<Routed> try_recv_routed(zmq::socket_t& router) {
  Routed r;
  if (!router.recv(r.identity, zmq::recv_flags::dontwait)) return std::nullopt;
  if (!router.get(zmq::sockopt::rcvmore)) return r;  // an empty message: the decoder says so
  (void)router.recv(r.payload);
  if (r.payload.size() == 0 && router.get(zmq::sockopt::rcvmore)) {
    r.delimited = true;
    (void)router.recv(r.payload);
  }
  if (router.get(zmq::sockopt::rcvmore)) {
    discard_rest(router);
    r.extra_frames = true;
  }
  return r;
}

bool send_routed(zmq::socket_t& router, Routed& to, std::string_view payload) {
  try {
    if (!router.send(to.identity, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return false;
    if (to.delimited) router.send(zmq::message_t(), zmq::send_flags::sndmore);
    router.send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::none);
    return true;
  } catch (const zmq::error_t&) {
    return false;
  }
}

}  // namespace palisade::transport
