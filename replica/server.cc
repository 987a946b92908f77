#include "replica/server.h"

#include <spdlog/spdlog.h>

#include <vector>

#include "base/cluster_id.h"

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
  // Every request frame gets exactly one reply, in arrival order; the replies to
  // one message go back as one message.
  std::vector<transport::Routed> peers;
  std::vector<wire::ReplicaRequest> requests;
  std::vector<std::optional<wire::ReplicaReply>> refusals;  // per request frame: its refusal, if refused
  size_t batch_bytes = 0;
  auto refuse = [&](uint64_t id, size_t bytes, Status status) {
    spdlog::warn("refused request id {} ({} bytes): {}", id, bytes, status.to_string());
    auto reply = wire::error_reply(id, std::move(status));
    reply.clock = clock_.now();
    refusals.emplace_back(std::move(reply));
  };
  while (refusals.size() < options_.max_batch && batch_bytes < options_.max_batch_bytes) {
    auto routed = transport::try_recv_routed(socket_, wire::kMaxRequestsPerMessage);
    if (!routed) break;
    if (routed->too_many_frames) {
      refuse(0, 0, Status(Code::kMalformed, "a message holds at most " + std::to_string(wire::kMaxRequestsPerMessage) +
                                             " requests, one per ZeroMQ frame"));
      routed->frames.resize(1);  // one reply for the whole message
    } else {
      for (size_t i = 0; i < routed->frames.size(); ++i) {
        const std::string_view bytes = routed->frame(i);
        uint64_t id = 0;
        auto decoded = handler_.decode(bytes, options_.limits, &id);
        if (decoded.is_ok()) {
          if (Status s = check_cluster_id(options_.cluster_id, decoded.value().cluster); !s.is_ok()) {
            decoded = s;
          }
        }
        if (decoded.is_ok()) {
          requests.push_back(std::move(decoded).value());
          refusals.emplace_back();
        } else {
          refuse(id, bytes.size(), decoded.status());
        }
        batch_bytes += bytes.size();
      }
    }
    peers.push_back(std::move(*routed));
  }
  std::vector<wire::ReplicaReply> replies = handler_.handle_batch(requests);
  size_t next = 0, answered = 0;
  std::vector<std::string> encoded;
  std::vector<std::string_view> payloads;
  for (transport::Routed& peer : peers) {
    encoded.clear();
    for (size_t i = 0; i < peer.frames.size(); ++i, ++answered) {
      const wire::ReplicaReply& reply = refusals[answered] ? *refusals[answered] : replies[next++];
      Code code = reply.status.code();
      if (code == Code::kCorrupt || code == Code::kStorageError || code == Code::kInternal) {
        spdlog::error("request id {}: {}", reply.id, reply.status.to_string());
      }
      encoded.push_back(wire::encode_reply(reply));
    }
    payloads.assign(encoded.begin(), encoded.end());
    transport::send_routed(socket_, peer, payloads);
  }
  served_ += answered;
}

}  // namespace palisade::replica
