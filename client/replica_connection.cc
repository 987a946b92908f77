#include "client/replica_connection.h"

#include "transport/transport.h"

namespace palisade::client {

namespace {

zmq::socket_t connect_dealer(zmq::context_t& ctx, const std::string& endpoint,
                             const std::optional<Credentials>& credentials) {
  zmq::socket_t socket = transport::make_dealer(ctx, endpoint, transport::dealer_options({}, credentials, endpoint));
  // Queue requests until the connection is up: callers wait with a timeout.
  socket.set(zmq::sockopt::immediate, false);
  return socket;
}

}  // namespace

ReplicaConnection::ReplicaConnection(const std::string& endpoint, const std::optional<Credentials>& credentials)
    : own_ctx_(std::make_unique<zmq::context_t>(1)), socket_(connect_dealer(*own_ctx_, endpoint, credentials)) {}

ReplicaConnection::ReplicaConnection(zmq::context_t& ctx, const std::string& endpoint,
                                     const std::optional<Credentials>& credentials)
    : socket_(connect_dealer(ctx, endpoint, credentials)) {}

Result<wire::ReplicaReply> ReplicaConnection::call(wire::ReplicaRequest request, int timeout_ms) {
  request.id = next_id_++;
  // The queue attaches to the connection a moment after connect: wait for it,
  // within the timeout, rather than fail.
  socket_.set(zmq::sockopt::sndtimeo, timeout_ms);
  if (!transport::send(socket_, zmq::buffer(wire::encode_request(request)), zmq::send_flags::none)) {
    return Status(Code::kUnavailable, "could not queue the request within " + std::to_string(timeout_ms) + " ms");
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {  // replies to earlier, timed-out calls are skipped
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto reply = receive(std::max<int>(0, static_cast<int>(left.count())));
    if (!reply.is_ok() || reply.value().id == request.id) return reply;
  }
}

Result<wire::ReplicaReply> ReplicaConnection::receive(int timeout_ms) {
  zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
  transport::poll({&item, 1}, std::chrono::milliseconds(timeout_ms));
  if (!(item.revents & ZMQ_POLLIN)) return Status(Code::kTimeout, "no reply within " + std::to_string(timeout_ms) + " ms");
  zmq::message_t msg;
  (void)transport::recv(socket_, msg);
  return wire::decode_reply(std::string_view(static_cast<const char*>(msg.data()), msg.size()), limits_);
}

Result<wire::ReplicaReply> ReplicaConnection::call_raw(const std::vector<std::string>& frames, int timeout_ms) {
  for (size_t i = 0; i < frames.size(); ++i) {
    socket_.set(zmq::sockopt::sndtimeo, timeout_ms);
    auto flags = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    if (!transport::send(socket_, zmq::buffer(frames[i]), flags)) {
      return Status(Code::kUnavailable, "could not queue the request");
    }
  }
  return receive(timeout_ms);
}

}  // namespace palisade::client
