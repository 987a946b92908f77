#include "client/lane.h"

#include <algorithm>

#include "common/transport.h"

namespace palisade::client {

Lane::Lane(zmq::context_t& ctx, const std::vector<std::string>& endpoints, CoordinatorOptions options,
           HybridClock& clock, wire::Limits limits)
    : limits_(limits), coordinator_(options, clock), by_replica_(endpoints.size()) {
  // Commits and purges are not awaited: give them a moment to leave at close.
  transport::SocketOptions socket_options{.linger_ms = 500};
  for (const auto& endpoint : endpoints) {
    replicas_.push_back({.socket = transport::make_dealer(ctx, endpoint, socket_options)});
  }
}

void Lane::add_poll_items(std::vector<zmq::pollitem_t>& items) {
  for (auto& r : replicas_) items.push_back({r.socket.handle(), 0, ZMQ_POLLIN, 0});
}

void Lane::receive(size_t replica, uint64_t now_ms) {
  zmq::message_t msg;
  while (replicas_[replica].socket.recv(msg, zmq::recv_flags::dontwait)) {  // a frame at a time
    auto reply = wire::decode_reply({static_cast<const char*>(msg.data()), msg.size()}, limits_);
    if (!reply.is_ok() || !note_probe_answer(replica, reply.value(), now_ms)) continue;
    coordinator_.on_reply(static_cast<int>(replica), reply.value(), now_ms);
  }
}

bool Lane::note_probe_answer(size_t replica, const wire::ReplicaReply& reply, uint64_t now_ms) {
  Replica& r = replicas_[replica];
  if (r.batching != Batching::kProbing) return true;
  if (reply.id == 0 && reply.status.code() == Code::kMalformed) {
    // Replies come in order, and the lane sends nothing a replica could refuse
    // with id 0 but a message of several requests: this is the probe's refusal.
    r.batching = Batching::kNo;
    std::vector<std::string> frames(1);
    for (size_t i = 0; i < r.probe.size(); ++i) {
      frames[0] = std::move(r.probe_frames[i]);
      if (!send(r, frames)) coordinator_.on_unreachable(static_cast<int>(replica), r.probe[i], now_ms);
    }
    r.probe.clear();
    r.probe_frames.clear();
    return false;
  }
  if (std::find(r.probe.begin(), r.probe.end(), reply.id) != r.probe.end()) {
    r.batching = Batching::kYes;
    r.probe.clear();
    r.probe_frames.clear();
  }
  return true;
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
    for (const Send& s : sends) by_replica_[s.replica].push_back(&s);
    for (size_t i = 0; i < replicas_.size(); ++i) {
      Replica& r = replicas_[i];
      std::vector<const Send*>& queued = by_replica_[i];
      // A probe lost with its replica's connection must not stop batching for good.
      if (r.batching == Batching::kProbing && now_ms >= r.probe_sent_ms + coordinator_.options().timeout_ms) {
        r.batching = Batching::kUnknown;
        r.probe.clear();
        r.probe_frames.clear();
      }
      for (size_t next = 0, size = 0; next < queued.size(); next += size) {
        const bool may_batch = r.batching == Batching::kYes || r.batching == Batching::kUnknown;
        size = may_batch ? std::min(queued.size() - next, wire::kMaxRequestsPerMessage) : 1;
        frames_.clear();
        for (size_t k = next; k < next + size; ++k) frames_.push_back(wire::encode_request(queued[k]->request));
        if (!send(r, frames_)) {
          for (size_t k = next; k < next + size; ++k) {
            coordinator_.on_unreachable(queued[k]->replica, queued[k]->request.id, now_ms);
          }
        } else if (size > 1 && r.batching == Batching::kUnknown) {
          r.batching = Batching::kProbing;
          r.probe_sent_ms = now_ms;
          for (size_t k = next; k < next + size; ++k) r.probe.push_back(queued[k]->request.id);
          r.probe_frames = frames_;
        }
      }
      queued.clear();
    }
  }
  return coordinator_.take_completions();
}

}  // namespace palisade::client
