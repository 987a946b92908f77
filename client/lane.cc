#include "client/lane.h"

#include <algorithm>

#include "transport/transport.h"

namespace palisade::client {

Lane::Lane(zmq::context_t& ctx, const std::vector<std::string>& endpoints, CoordinatorOptions options,
           HybridClock& clock, wire::Limits limits)
    : limits_(limits), clock_(clock), coordinator_(options, clock), by_replica_(endpoints.size()) {
  // Commits and purges are not awaited: give them a moment to leave at close.
  transport::SocketOptions socket_options{.linger_ms = 500};
  for (const auto& endpoint : endpoints) {
    replicas_.push_back({.socket = transport::make_dealer(ctx, endpoint, socket_options), .endpoint = endpoint});
  }
}

void Lane::add_poll_items(std::vector<zmq::pollitem_t>& items) {
  for (auto& r : replicas_) items.push_back({r.socket.handle(), 0, ZMQ_POLLIN, 0});
}

void Lane::receive(size_t replica, uint64_t now_ms) {
  zmq::message_t msg;
  while (replicas_[replica].socket.recv(msg, zmq::recv_flags::dontwait)) {  // a frame at a time
    auto reply = wire::decode_reply({static_cast<const char*>(msg.data()), msg.size()}, limits_);
    if (!reply.is_ok()) continue;
    if (reply.value().status.code() == Code::kWrongCluster) name_foreign(replicas_[replica], reply.value());
    if (!note_batching(replicas_[replica], reply.value(), now_ms)) {
      // Like every reply, it carries the replica's clock (a refusal too).
      if (reply.value().clock != 0) (void)clock_.observe(reply.value().clock);
      continue;
    }
    coordinator_.on_reply(static_cast<int>(replica), reply.value(), now_ms);
  }
}

void Lane::name_foreign(const Replica& r, wire::ReplicaReply& reply) {
  reply.status = Status(Code::kWrongCluster, r.endpoint + " is not a replica of this cluster: " + reply.status.message());
  reply.clock = 0;  // another cluster's clock is nothing to this one's timestamps
}

bool Lane::note_batching(Replica& r, const wire::ReplicaReply& reply, uint64_t now_ms) {
  // The lane sends nothing a replica could refuse with id 0 but a message of
  // several requests (its requests are well formed).
  if (reply.id == 0 && reply.status.code() == Code::kMalformed) {
    if (r.batching == Batching::kProbing) {
      r.batching = Batching::kNo;
      r.refused_ms = now_ms;
    }
    // A downgraded replica: its refused requests time out; ask again.
    if (r.batching == Batching::kYes) r.batching = Batching::kUnknown;
    return false;
  }
  if (r.probe_id == 0 || (reply.id != r.probe_id && reply.id != r.probe_id + 1)) return true;
  if (r.batching == Batching::kProbing) r.batching = Batching::kYes;
  r.probe_id = 0;
  return false;
}

void Lane::probe(Replica& r, uint64_t now_ms) {
  std::vector<std::string> pings;
  const uint64_t id = next_probe_id_ -= 2;
  for (uint64_t i = 0; i < 2; ++i) pings.push_back(wire::encode_request(
      {.id = id + i, .body = wire::PingRequest{}, .cluster = coordinator_.options().cluster_id}));
  if (!send(r, pings)) return;
  r.batching = Batching::kProbing;
  r.probe_id = id;
  r.probe_sent_ms = now_ms;
}

bool Lane::send(Replica& replica, const std::vector<std::string>& frames) {
  try {
    for (size_t i = 0; i < frames.size(); ++i) {
      const auto more = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
      // ZeroMQ takes every frame of a message once it took the first.
      if (!replica.socket.send(zmq::buffer(frames[i]), more | zmq::send_flags::dontwait)) return false;
    }
    return true;
  } catch (const zmq::error_t&) {
    return false;
  }
}

std::vector<Completion> Lane::flush(uint64_t now_ms) {
  for (auto sends = coordinator_.take_sends(); !sends.empty(); sends = coordinator_.take_sends()) {
    for (auto& queued : by_replica_) queued.clear();
    for (const Send& s : sends) by_replica_[s.replica].push_back(&s);
    for (size_t i = 0; i < replicas_.size(); ++i) {
      Replica& r = replicas_[i];
      const std::vector<const Send*>& queued = by_replica_[i];
      // A probe lost with its replica's connection must not stop batching for good.
      if (r.batching == Batching::kProbing && now_ms >= r.probe_sent_ms + coordinator_.options().timeout_ms) {
        r.batching = Batching::kUnknown;
      }
      // A replica that refused may have been upgraded since.
      if (r.batching == Batching::kNo && now_ms >= r.refused_ms + kAskAgainAfterMs) r.batching = Batching::kUnknown;
      if (queued.size() > 1 && r.batching == Batching::kUnknown) probe(r, now_ms);
      for (size_t next = 0, size = 0; next < queued.size(); next += size) {
        size = r.batching == Batching::kYes ? std::min(queued.size() - next, wire::kMaxRequestsPerMessage) : 1;
        frames_.clear();
        for (size_t k = next; k < next + size; ++k) frames_.push_back(wire::encode_request(queued[k]->request));
        if (!send(r, frames_)) {
          for (size_t k = next; k < next + size; ++k) {
            coordinator_.on_unreachable(queued[k]->replica, queued[k]->request.id, now_ms);
          }
        }
      }
    }
  }
  return coordinator_.take_completions();
}

}  // namespace palisade::client
