#include "client/lane.h"

#include <algorithm>

namespace palisade::client {

Lane::Lane(ReplicaLinks& links, const std::vector<std::string>& endpoints, CoordinatorOptions options,
           HybridClock& clock, wire::Limits limits)
    : links_(links), limits_(limits), clock_(clock), coordinator_(options, clock), by_replica_(endpoints.size()) {
  for (const auto& endpoint : endpoints) replicas_.push_back({.endpoint = endpoint});
}

void Lane::on_frame(size_t replica, std::string_view frame, uint64_t now_ms) {
  if (replica >= replicas_.size()) return;
  auto reply = wire::decode_reply(frame, limits_);
  if (!reply.is_ok()) return;
  if (reply.value().status.code() == Code::kWrongCluster) name_foreign(replicas_[replica], reply.value());
  if (!note_batching(replicas_[replica], reply.value(), now_ms)) {
    // Like every reply, it carries the replica's clock (a refusal too).
    if (reply.value().clock != 0) (void)clock_.observe(reply.value().clock);
    return;
  }
  coordinator_.on_reply(static_cast<int>(replica), reply.value(), now_ms);
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

void Lane::probe(size_t replica, uint64_t now_ms) {
  Replica& r = replicas_[replica];
  std::vector<std::string> pings;
  const uint64_t id = next_probe_id_ -= 2;
  for (uint64_t i = 0; i < 2; ++i) pings.push_back(wire::encode_request(
      {.id = id + i, .body = wire::PingRequest{}, .cluster = coordinator_.options().cluster_id}));
  if (!links_.send(replica, pings)) return;
  r.batching = Batching::kProbing;
  r.probe_id = id;
  r.probe_sent_ms = now_ms;
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
      if (queued.size() > 1 && r.batching == Batching::kUnknown) probe(i, now_ms);
      for (size_t next = 0, size = 0; next < queued.size(); next += size) {
        size = r.batching == Batching::kYes ? std::min(queued.size() - next, wire::kMaxRequestsPerMessage) : 1;
        frames_.clear();
        for (size_t k = next; k < next + size; ++k) frames_.push_back(wire::encode_request(queued[k]->request));
        if (!links_.send(i, frames_)) {
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
