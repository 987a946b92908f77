#include "replica/server.h"

#include <spdlog/spdlog.h>

#include <vector>

namespace palisade::replica {

ReplicaServer::ReplicaServer(zmq::context_t& ctx, ReplicaHandler& handler, HybridClock& clock,
                             ServerOptions options)
    : handler_(handler),
      clock_(clock),
      options_(std::move(options)),
      socket_(transport::make_router(ctx, options_.listen_endpoint, options_.socket)) {}

void ReplicaServer::run(int stop_fd) {
  zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, stop_fd, ZMQ_POLLIN, 0}};
  for (;;) {
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(-1));
      if (items[1].revents & ZMQ_POLLIN) return;
      if (items[0].revents & ZMQ_POLLIN) serve_batch();
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      if (e.num() != EINTR) spdlog::error("transport error: {}", e.what());
    } catch (const std::exception& e) {
      spdlog::error("error while serving a batch: {}", e.what());
    }
  }
}

void ReplicaServer::serve_batch() {
  // Every received message gets exactly one reply, in arrival order.
  std::vector<transport::Routed> peers;
  std::vector<wire::ReplicaRequest> requests;
  std::vector<std::optional<wire::ReplicaReply>> refusals;
  size_t batch_bytes = 0;
  while (peers.size() < options_.max_batch && batch_bytes < options_.max_batch_bytes) {
    auto routed = transport::try_recv_routed(socket_);
    if (!routed) break;
    std::string_view bytes(static_cast<const char*>(routed->payload.data()), routed->payload.size());
    uint64_t id = 0;
    auto decoded = routed->extra_frames
                       ? Result<wire::ReplicaRequest>(Status(Code::kMalformed, "a request is one ZeroMQ frame"))
                       : wire::decode_request(bytes, options_.limits, &id);
    if (decoded.is_ok()) {
      requests.push_back(std::move(decoded).value());
      refusals.emplace_back();
    } else {
      spdlog::warn("refused request id {} ({} bytes): {}", id, bytes.size(), decoded.status().to_string());
      auto reply = wire::error_reply(id, decoded.status());
      reply.clock = clock_.now();
      refusals.emplace_back(std::move(reply));
    }
    batch_bytes += routed->payload.size();
    peers.push_back(std::move(*routed));
  }
  std::vector<wire::ReplicaReply> replies = handler_.handle_batch(requests);
  size_t next = 0;
  for (size_t i = 0; i < peers.size(); ++i) {
    const wire::ReplicaReply& reply = refusals[i] ? *refusals[i] : replies[next++];
    Code code = reply.status.code();
    if (code == Code::kCorrupt || code == Code::kStorageError || code == Code::kInternal) {
      spdlog::error("request id {}: {}", reply.id, reply.status.to_string());
    }
    transport::send_routed(socket_, peers[i], wire::encode_reply(reply));
  }
  served_ += peers.size();
}

}  // namespace palisade::replica
