#include "tests/support/replica_connection.h"

#include "common/physical_clock.h"
#include "common/transport.h"

namespace palisade::test {

ReplicaConnection::ReplicaConnection(const std::string& endpoint)
    : ctx_(1), socket_(transport::make_dealer(ctx_, endpoint, transport::SocketOptions{})) {
  // Tests send oversize and garbage messages on purpose: queue them even before
  // the connection is up.
  socket_.set(zmq::sockopt::immediate, false);
}

Result<wire::ReplicaReply> ReplicaConnection::call(wire::ReplicaRequest request, int timeout_ms) {
  request.id = next_id_++;
  socket_.send(zmq::buffer(wire::encode_request(request)), zmq::send_flags::none);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {  // replies to earlier, timed-out calls are skipped
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto reply = receive(std::max<int>(0, static_cast<int>(left.count())));
    if (!reply.is_ok() || reply.value().id == request.id) return reply;
  }
}

Result<wire::ReplicaReply> ReplicaConnection::receive(int timeout_ms) {
  zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms));
  if (!(item.revents & ZMQ_POLLIN)) return Status(Code::kTimeout, "no reply within " + std::to_string(timeout_ms) + " ms");
  zmq::message_t msg;
  (void)socket_.recv(msg);
  return wire::decode_reply(std::string_view(static_cast<const char*>(msg.data()), msg.size()), limits_);
}

Result<wire::ReplicaReply> ReplicaConnection::call_raw(const std::vector<std::string>& frames, int timeout_ms) {
  for (size_t i = 0; i < frames.size(); ++i) {
    auto flags = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    socket_.send(zmq::buffer(frames[i]), flags);
  }
  return receive(timeout_ms);
}

wire::ReplicaRequest write_req(std::string key, std::string value, FencedTimestamp ts, std::string lock) {
  return {0, wire::WriteRequest{std::move(key), std::move(value), false, ts, std::move(lock)}};
}
wire::ReplicaRequest delete_req(std::string key, FencedTimestamp ts, std::string lock) {
  return {0, wire::WriteRequest{std::move(key), "", true, ts, std::move(lock)}};
}
wire::ReplicaRequest fence_req(std::string lock, uint64_t token) { return {0, wire::FenceRequest{std::move(lock), token}}; }
wire::ReplicaRequest commit_req(std::string key, FencedTimestamp ts) { return {0, wire::CommitRequest{std::move(key), ts}}; }
wire::ReplicaRequest purge_req(std::string key, FencedTimestamp ts) { return {0, wire::PurgeRequest{std::move(key), ts}}; }
wire::ReplicaRequest read_req(std::string key) { return {0, wire::ReadRequest{std::move(key)}}; }
wire::ReplicaRequest ping_req() { return {0, wire::PingRequest{}}; }

FencedTimestamp ts_now(uint64_t token, uint64_t logical) {
  SystemClock clock;
  return {token, hlc::make(clock.now_ms(), logical)};
}

}  // namespace palisade::test
