#include "tests/sim/replica_set.h"

namespace palisade::sim {
namespace {

// The negative control's disk: it forgets every fence floor.
class FloorlessStore final : public replica::ReplicaStore {
 public:
  Result<replica::Versions> get(std::string_view key) override { return inner.get(key); }
  Result<uint64_t> fence_floor(std::string_view) override { return uint64_t{0}; }
  Status apply(const replica::Change& c) override { return inner.apply(c); }
  Status commit() override { return inner.commit(); }
  void abort() override { inner.abort(); }
  Result<wire::TreeNode> tree_node(uint32_t level, uint64_t index) override { return inner.tree_node(level, index); }
  Status list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) override { return inner.list_leaf(leaf, out); }
  Result<wire::ReplicaStats> stats(size_t max_floors) override { return inner.stats(max_floors); }
  replica::MemoryStore inner;
};

std::string describe(const wire::Version& v) {
  return v.ts.to_string() + (v.tombstone ? " tombstone" : " '" + v.value + "'") +
         (v.state == wire::VersionState::kCommitted ? " committed" : " pending");
}

}  // namespace

std::string describe(const wire::ReplicaRequest& r) {
  std::string id = "#" + std::to_string(r.id) + " ";
  if (auto* w = std::get_if<wire::WriteRequest>(&r.body)) {
    return id + "write " + w->key + " " + w->ts.to_string() + (w->tombstone ? " tombstone" : " '" + w->value + "'") +
           (w->committed ? " committed" : "");
  }
  if (auto* f = std::get_if<wire::FenceRequest>(&r.body)) return id + "fence " + f->lock + " " + std::to_string(f->token);
  if (auto* c = std::get_if<wire::CommitRequest>(&r.body)) return id + "commit " + c->key + " " + c->ts.to_string();
  if (auto* p = std::get_if<wire::PurgeRequest>(&r.body)) return id + "purge " + p->key + " " + p->ts.to_string();
  if (auto* rd = std::get_if<wire::ReadRequest>(&r.body)) return id + "read " + rd->key + " floor_of " + rd->floor_of;
  return id + "ping";
}

std::string describe(const wire::ReplicaReply& r) {
  std::string out = "#" + std::to_string(r.id) + " " + r.status.to_string();
  for (const auto& v : r.versions) out += " [" + describe(v) + "]";
  for (const auto& [lock, floor] : r.floors) out += " floor " + lock + "=" + std::to_string(floor);
  return out;
}

ReplicaSet::ReplicaSet(World& world, Options options) : world_(world), options_(std::move(options)) {
  for (int i = 0; i < options_.replicas; ++i) {
    Replica r;
    if (options_.skip_fence_floor) {
      auto floorless = std::make_unique<FloorlessStore>();
      r.disk = &floorless->inner;
      r.store = std::move(floorless);
    } else {
      auto memory = std::make_unique<replica::MemoryStore>();
      r.disk = memory.get();
      r.store = std::move(memory);
    }
    int64_t offset = static_cast<int64_t>(world_.uniform(0, 2 * options_.max_clock_offset_ms)) -
                     static_cast<int64_t>(options_.max_clock_offset_ms);
    r.physical = std::make_unique<SkewedClock>(world_, offset);
    replicas_.push_back(std::move(r));
    restart(i);
    world_.attach(i, [this, i](int from, const std::string& bytes) { receive(i, from, bytes); });
  }
}

void ReplicaSet::receive(int i, int from, const std::string& bytes) {
  Replica& r = replicas_[i];
  if (!r.up) return;
  uint64_t id = 0;
  auto request = wire::decode_request(bytes, wire::Limits{}, &id);
  if (!request.is_ok()) {
    world_.send(i, from, wire::encode_reply(wire::error_reply(id, request.status())));
    return;
  }
  world_.record("replica " + std::to_string(i) + " <- " + std::to_string(from) + " " + describe(request.value()));
  r.inbox.emplace_back(from, std::move(request).value());
  if (r.flush_scheduled) return;
  r.flush_scheduled = true;
  uint64_t incarnation = r.incarnation;
  // The batch commits (syncs) a little later; a crash before then loses it.
  world_.at(world_.uniform(1, 5), "flush replica " + std::to_string(i), [this, i, incarnation] {
    if (replicas_[i].incarnation == incarnation) flush(i);
  });
}

void ReplicaSet::flush(int i) {
  Replica& r = replicas_[i];
  r.flush_scheduled = false;
  std::vector<wire::ReplicaRequest> batch;
  for (auto& [from, req] : r.inbox) batch.push_back(req);
  auto replies = r.handler->handle_batch(batch);
  for (size_t k = 0; k < replies.size(); ++k) world_.send(i, r.inbox[k].first, wire::encode_reply(replies[k]));
  r.inbox.clear();
}

void ReplicaSet::crash(int i) {
  Replica& r = replicas_[i];
  world_.record("crash replica " + std::to_string(i) + " losing " + std::to_string(r.inbox.size()) + " requests");
  r.up = false;
  r.inbox.clear();
  r.flush_scheduled = false;
  ++r.incarnation;
  r.store->abort();
}

void ReplicaSet::restart(int i) {
  Replica& r = replicas_[i];
  r.up = true;
  r.clock = std::make_unique<HybridClock>(*r.physical);
  r.handler = std::make_unique<replica::ReplicaHandler>(*r.store, *r.clock, options_.auth);
}

bool ReplicaSet::corrupt(int i, const std::string& key) { return replicas_[i].disk->corrupt(key); }

void ReplicaSet::restart_all() {
  for (int i = 0; i < size(); ++i) {
    if (!replicas_[i].up) restart(i);
  }
}

}  // namespace palisade::sim
