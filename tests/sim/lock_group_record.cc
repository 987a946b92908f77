#include "tests/sim/lock_group_record.h"

namespace palisade::sim {

LockGroupRecord::LockGroupRecord(World& world, Options options) : world_(world), o_(options) {
  world_.attach(o_.node, [this](int from, const std::string& bytes) { receive(from, bytes); });
}

void LockGroupRecord::get(Done done) { start(wire::GetReplicasRequest{}, std::move(done)); }

void LockGroupRecord::set(uint64_t replaces, const wire::ReplicaSet& next, Done done) {
  start(wire::SetReplicasRequest{.version = replaces,
                                 .replicas = next.replicas,
                                 .write_quorum = next.write_quorum,
                                 .read_quorum = next.read_quorum,
                                 .phase = next.phase},
        std::move(done));
}

void LockGroupRecord::start(wire::LockRequestBody body, Done done) {
  auto call = std::make_shared<Call>(Call{.body = std::move(body), .done = std::move(done)});
  call->lockd = static_cast<int>(world_.uniform(1, static_cast<uint64_t>(o_.lockd)));
  send(call);
}

void LockGroupRecord::send(const std::shared_ptr<Call>& call) {
  const uint64_t id = next_id_++;
  waiting_[id] = call;
  ++call->tries;
  world_.send(o_.node, o_.lockd_base + call->lockd, wire::encode_lock_request({.id = id, .body = call->body}));
  world_.at(o_.timeout_ms, "record call times out", [this, id] {
    auto it = waiting_.find(id);
    if (it == waiting_.end()) return;
    const std::shared_ptr<Call> call = it->second;
    waiting_.erase(it);
    if (!call->over) again(call, call->lockd % o_.lockd + 1);
  });
}

void LockGroupRecord::again(const std::shared_ptr<Call>& call, int lockd) {
  if (call->tries >= o_.tries) {
    call->over = true;
    return call->done(Status(Code::kUnavailable, "no lockd node answered"));
  }
  call->lockd = lockd;
  send(call);
}

void LockGroupRecord::receive(int from, const std::string& bytes) {
  auto reply = wire::decode_lock_reply(bytes, size_t{64} << 20);
  if (!reply.is_ok()) return;
  auto it = waiting_.find(reply.value().id);
  if (it == waiting_.end()) return;
  const std::shared_ptr<Call> call = it->second;
  waiting_.erase(it);
  if (call->over) return;
  const wire::LockReply& r = reply.value();
  if (r.status.code() == Code::kNotMaster) {
    // To the master it names at once; with none known, the next node a little later.
    if (r.master != 0 && static_cast<int>(r.master) != from - o_.lockd_base) {
      return again(call, static_cast<int>(r.master));
    }
    world_.at(o_.timeout_ms / 2, "record call again", [this, call] { again(call, call->lockd % o_.lockd + 1); });
    return;
  }
  call->over = true;
  if (!r.status.is_ok()) return call->done(r.status);
  call->done(r.config);
}

}  // namespace palisade::sim
