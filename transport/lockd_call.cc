#include "transport/lockd_call.h"

#include <atomic>
#include <stdexcept>

#include <zmq.hpp>

#include "transport/transport.h"

namespace palisade::transport {

std::optional<wire::LockReply> call_lockd_endpoint(zmq::context_t& ctx, const std::string& endpoint,
                                                   const wire::LockRequestBody& body, std::chrono::milliseconds timeout,
                                                   const std::string& cluster,
                                                   const std::optional<Credentials>& credentials) {
  return call_lockd_endpoints(ctx, {endpoint}, body, timeout, cluster, credentials).at(0);
}

std::vector<std::optional<wire::LockReply>> call_lockd_endpoints(
    zmq::context_t& ctx, const std::vector<std::string>& endpoints, const wire::LockRequestBody& body,
    std::chrono::milliseconds timeout, const std::string& cluster, const std::optional<Credentials>& credentials) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::optional<wire::LockReply>> replies(endpoints.size());
  std::vector<zmq::socket_t> sockets;
  std::vector<uint64_t> ids;
  std::vector<zmq::pollitem_t> items;
  std::vector<size_t> index;  // of the endpoint each socket asks
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const wire::LockRequest request{.id = next_lock_request_id(), .body = body, .cluster = cluster};
    try {
      zmq::socket_t s = transport::make_dealer(
          ctx, endpoints[i], transport::dealer_options({.queue_until_connected = true}, credentials, endpoints[i]));
      const std::string bytes = wire::encode_lock_request(request);
      if (!send(s, zmq::buffer(bytes))) continue;
      sockets.push_back(std::move(s));
      ids.push_back(request.id);
      index.push_back(i);
    } catch (const zmq::error_t&) {
    } catch (const std::invalid_argument&) {  // no key for the endpoint
    }
  }
  for (auto& s : sockets) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
  size_t waiting = sockets.size();
  const auto deadline = Clock::now() + timeout;
  try {
    while (waiting > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      poll(items, left);
      for (size_t k = 0; k < sockets.size(); ++k) {
        if (!(items[k].revents & ZMQ_POLLIN)) continue;
        zmq::message_t msg;
        while (recv(sockets[k], msg)) {
          auto reply = wire::decode_lock_reply({static_cast<const char*>(msg.data()), msg.size()}, kMaxLockReplyBytes);
          if (!reply.is_ok() || reply.value().id != ids[k] || replies[index[k]]) continue;
          replies[index[k]] = std::move(reply).value();
          --waiting;
        }
      }
    }
  } catch (const zmq::error_t&) {
  }
  return replies;
}

uint64_t next_lock_request_id() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

}  // namespace palisade::transport
