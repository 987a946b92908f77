#include "lockgroup/lockd_server.h"

#include <time.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "lockgroup/paxos_messages.h"

namespace palisade::lockgroup {

uint64_t boottime_ms() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

LockdServer::LockdServer(zmq::context_t& ctx, PaxosStorage& storage, LockdServerOptions options)
    : storage_(storage),
      options_(std::move(options)),
      auth_(options_.service.key, options_.service.group),
      router_(transport::make_router(ctx, options_.listen_endpoint, options_.socket)) {
  for (const auto& [id, endpoint] : options_.service.endpoints) {
    if (id != options_.service.paxos.self) peers_.emplace(id, transport::make_dealer(ctx, endpoint, options_.socket));
  }
}

Result<std::unique_ptr<LockdServer>> LockdServer::create(zmq::context_t& ctx, PaxosStorage& storage,
                                                         LockdServerOptions options) {
  std::unique_ptr<LockdServer> server(new LockdServer(ctx, storage, std::move(options)));
  server->options_.service.paxos.incarnation = server->next_incarnation();
  auto service = LockService::start(server->options_.service, storage, boottime_ms());
  if (!service.is_ok()) return service.status();
  server->service_ = std::move(service).value();
  return server;
}

Status LockdServer::run(int stop_fd) {
  zmq::pollitem_t items[] = {{router_.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, stop_fd, ZMQ_POLLIN, 0}};
  for (;;) {
    try {
      uint64_t now = boottime_ms();
      uint64_t next = service_->next_timer_ms();
      auto wait = std::chrono::milliseconds(next > now ? std::min<uint64_t>(next - now, 1000) : 0);
      zmq::poll(items, 2, wait);
      if (items[1].revents & ZMQ_POLLIN) return stop(boottime_ms());
      now = boottime_ms();
      if (items[0].revents & ZMQ_POLLIN) receive(now);
      if (service_->next_timer_ms() <= now) service_->tick(now);
      service_->flush(now);
      Status turn = finish_turn(now);
      if (!turn.is_ok()) return turn;
      log_changes(now);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return Status::ok();
      if (e.num() != EINTR) spdlog::error("transport error: {}", e.what());
    }
    // Anything else is a bug in the protocol core and ends the process: a
    // command half applied must not go on, and a restart reloads what was synced.
  }
}

void LockdServer::receive(uint64_t now) {
  for (size_t n = 0; n < options_.max_batch; ++n) {
    auto routed = transport::try_recv_routed(router_);
    if (!routed) return;
    handle(std::move(*routed), now);
  }
}

void LockdServer::handle(transport::Routed routed, uint64_t now) {
  const std::string_view bytes = routed.frame();
  if (!routed.too_many_frames) {
    if (auto body = auth_.verified_body(bytes)) return handle_peer(*body, now);
  }
  uint64_t id = 0;
  auto request = routed.too_many_frames
                     ? Result<wire::LockRequest>(Status(Code::kMalformed, "a request is one ZeroMQ frame"))
                     : wire::decode_lock_request(bytes, options_.limits, &id);
  if (!request.is_ok() && !routed.too_many_frames) {
    // A peer's message without a MAC, or with a wrong one: nobody to answer.
    if (names_peer_type(bytes, options_.max_peer_message_bytes)) return count_forged(bytes.size(), "no MAC");
    if (bytes.size() > PeerAuth::kMacBytes &&
        names_peer_type(bytes.substr(0, bytes.size() - PeerAuth::kMacBytes), options_.max_peer_message_bytes)) {
      return count_forged(bytes.size(), "a MAC that does not verify");
    }
  }
  Status refusal = request.status();
  if (refusal.is_ok()) refusal = check_cluster_id(options_.cluster_id, request.value().cluster);
  if (!refusal.is_ok()) {
    spdlog::warn("refused request id {} ({} bytes): {}", id, bytes.size(), refusal.to_string());
    wire::LockReply reply;
    reply.id = id;
    // A client of another cluster learns nothing of this group's state.
    const bool foreign = refusal.code() == Code::kWrongCluster;
    reply.status = std::move(refusal);
    reply.epoch = foreign ? 0 : service_->node().epoch();
    reply.master = foreign ? 0 : service_->node().master_hint();
    transport::send_routed(router_, routed, wire::encode_lock_reply(reply));
    return;
  }
  uint64_t route = next_route_++;
  routed.frames.clear();
  routes_.emplace(route, std::move(routed));
  service_->on_request({route, std::move(request).value()}, now);
}

void LockdServer::handle_peer(std::string_view body, uint64_t now) {
  auto peer = decode_peer(body, options_.max_peer_message_bytes);
  Status s = peer.status();
  if (peer.is_ok() && peer.value().to != options_.service.paxos.self) {
    s = Status(Code::kBadRequest, "it is addressed to node " + std::to_string(peer.value().to));
  }
  if (s.is_ok()) s = service_->on_peer(peer.value(), now);
  if (s.is_ok()) return;
  ++refused_peer_messages_;
  // Logged at 1, 2, 4, 8, ... as forgeries are: a peer (or anyone replaying
  // one) that sends refused messages without end cannot flood the log.
  if ((refused_peer_messages_ & (refused_peer_messages_ - 1)) == 0) {
    spdlog::warn("refused a peer message ({} bytes{}): {}: {} peer messages refused so far", body.size(),
                 peer.is_ok() ? fmt::format(", {} from node {}", peer_type_name(peer.value().body), peer.value().from)
                              : std::string(),
                 s.to_string(), refused_peer_messages_);
  }
}

uint64_t LockdServer::next_incarnation() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t us = static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
  last_incarnation_ = std::max(us, last_incarnation_ + 1);
  return last_incarnation_;
}

void LockdServer::count_forged(size_t bytes, std::string_view why) {
  ++forged_peer_messages_;
  // Logged at 1, 2, 4, 8, ...: a flood of forgeries cannot flood the log.
  if ((forged_peer_messages_ & (forged_peer_messages_ - 1)) == 0) {
    spdlog::warn("dropped a message that claims to be a peer's ({} bytes, {}): {} forged peer messages so far",
                 bytes, why, forged_peer_messages_);
  }
}

void LockdServer::send_peer(const PeerMessage& m) {
  auto peer = peers_.find(m.to);
  if (peer == peers_.end()) return;
  std::string bytes = auth_.seal(m);
  // Dropped when the peer is down or slow: Paxos resends what matters.
  (void)peer->second.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
}

Status LockdServer::stop(uint64_t now) {
  const Ballot epoch = service_->node().epoch();
  if (!service_->hand_over(now)) return Status::ok();  // a follower just goes
  spdlog::info("stepping down for a planned stop (epoch {}): the peers release the master lease", epoch);
  Status turn = finish_turn(now);
  // Closing a socket drops what it has not sent: give the step-down (and the
  // not_master answers) a moment to leave.
  for (auto& [id, peer] : peers_) peer.set(zmq::sockopt::linger, options_.stop_linger_ms);
  router_.set(zmq::sockopt::linger, options_.stop_linger_ms);
  return turn;
}

void LockdServer::log_changes(uint64_t now) {
  if (service_->node().stuck_at_top_round() && now >= next_stuck_log_ms_) {
    next_stuck_log_ms_ = now + 60'000;  // once a minute: loud, not a flood
    spdlog::error(
        "the promise on disk (epoch {}) is at the highest round a peer accepts: this node can neither lead nor "
        "follow. Stop it, then empty its data directory (it catches up from its peers) or restore it from a backup",
        service_->node().epoch());
  }
  // Taken every turn; formatted only when info is logged (benchmarks run at warn).
  const std::vector<LockEvent> events = service_->take_events();
  if (spdlog::should_log(spdlog::level::info)) {
    for (const LockEvent& e : events) spdlog::info("{}", describe(e));
  }
  const PaxosNode& node = service_->node();
  if (node.role() == PaxosNode::Role::kCandidate && node.epoch() != last_campaign_) {
    last_campaign_ = node.epoch();
    spdlog::info("campaigning for master, epoch {}", last_campaign_);
  }
  bool master = service_->is_master(now);
  NodeId hint = service_->node().master_hint();
  if (master == was_master_ && hint == last_hint_) return;
  if (master) {
    spdlog::info("master now, epoch {}, {} sessions, applied through slot {}", service_->node().epoch(),
                 service_->table().sessions().size(), service_->node().applied_through());
  } else if (was_master_) {
    spdlog::warn("no longer master (epoch {}): the lease ran out or a higher ballot won", service_->node().epoch());
  } else if (hint != 0) {
    spdlog::info("following master {} (epoch {})", hint, service_->node().epoch());
  }
  was_master_ = master;
  last_hint_ = hint;
}

Status LockdServer::finish_turn(uint64_t now) {
  // The master's accepts go out before its own sync, so that both overlap.
  for (PeerMessage& m : service_->take_early_peer_messages()) send_peer(m);
  if (storage_.dirty()) {
    Status committed = storage_.commit();
    if (!committed.is_ok()) {
      // What this turn decided is not durable: say nothing of it, and start
      // again from what is, like a node that crashed and came back.
      spdlog::error("acceptor state not saved, restarting from disk: {}", committed.to_string());
      service_->take_early_peer_messages();
      service_->take_peer_messages();
      service_->take_replies();
      routes_.clear();
      options_.service.paxos.incarnation = next_incarnation();
      auto restarted = LockService::start(options_.service, storage_, now);
      if (!restarted.is_ok()) return restarted.status();
      service_ = std::move(restarted).value();
      return Status::ok();
    }
  }
  service_->synced(now);
  for (PeerMessage& m : service_->take_early_peer_messages()) send_peer(m);
  for (PeerMessage& m : service_->take_peer_messages()) send_peer(m);
  for (ClientReply& r : service_->take_replies()) {
    auto route = routes_.find(r.route);
    if (route == routes_.end()) continue;
    transport::send_routed(router_, route->second, wire::encode_lock_reply(r.reply));
    routes_.erase(route);
  }
  return Status::ok();
}

}  // namespace palisade::lockgroup
