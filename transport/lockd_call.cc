#include "transport/lockd_call.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include <zmq.hpp>

#include "transport/transport.h"

namespace palisade::transport {

std::optional<wire::LockReply> call_lockd_endpoint(zmq::context_t& ctx, const std::string& endpoint,
                                                   const wire::LockRequestBody& body, std::chrono::milliseconds timeout,
                                                   const std::string& cluster,
                                                   const std::optional<Credentials>& credentials) {
  using Clock = std::chrono::steady_clock;
  const wire::LockRequest request{.id = next_lock_request_id(), .body = body, .cluster = cluster};
  try {
    zmq::socket_t s = transport::make_dealer(
        ctx, endpoint, transport::dealer_options({.queue_until_connected = true}, credentials, endpoint));
    const std::string bytes = wire::encode_lock_request(request);
    if (!s.send(zmq::buffer(bytes), zmq::send_flags::dontwait)) return std::nullopt;
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::max(left, std::chrono::milliseconds(0)));
      if (!(item.revents & ZMQ_POLLIN)) return std::nullopt;
      zmq::message_t msg;
      if (!s.recv(msg)) return std::nullopt;
      auto reply = wire::decode_lock_reply({static_cast<const char*>(msg.data()), msg.size()}, kMaxLockReplyBytes);
      if (reply.is_ok() && reply.value().id == request.id) return std::move(reply).value();
    }
  } catch (const zmq::error_t&) {
    return std::nullopt;
  } catch (const std::invalid_argument&) {  // no key for the endpoint
    return std::nullopt;
  }
}

uint64_t next_lock_request_id() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

}  // namespace palisade::transport
