#include "transport/transport.h"

#include <cerrno>
#include <stdexcept>

#include "transport/zap_handler.h"

namespace palisade::transport {
namespace {

void apply(zmq::socket_t& s, const SocketOptions& o) {
  s.set(zmq::sockopt::maxmsgsize, o.max_frame_bytes);
  s.set(zmq::sockopt::sndhwm, o.high_water_mark);
  s.set(zmq::sockopt::rcvhwm, o.high_water_mark);
  s.set(zmq::sockopt::linger, o.linger_ms);
}

void check_key(std::string_view what, const std::string& key) {
  if (!is_z85_key(key)) throw std::invalid_argument(std::string(what) + " is not a CURVE key (40 characters of Z85)");
}

void apply_curve(zmq::socket_t& s, const CurveOptions& c, bool server) {
  check_key("the public key", c.keys.public_key);
  check_key("the secret key", c.keys.secret_key);
  if (server) {
    if (c.zap == nullptr) throw std::invalid_argument("a CURVE router needs a ZAP handler: else every key gets in");
    s.set(zmq::sockopt::curve_server, true);
    s.set(zmq::sockopt::zap_domain, std::string(kZapDomain));
  } else {
    check_key("the server key", c.server_key);
    s.set(zmq::sockopt::curve_serverkey, c.server_key);
    s.set(zmq::sockopt::curve_publickey, c.keys.public_key);
  }
  s.set(zmq::sockopt::curve_secretkey, c.keys.secret_key);
}

template <typename Call>
auto again_on_signal(Call call) {
  for (;;) {
    try {
      return call();
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
}

}  // namespace

SocketOptions dealer_options(SocketOptions options, const std::optional<Credentials>& credentials,
                             const std::string& endpoint) {
  if (!credentials) return options;
  auto key = credentials->server_keys.find(endpoint);
  if (key == credentials->server_keys.end()) {
    throw std::invalid_argument("the credentials name no public key for " + endpoint);
  }
  options.curve = CurveOptions{.keys = {credentials->public_key, credentials->secret_key}, .server_key = key->second};
  return options;
}

zmq::socket_t make_router(zmq::context_t& ctx, const std::string& bind_endpoint, const SocketOptions& options) {
  zmq::socket_t s(ctx, zmq::socket_type::router);
  apply(s, options);
  if (options.curve) apply_curve(s, *options.curve, true);
  // Replies to a peer that vanished are dropped rather than blocking the loop.
  s.set(zmq::sockopt::router_mandatory, false);
  s.bind(bind_endpoint);
  return s;
}

zmq::socket_t make_dealer(zmq::context_t& ctx, const std::string& connect_endpoint, const SocketOptions& options) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  apply(s, options);
  if (options.curve) apply_curve(s, *options.curve, false);
  // A send to a daemon that is not connected fails at once instead of queueing:
  // a request must never reach a replica long after its caller gave up on it.
  s.set(zmq::sockopt::immediate, !options.queue_until_connected);
  s.connect(connect_endpoint);
  return s;
}

std::optional<Routed> try_recv_routed(zmq::socket_t& router, size_t max_frames) {
  Routed r;
  if (!router.recv(r.identity, zmq::recv_flags::dontwait)) return std::nullopt;
  r.frames.emplace_back();  // an empty message stays one empty frame: the decoder says so
  if (!router.get(zmq::sockopt::rcvmore)) return r;
  (void)router.recv(r.frames.back());
  if (r.frames.back().size() == 0 && router.get(zmq::sockopt::rcvmore)) {
    r.delimited = true;
    (void)router.recv(r.frames.back());
  }
  if (const char* user = zmq_msg_gets(r.frames.front().handle(), "User-Id")) r.user_id = user;
  while (router.get(zmq::sockopt::rcvmore)) {
    zmq::message_t frame;
    if (!router.recv(frame, zmq::recv_flags::dontwait)) break;
    if (r.frames.size() < max_frames) {
      r.frames.push_back(std::move(frame));
    } else {
      r.too_many_frames = true;
    }
  }
  return r;
}

bool recv(zmq::socket_t& socket, zmq::message_t& message, zmq::recv_flags flags) {
  return again_on_signal([&] { return socket.recv(message, flags).has_value(); });
}

bool send(zmq::socket_t& socket, zmq::const_buffer frame, zmq::send_flags flags) {
  return again_on_signal([&] { return socket.send(frame, flags).has_value(); });
}

int poll(std::span<zmq::pollitem_t> items, std::chrono::milliseconds timeout) {
  const int ready = zmq_poll(items.data(), static_cast<int>(items.size()), static_cast<long>(timeout.count()));
  if (ready >= 0) return ready;
  if (zmq_errno() != EINTR) throw zmq::error_t();
  for (zmq::pollitem_t& item : items) item.revents = 0;
  return 0;
}

bool send_routed(zmq::socket_t& router, Routed& to, std::span<const std::string_view> payloads) {
  try {
    if (!router.send(to.identity, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return false;
    if (to.delimited) router.send(zmq::message_t(), zmq::send_flags::sndmore);
    for (size_t i = 0; i < payloads.size(); ++i) {
      const auto more = i + 1 < payloads.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
      router.send(zmq::buffer(payloads[i].data(), payloads[i].size()), more);
    }
    return true;
  } catch (const zmq::error_t&) {
    return false;
  }
}

}  // namespace palisade::transport
