#include "replica/server.h"

#include <chrono>
#include <span>
#include <utility>

#include <spdlog/spdlog.h>

#include "base/quoted.h"
#include "base/stop_signals.h"
#include "transport/zap_handler.h"

namespace palisade::replica {

namespace {

ReplicaDriverOptions driver_options(const ServerOptions& o) {
  ReplicaDriverOptions d;
  d.cluster_id = o.cluster_id;
  d.limits = o.limits;
  d.max_batch = o.max_batch;
  d.max_batch_bytes = o.max_batch_bytes;
  d.permissions = o.permissions;
  d.broken_ack_writes_without_storing = o.broken_ack_writes_without_storing;
  return d;
}

// For the log limiters: a clock that does not go back.
uint64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ReplicaServer::ReplicaServer(zmq::context_t& ctx, ReplicaHandler& handler, HybridClock& clock, ServerOptions options)
    : options_(std::move(options)),
      handler_(handler),
      socket_(transport::make_router(ctx, options_.listen_endpoint, options_.socket)),
      driver_(handler, clock, *this, driver_options(options_)) {
  if (options_.socket.curve && options_.socket.curve->zap != nullptr) {
    metrics_.registry().counter_from("palisade_curve_handshakes_refused_total",
                                     "CurveZMQ handshakes refused: keys the cluster file does not list",
                                     [zap = options_.socket.curve->zap] { return zap->rejected(); });
  }
}

void ReplicaServer::run(int stop_fd, int reload_fd, const std::function<void()>& reload) {
  zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                             {nullptr, stop_fd, ZMQ_POLLIN, 0},
                             {nullptr, reload_fd, ZMQ_POLLIN, 0}};
  const int polled = reload_fd >= 0 ? 3 : 2;
  for (;;) {
    try {
      // A turn at least once a second, idle or not: /healthz sees the loop turn.
      zmq::poll(items, polled, std::chrono::milliseconds(1000));
      if (items[1].revents & ZMQ_POLLIN) return;
      if (polled == 3 && (items[2].revents & ZMQ_POLLIN)) {
        drain_signal_fd(reload_fd);
        reload();
      }
      if (items[0].revents & ZMQ_POLLIN) serve_batch();
      install_offered();
      metrics_.turned(handler_.writes_refused());
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      if (e.num() != EINTR) spdlog::error("transport error: {}", e.what());
    } catch (const std::exception& e) {
      spdlog::error("error while serving a batch: {}", e.what());
    }
  }
}

void ReplicaServer::offer_config(std::string certificate) {
  std::lock_guard lock(offered_mu_);
  offered_ = std::move(certificate);
}

void ReplicaServer::install_offered() {
  std::optional<std::string> text;
  {
    std::lock_guard lock(offered_mu_);
    text = std::exchange(offered_, std::nullopt);
  }
  if (!text) return;
  const wire::ReplicaRequest request{.id = 0, .body = wire::InstallConfigRequest{*text}};
  const uint64_t before = handler_.config_version();
  const wire::ReplicaReply reply = handler_.handle_batch(std::span<const wire::ReplicaRequest>(&request, 1)).at(0);
  if (!reply.status.is_ok()) {
    spdlog::warn("the lock group's replica set certificate was not kept: {}", reply.status.to_string());
  } else if (handler_.config_version() != before) {
    spdlog::info("took replica set version {} from the lock group", handler_.config_version());
  }
}

void ReplicaServer::serve_batch() {
  // Every request frame gets exactly one reply, in arrival order; the replies to
  // one message go back as one message (ReplicaDriver).
  turn_start_ = std::chrono::steady_clock::now();
  peers_.clear();
  driver_.drop();  // what a turn cut short by an exception left
  std::vector<std::string_view> frames;
  while (!driver_.full()) {
    auto routed = transport::try_recv_routed(socket_, wire::kMaxRequestsPerMessage);
    if (!routed) break;
    frames.clear();
    for (size_t i = 0; i < routed->frames.size(); ++i) frames.push_back(routed->frame(i));
    driver_.take(peers_.size(), frames, routed->too_many_frames, routed->user_id);
    peers_.push_back(std::move(*routed));
  }
  const bool full = driver_.full();  // flush() empties it
  const auto start = std::chrono::steady_clock::now();
  const size_t answered = driver_.flush();
  if (answered > 0) metrics_.batch(answered, std::chrono::steady_clock::now() - start, full);
}

void ReplicaServer::reply(uint64_t route, std::vector<std::string> replies) {
  std::vector<std::string_view> payloads(replies.begin(), replies.end());
  transport::send_routed(socket_, peers_[route], payloads);
}

void ReplicaServer::refused(uint64_t request_id, size_t bytes, const Status& why, std::string_view type) {
  metrics_.refused(type, why);
  if (!refused_log_.count(steady_ms())) return;
  spdlog::warn("refused request id {} ({} bytes): {}: {} requests refused so far", request_id, bytes, why.to_string(),
               refused_log_.total());
}

void ReplicaServer::failed(uint64_t request_id, const Status& why) {
  if (!failed_log_.count(steady_ms())) return;
  spdlog::error("request id {}: {}: {} requests failed so far", request_id, why.to_string(), failed_log_.total());
}

void ReplicaServer::fenced(const wire::WriteRequest& write, uint64_t floor) {
  if (!fenced_log_.count(steady_ms())) return;
  spdlog::warn("fenced: refused a write under lock {} with token {}, below the lock's fence floor {} (a superseded "
               "holder's write): {} writes fenced so far",
               quoted_bytes(write.lock), write.ts.token, floor, fenced_log_.total());
}

}  // namespace palisade::replica
