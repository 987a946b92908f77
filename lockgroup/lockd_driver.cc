#include "lockgroup/lockd_driver.h"

#include <spdlog/spdlog.h>

#include "base/cluster_id.h"
#include "lockgroup/paxos_messages.h"

namespace palisade::lockgroup {

LockdDriver::LockdDriver(LockdDriverOptions options, PaxosStorage& storage, LockdHost& host)
    : options_(std::move(options)),
      storage_(storage),
      host_(host),
      auth_(options_.service.key, options_.service.group) {}

Result<std::unique_ptr<LockdDriver>> LockdDriver::start(LockdDriverOptions options, PaxosStorage& storage,
                                                        LockdHost& host, uint64_t now) {
  std::unique_ptr<LockdDriver> driver(new LockdDriver(std::move(options), storage, host));
  driver->options_.service.paxos.incarnation = host.next_incarnation();
  auto service = LockService::start(driver->options_.service, storage, now);
  if (!service.is_ok()) return service.status();
  driver->service_ = std::move(service).value();
  return driver;
}

FrameResult LockdDriver::on_frame(std::string_view bytes, uint64_t now, bool extra_frames, std::string_view sender) {
  if (!extra_frames) {
    if (auto body = auth_.verified_body(bytes)) return on_peer(*body, now, sender);
  }
  return on_request(bytes, now, extra_frames, sender);
}

FrameResult LockdDriver::on_peer(std::string_view body, uint64_t now, std::string_view sender) {
  auto peer = decode_peer(body, options_.max_peer_message_bytes);
  if (!peer.is_ok()) {
    count_refused(body, peer, peer.status(), now);
    return {.outcome = FrameOutcome::kPeerMalformed};
  }
  // The cluster key's MAC says a holder of the key made it; the handshake says
  // who sent it. A client host that read the key cannot speak for a node.
  if (!options_.peer_identities.empty()) {
    auto node = options_.peer_identities.find(peer.value().from);
    if (node == options_.peer_identities.end() || node->second != sender) {
      count_refused(body, peer,
                    Status(Code::kBadRequest, "it was sent by identity '" + std::string(sender) + "', not by node " +
                                                  std::to_string(peer.value().from) + "'s"),
                    now);
      return {.outcome = FrameOutcome::kPeerImpostor};
    }
  }
  if (peer.value().to != options_.service.paxos.self) {
    count_refused(body, peer, Status(Code::kBadRequest, "it is addressed to node " + std::to_string(peer.value().to)),
                  now);
    return {.outcome = FrameOutcome::kPeerMisaddressed};
  }
  const uint64_t stale = service_->node().stale_messages();
  Status s = service_->on_peer(peer.value(), now);
  if (!s.is_ok()) {
    count_refused(body, peer, s, now);
    return {.outcome = FrameOutcome::kPeerRefused};
  }
  peer_bytes_taken_ += body.size();
  return {.outcome = service_->node().stale_messages() != stale ? FrameOutcome::kPeerStale : FrameOutcome::kPeerTaken};
}

Status LockdDriver::check_permission(const wire::LockRequest& request, std::string_view sender) const {
  const bool members = std::holds_alternative<wire::SetMembersRequest>(request.body);
  if ((members || std::holds_alternative<wire::SetReplicasRequest>(request.body)) && options_.permissions &&
      !options_.permissions->is_admin(sender)) {
    return Status(Code::kPermissionDenied, "identity '" + std::string(sender) + "' may not change " +
                                               (members ? "the lock group's members" : "the replica set") +
                                               ": admin only");
  }
  // Who holds a lock is for those who may take it (in either mode) or inspect the group.
  const auto* grant = std::get_if<wire::CurrentGrantRequest>(&request.body);
  if (grant != nullptr && options_.permissions && !options_.permissions->may_inspect(sender) &&
      !options_.permissions->may_acquire(sender, grant->lock, LockMode::kShared)) {
    return Status(Code::kPermissionDenied,
                  "identity '" + std::string(sender) + "' may not ask who holds lock '" + grant->lock + "'");
  }
  const auto* acquire = std::get_if<wire::AcquireRequest>(&request.body);
  if (!options_.permissions || acquire == nullptr ||
      options_.permissions->may_acquire(sender, acquire->lock, acquire->mode)) {
    return Status::ok();
  }
  return Status(Code::kPermissionDenied, "identity '" + std::string(sender) + "' may not acquire lock '" +
                                             acquire->lock + "' " + std::string(mode_name(acquire->mode)));
}

FrameResult LockdDriver::on_request(std::string_view bytes, uint64_t now, bool extra_frames, std::string_view sender) {
  uint64_t id = 0;
  auto request = extra_frames ? Result<wire::LockRequest>(Status(Code::kMalformed, "a request is one ZeroMQ frame"))
                              : wire::decode_lock_request(bytes, options_.limits, &id);
  if (!request.is_ok() && !extra_frames) {
    // A peer's message without a MAC, or with a wrong one: nobody to answer.
    if (names_peer_type(bytes, options_.max_peer_message_bytes)) {
      count_forged(bytes.size(), "no MAC", now);
      return {.outcome = FrameOutcome::kForged};
    }
    if (bytes.size() > PeerAuth::kMacBytes &&
        names_peer_type(bytes.substr(0, bytes.size() - PeerAuth::kMacBytes), options_.max_peer_message_bytes)) {
      count_forged(bytes.size(), "a MAC that does not verify", now);
      return {.outcome = FrameOutcome::kForged};
    }
  }
  const std::string_view type = request.is_ok() ? wire::request_type(request.value().body) : std::string_view();
  Status refusal = request.status();
  if (refusal.is_ok()) refusal = check_cluster_id(options_.cluster_id, request.value().cluster);
  if (refusal.is_ok()) refusal = check_permission(request.value(), sender);
  if (!refusal.is_ok()) {
    if (refused_requests_.count(now)) {
      spdlog::warn("refused request id {} ({} bytes): {}: {} requests refused so far", id, bytes.size(),
                   refusal.to_string(), refused_requests_.total());
    }
    wire::LockReply reply;
    reply.id = id;
    // A client of another cluster learns nothing of this group's state.
    const bool foreign = refusal.code() == Code::kWrongCluster;
    const Code code = refusal.code();
    reply.status = std::move(refusal);
    reply.epoch = foreign ? 0 : service_->node().epoch();
    reply.master = foreign ? 0 : service_->node().master_hint();
    return {.outcome = FrameOutcome::kRequestRefused,
            .request_id = id,
            .type = type,
            .refusal = wire::encode_lock_reply(reply),
            .refused_with = code};
  }
  if (options_.broken_ignore_lock_delay) {
    if (auto* acquire = std::get_if<wire::AcquireRequest>(&request.value().body)) acquire->lock_delay_ms = 0;
  }
  const uint64_t route = next_route_++;
  const bool sees_all = !options_.permissions || options_.permissions->may_inspect(sender);
  service_->on_request(
      {.route = route, .request = std::move(request).value(), .identity = std::string(sender), .sees_all = sees_all},
      now);
  return {.outcome = FrameOutcome::kRequest, .route = route, .request_id = id, .type = type};
}

void LockdDriver::count_refused(std::string_view body, const Result<PeerMessage>& peer, const Status& why,
                                uint64_t now) {
  if (refused_peer_messages_.count(now)) {
    spdlog::warn("refused a peer message ({} bytes{}): {}: {} peer messages refused so far", body.size(),
                 peer.is_ok() ? fmt::format(", {} from node {}", peer_type_name(peer.value().body), peer.value().from)
                              : std::string(),
                 why.to_string(), refused_peer_messages_.total());
  }
}

void LockdDriver::count_forged(size_t bytes, std::string_view why, uint64_t now) {
  if (forged_peer_messages_.count(now)) {
    spdlog::warn("dropped a message that claims to be a peer's ({} bytes, {}): {} forged peer messages so far", bytes,
                 why, forged_peer_messages_.total());
  }
}

void LockdDriver::tick(uint64_t now) {
  if (service_->next_timer_ms() <= now) service_->tick(now);
}

bool LockdDriver::begin_sync(uint64_t now) {
  service_->flush(now);
  take_outputs();
  return storage_.dirty() || !outbox_.empty() || !replies_.empty();
}

void LockdDriver::take_outputs() {
  // The master's accepts go out before its own sync, so that both overlap.
  for (PeerMessage& m : service_->take_early_peer_messages()) host_.send_peer(m.to, auth_.seal(m));
  // The rest waits for the sync. Serials are given as messages are taken:
  // they leave in that order, or peers drop the older ones as stale.
  for (PeerMessage& m : service_->take_peer_messages()) outbox_.push_back(std::move(m));
  for (ClientReply& r : service_->take_replies()) replies_.push_back(std::move(r));
  if (options_.broken_reply_before_sync) send_outputs();
}

Status LockdDriver::finish_sync(uint64_t now) {
  if (storage_.dirty()) {
    Status committed = storage_.commit();
    if (!committed.is_ok()) {
      if (failed_commits_.count(now)) {
        spdlog::error("acceptor state not saved, restarting from disk: {}: {} failed commits so far",
                      committed.to_string(), failed_commits_.total());
      }
      return restart(now);
    }
  }
  service_->synced(now);
  for (PeerMessage& m : service_->take_early_peer_messages()) outbox_.push_back(std::move(m));
  for (PeerMessage& m : service_->take_peer_messages()) outbox_.push_back(std::move(m));
  for (ClientReply& r : service_->take_replies()) replies_.push_back(std::move(r));
  send_outputs();
  return Status::ok();
}

void LockdDriver::send_outputs() {
  for (PeerMessage& m : outbox_) host_.send_peer(m.to, auth_.seal(m));
  outbox_.clear();
  for (ClientReply& r : replies_) {
    host_.answered(r.route, r.reply);
    host_.reply(r.route, wire::encode_lock_reply(r.reply));
  }
  replies_.clear();
}

Status LockdDriver::restart(uint64_t now) {
  // What this turn decided is not durable: say nothing of it, and start again
  // from what is, like a node that crashed and came back.
  outbox_.clear();
  replies_.clear();
  host_.forget_routes();
  options_.service.paxos.incarnation = host_.next_incarnation();
  auto restarted = LockService::start(options_.service, storage_, now);
  if (!restarted.is_ok()) return restarted.status();
  service_ = std::move(restarted).value();
  return Status::ok();
}

bool LockdDriver::stop(uint64_t now) {
  const Ballot epoch = service_->node().epoch();
  if (!service_->hand_over(now)) return false;  // a follower just goes
  spdlog::info("stepping down for a planned stop (epoch {}): the peers release the master lease", epoch);
  take_outputs();
  return true;
}

}  // namespace palisade::lockgroup
