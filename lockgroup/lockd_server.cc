#include "lockgroup/lockd_server.h"

#include "base/stop_signals.h"
#include "transport/zap_handler.h"

#include <time.h>

#include <algorithm>

#include <spdlog/spdlog.h>

namespace palisade::lockgroup {

uint64_t boottime_ms() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

LockdServer::LockdServer(zmq::context_t& ctx, const LockdServerOptions& options)
    : ctx_(ctx), options_(options), router_(transport::make_router(ctx, options_.listen_endpoint, options_.socket)) {
  if (options_.socket.curve && options_.socket.curve->zap != nullptr) {
    metrics_.registry().counter_from("palisade_curve_handshakes_refused_total",
                                     "CurveZMQ handshakes refused: keys the cluster file does not list",
                                     [zap = options_.socket.curve->zap] { return zap->rejected(); });
  }
}

Result<std::unique_ptr<LockdServer>> LockdServer::create(zmq::context_t& ctx, PaxosStorage& storage,
                                                         LockdServerOptions options) {
  std::unique_ptr<LockdServer> server(new LockdServer(ctx, options));
  auto driver = LockdDriver::start(std::move(options.driver), storage, *server, boottime_ms());
  if (!driver.is_ok()) return driver.status();
  server->driver_ = std::move(driver).value();
  server->connect_peers();
  return server;
}

Status LockdServer::run(int stop_fd, int reload_fd, const std::function<void()>& reload) {
  zmq::pollitem_t items[] = {{router_.handle(), 0, ZMQ_POLLIN, 0},
                             {nullptr, stop_fd, ZMQ_POLLIN, 0},
                             {nullptr, reload_fd, ZMQ_POLLIN, 0}};
  const int polled = reload_fd >= 0 ? 3 : 2;
  for (;;) {
    try {
      uint64_t now = boottime_ms();
      uint64_t next = driver_->service().next_timer_ms();
      auto wait = std::chrono::milliseconds(next > now ? std::min<uint64_t>(next - now, 1000) : 0);
      zmq::poll(items, polled, wait);
      if (items[1].revents & ZMQ_POLLIN) return stop(boottime_ms());
      if (polled == 3 && (items[2].revents & ZMQ_POLLIN)) {
        drain_signal_fd(reload_fd);
        reload();
      }
      now = boottime_ms();
      const size_t frames = (items[0].revents & ZMQ_POLLIN) ? receive(now) : 0;
      driver_->tick(now);
      const auto sync_start = std::chrono::steady_clock::now();
      Status turn = sync(now);
      if (!turn.is_ok()) return turn;
      metrics_.turn(frames, std::chrono::steady_clock::now() - sync_start);
      // Taken every turn; formatted only when info is logged (benchmarks run at warn).
      const std::vector<LockEvent> events = driver_->service().take_events();
      log_changes(now, events);
      metrics_.observe(*driver_, events, now);
      if (driver_->service().table().members_version() != connected_members_version_) connect_peers();
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return Status::ok();
      if (e.num() != EINTR) spdlog::error("transport error: {}", e.what());
    }
    // Anything else is a bug in the protocol core and ends the process: a
    // command half applied must not go on, and a restart reloads what was synced.
  }
}

size_t LockdServer::receive(uint64_t now) {
  const auto arrived = std::chrono::steady_clock::now();
  size_t n = 0;
  for (; n < options_.max_batch; ++n) {
    auto routed = transport::try_recv_routed(router_);
    if (!routed) break;
    FrameResult r = driver_->on_frame(routed->frame(), now, routed->too_many_frames, routed->user_id);
    if (r.outcome == FrameOutcome::kRequestRefused) {
      metrics_.refused(r.type, r.refused_with);
      transport::send_routed(router_, *routed, r.refusal);
    }
    if (r.outcome != FrameOutcome::kRequest) continue;
    routed->frames.clear();
    routes_.emplace(r.route, Waiting{.routed = std::move(*routed), .type = r.type, .arrived = arrived});
  }
  return n;
}

void LockdServer::answered(uint64_t route, const wire::LockReply& reply) {
  auto waiting = routes_.find(route);
  if (waiting != routes_.end()) {
    metrics_.answered(waiting->second.type, reply, std::chrono::steady_clock::now() - waiting->second.arrived);
  }
}

uint64_t LockdServer::next_incarnation() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t us = static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
  last_incarnation_ = std::max(us, last_incarnation_ + 1);
  return last_incarnation_;
}

void LockdServer::set_lock_nodes(LockNodes nodes) {
  options_.driver.service.endpoints = nodes.endpoints;
  driver_->service().set_endpoints(std::move(nodes.endpoints));
  driver_->set_peer_identities(std::move(nodes.identities));
  options_.peer_keys = std::move(nodes.keys);
  // Made again, with the addresses and keys listed now.
  peers_.clear();
  unreachable_logged_.clear();
  connect_peers();
}

void LockdServer::connect_peers() {
  const LockService& service = driver_->service();
  connected_members_version_ = service.table().members_version();
  std::set<NodeId> nodes;
  for (const auto& [id, endpoint] : options_.driver.service.endpoints) nodes.insert(id);
  for (const LockNode& member : service.table().members()) nodes.insert(member.id);
  nodes.erase(options_.driver.service.paxos.self);
  for (NodeId id : nodes) (void)peer_socket(id);
}

zmq::socket_t* LockdServer::peer_socket(NodeId peer) {
  const std::string endpoint = driver_->service().address_of(peer);
  auto it = peers_.find(peer);
  if (it != peers_.end() && it->second.endpoint == endpoint) return &it->second.socket;
  if (it != peers_.end()) peers_.erase(it);  // the membership moved it
  auto unreachable = [&](const std::string& why) -> zmq::socket_t* {
    if (unreachable_logged_.insert(std::to_string(peer) + " " + endpoint).second) {
      spdlog::warn("cannot reach node {}{}: {}", peer, endpoint.empty() ? "" : " at " + endpoint, why);
    }
    return nullptr;
  };
  if (endpoint.empty()) {
    return unreachable("neither the membership nor the cluster file gives its address; add its [[lockd]] entry "
                       "to the cluster file and send this node SIGHUP");
  }
  transport::SocketOptions options = options_.socket;
  if (options.curve) {
    options.curve->zap = nullptr;
    auto key = options_.peer_keys.find(endpoint);
    if (key == options_.peer_keys.end()) {
      return unreachable("the cluster file names no identity serving at that endpoint, so its key is unknown; add "
                         "it and send this node SIGHUP");
    }
    options.curve->server_key = key->second;
  }
  try {
    auto [made, fresh] = peers_.emplace(peer, Peer{endpoint, transport::make_dealer(ctx_, endpoint, options)});
    return &made->second.socket;
  } catch (const std::exception& e) {
    return unreachable(e.what());  // an address ZeroMQ cannot connect to, a malformed key
  }
}

void LockdServer::send_peer(NodeId to, std::string bytes) {
  zmq::socket_t* peer = peer_socket(to);
  if (peer == nullptr) return;
  // Dropped when the peer is down or slow: Paxos resends what matters.
  (void)peer->send(zmq::buffer(bytes), zmq::send_flags::dontwait);
}

void LockdServer::reply(uint64_t route, std::string bytes) {
  auto waiting = routes_.find(route);
  if (waiting == routes_.end()) return;
  transport::send_routed(router_, waiting->second.routed, bytes);
  routes_.erase(waiting);
}

Status LockdServer::sync(uint64_t now) {
  driver_->begin_sync(now);
  return driver_->finish_sync(now);
}

Status LockdServer::stop(uint64_t now) {
  if (!driver_->stop(now)) return Status::ok();  // a follower just goes
  Status turn = driver_->finish_sync(now);
  // Closing a socket drops what it has not sent: give the step-down (and the
  // not_master answers) a moment to leave.
  for (auto& [id, peer] : peers_) peer.socket.set(zmq::sockopt::linger, options_.stop_linger_ms);
  router_.set(zmq::sockopt::linger, options_.stop_linger_ms);
  return turn;
}

void LockdServer::log_membership() {
  const LockService& service = driver_->service();
  const bool member = service.node().is_member();
  if (was_member_ == member) return;
  std::string members;
  for (NodeId id : service.node().members()) members += (members.empty() ? "" : ",") + std::to_string(id);
  if (members.empty()) members = "none known yet";
  const uint64_t version = service.table().members_version();
  if (member && was_member_.has_value()) {
    spdlog::info("a member of the lock group now: members {} (version {})", members, version);
  } else if (!member && was_member_.value_or(false)) {
    spdlog::warn("removed from the lock group: the members are now {} (version {}). This node takes no part any "
                 "more: stop it, and remove its [[lockd]] entry from the cluster file (docs/operations.md)",
                 members, version);
  } else if (!member) {
    spdlog::info("not a member of the lock group (members {}): it takes part once `palisade member add` or "
                 "`replace` makes it one",
                 members);
  }
  was_member_ = member;
}

void LockdServer::log_changes(uint64_t now, const std::vector<LockEvent>& events) {
  LockService& service = driver_->service();
  if (service.node().stuck_at_top_round() && now >= next_stuck_log_ms_) {
    next_stuck_log_ms_ = now + 60'000;  // once a minute: loud, not a flood
    spdlog::error(
        "the promise on disk (epoch {}) is at the highest round a peer accepts: this node can neither lead nor "
        "follow. Stop it and leave it stopped: the group runs on while a majority of nodes does. Do not empty its "
        "data directory or restore an older copy of it: an acceptor that forgets what it accepted can let the group "
        "choose two values for one slot (docs/operations.md, \"A lock group node\")",
        service.node().epoch());
  }
  if (spdlog::should_log(spdlog::level::info)) {
    for (const LockEvent& e : events) spdlog::info("{}", describe(e));
  }
  log_membership();
  const PaxosNode& node = service.node();
  if (node.role() == PaxosNode::Role::kCandidate && node.epoch() != last_campaign_) {
    last_campaign_ = node.epoch();
    spdlog::info("campaigning for master, epoch {}", last_campaign_);
  }
  bool master = service.is_master(now);
  NodeId hint = service.node().master_hint();
  if (master == was_master_ && hint == last_hint_) return;
  if (master) {
    spdlog::info("master now, epoch {}, {} sessions, applied through slot {}", service.node().epoch(),
                 service.table().sessions().size(), service.node().applied_through());
  } else if (was_master_) {
    spdlog::warn("no longer master (epoch {}): the lease ran out or a higher ballot won", service.node().epoch());
  } else if (hint != 0) {
    spdlog::info("following master {} (epoch {})", hint, service.node().epoch());
  }
  was_master_ = master;
  last_hint_ = hint;
}

}  // namespace palisade::lockgroup
