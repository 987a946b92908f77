#include "tests/sim/quorum_sim.h"

#include <map>
#include <memory>
#include <optional>

#include "client/coordinator.h"
#include "common/physical_clock.h"
#include "replica/handler.h"
#include "replica/memory_store.h"

namespace palisade::sim {
namespace {

constexpr uint64_t kEpochMs = 1'700'000'000'000;
constexpr const char* kLock = "L";

// A node's wall clock: simulated time plus a fixed offset.
class SkewedClock final : public PhysicalClock {
 public:
  SkewedClock(const World& world, int64_t offset_ms) : world_(world), offset_ms_(offset_ms) {}
  uint64_t now_ms() override { return kEpochMs + world_.now_ms() + offset_ms_; }

 private:
  const World& world_;
  int64_t offset_ms_;
};

// The negative control's disk: it forgets every fence floor.
class FloorlessStore final : public replica::ReplicaStore {
 public:
  Result<replica::Versions> get(std::string_view key) override { return inner.get(key); }
  Result<uint64_t> fence_floor(std::string_view) override { return uint64_t{0}; }
  Status apply(const replica::Change& c) override { return inner.apply(c); }
  Status commit() override { return inner.commit(); }
  void abort() override { inner.abort(); }
  replica::MemoryStore inner;
};

std::string describe(const wire::Version& v) {
  return v.ts.to_string() + (v.tombstone ? " tombstone" : " '" + v.value + "'") +
         (v.state == wire::VersionState::kCommitted ? " committed" : " pending");
}

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

struct Replica {
  int node;
  std::unique_ptr<replica::ReplicaStore> store;  // the disk: survives crashes
  replica::MemoryStore* disk = nullptr;          // the same disk, for injecting bit flips
  std::unique_ptr<SkewedClock> physical;
  std::unique_ptr<HybridClock> clock;            // memory: lost in a crash
  std::unique_ptr<replica::ReplicaHandler> handler;
  std::vector<std::pair<int, wire::ReplicaRequest>> inbox;  // not yet committed
  bool up = true;
  bool flush_scheduled = false;
  uint64_t incarnation = 0;

  void boot() {
    clock = std::make_unique<HybridClock>(*physical);
    handler = std::make_unique<replica::ReplicaHandler>(*store, *clock);
  }
};

struct Client {
  int node;
  int index;
  std::unique_ptr<SkewedClock> physical;
  std::unique_ptr<HybridClock> clock;
  std::unique_ptr<client::Coordinator> coordinator;
  uint64_t token = 0;  // the lock this client believes it holds, 0 for none
  int ops_left = 0;
  uint64_t tick_at = UINT64_MAX;
  // Operations in flight and where their records go.
  enum class Kind { kWrite, kFence, kRead };
  std::map<client::OpId, std::pair<Kind, size_t>> ops;
  int counter = 0;
};

class QuorumSim {
 public:
  explicit QuorumSim(const QuorumSimOptions& o) : o_(o), world_(o.seed, o.keep_trace) {
    world_.faults() = o.faults;
    int quorum = o.replicas / 2 + 1;
    for (int i = 0; i < o.replicas; ++i) {
      Replica r;
      r.node = i;
      if (o.broken_replicas_skip_fence_floor) {
        auto floorless = std::make_unique<FloorlessStore>();
        r.disk = &floorless->inner;
        r.store = std::move(floorless);
      } else {
        auto memory = std::make_unique<replica::MemoryStore>();
        r.disk = memory.get();
        r.store = std::move(memory);
      }
      r.physical = std::make_unique<SkewedClock>(world_, offset());
      r.boot();
      replicas_.push_back(std::move(r));
      world_.attach(i, [this, i](int from, const std::string& bytes) { replica_receive(i, from, bytes); });
    }
    for (int c = 0; c < o.clients; ++c) {
      Client cl;
      cl.node = o.replicas + c;
      cl.index = c;
      cl.physical = std::make_unique<SkewedClock>(world_, offset());
      cl.clock = std::make_unique<HybridClock>(*cl.physical);
      client::CoordinatorOptions co{o.replicas, quorum, quorum, 2000, 50};
      cl.coordinator = std::make_unique<client::Coordinator>(co, *cl.clock);
      cl.ops_left = o.ops_per_client;
      clients_.push_back(std::move(cl));
      world_.attach(o.replicas + c, [this, c](int from, const std::string& bytes) { client_receive(c, from, bytes); });
    }
  }

  QuorumSimResult run() {
    for (int c = 0; c < o_.clients; ++c) schedule_next_op(c, world_.uniform(0, 50));
    schedule_crash();
    // Phase 1: the workload under faults.
    while (!world_.idle() && !workload_done()) world_.run(world_.now_ms() + 1000);
    // Phase 2: heal, let every message in flight land, then read every key.
    world_.faults() = NetworkFaults{0, 0, world_.faults().max_delay_ms, 0, 0};
    healed_ = true;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (!replicas_[i].up) restart(static_cast<int>(i));
    }
    world_.run(UINT64_MAX);
    for (int k = 0; k < o_.keys; ++k) {
      start_read(0, key(k));
      world_.run(UINT64_MAX);
    }

    QuorumSimResult result;
    result.violations = check(history_);
    result.trace_hash = world_.trace_hash();
    result.trace = world_.trace();
    result.events = world_.events();
    for (const auto& w : history_.writes) {
      if (w.result == Code::kOk) ++result.writes_ok;
      else if (w.result == Code::kFenced) ++result.writes_fenced;
      else ++result.writes_unknown;
    }
    for (const auto& r : history_.reads) (r.result == Code::kOk ? result.reads_ok : result.reads_failed)++;
    result.history = std::move(history_);
    return result;
  }

 private:
  int64_t offset() {
    return static_cast<int64_t>(world_.uniform(0, 2 * o_.max_clock_offset_ms)) -
           static_cast<int64_t>(o_.max_clock_offset_ms);
  }
  std::string key(int k) const { return "key" + std::to_string(k); }
  bool workload_done() const {
    for (const Client& c : clients_) {
      if (c.ops_left > 0 || !c.ops.empty()) return false;
    }
    return true;
  }

  // ---- replicas ----

  void replica_receive(int i, int from, const std::string& bytes) {
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

  void flush(int i) {
    Replica& r = replicas_[i];
    r.flush_scheduled = false;
    std::vector<wire::ReplicaRequest> batch;
    for (auto& [from, req] : r.inbox) batch.push_back(req);
    auto replies = r.handler->handle_batch(batch);
    for (size_t k = 0; k < replies.size(); ++k) world_.send(i, r.inbox[k].first, wire::encode_reply(replies[k]));
    r.inbox.clear();
  }

  void schedule_crash() {
    if (healed_ || o_.crash_per_second <= 0) return;
    world_.at(1000, "crash check", [this] {
      if (healed_) return;
      if (world_.chance(o_.crash_per_second)) {
        int i = static_cast<int>(world_.uniform(0, replicas_.size() - 1));
        if (replicas_[i].up) crash(i);
      }
      if (world_.chance(o_.corrupt_per_second)) {
        int i = static_cast<int>(world_.uniform(0, replicas_.size() - 1));
        std::string k = key(static_cast<int>(world_.uniform(0, o_.keys - 1)));
        if (replicas_[i].disk->corrupt(k)) world_.record("bit flip in replica " + std::to_string(i) + " key " + k);
      }
      schedule_crash();
    });
  }

  void crash(int i) {
    Replica& r = replicas_[i];
    world_.record("crash replica " + std::to_string(i) + " losing " + std::to_string(r.inbox.size()) + " requests");
    r.up = false;
    r.inbox.clear();
    r.flush_scheduled = false;
    ++r.incarnation;
    r.store->abort();
    world_.at(world_.uniform(100, 10000), "restart replica " + std::to_string(i), [this, i] {
      if (!replicas_[i].up) restart(i);
    });
  }

  void restart(int i) {
    Replica& r = replicas_[i];
    r.up = true;
    r.boot();
  }

  // ---- clients ----

  void client_receive(int c, int from, const std::string& bytes) {
    auto reply = wire::decode_reply(bytes, wire::Limits{});
    if (!reply.is_ok()) return;
    world_.record("client " + std::to_string(c) + " <- " + std::to_string(from) + " " + describe(reply.value()));
    clients_[c].coordinator->on_reply(from, reply.value(), world_.now_ms());
    pump(c);
  }

  // Sends what the coordinator wants sent, records what completed, re-arms its timer.
  void pump(int c) {
    Client& cl = clients_[c];
    for (auto sends = cl.coordinator->take_sends(); !sends.empty(); sends = cl.coordinator->take_sends()) {
      for (auto& s : sends) {
        if (!replicas_[s.replica].up) {  // like ZeroMQ's immediate: no connection, no send
          cl.coordinator->on_unreachable(s.replica, s.request.id, world_.now_ms());
          continue;
        }
        world_.send(cl.node, s.replica, wire::encode_request(s.request));
      }
    }
    for (auto& done : cl.coordinator->take_completions()) complete(c, done);
    auto next = cl.coordinator->next_deadline_ms();
    if (next && *next < cl.tick_at) {
      cl.tick_at = *next;
      world_.at(*next - std::min(*next, world_.now_ms()), "tick client " + std::to_string(c), [this, c] {
        Client& me = clients_[c];
        if (me.tick_at > world_.now_ms()) return;  // superseded by an earlier tick
        me.tick_at = UINT64_MAX;
        me.coordinator->on_tick(world_.now_ms());
        pump(c);
      });
    }
  }

  void complete(int c, const client::Completion& done) {
    Client& cl = clients_[c];
    auto it = cl.ops.find(done.op);
    if (it == cl.ops.end()) return;
    auto [kind, record] = it->second;
    cl.ops.erase(it);
    uint64_t now = world_.now_ms();
    if (kind == Client::Kind::kRead) {
      const auto& r = std::get<ReadResult>(done.result);
      ReadRecord& rec = history_.reads[record];
      rec.end_ms = now;
      rec.result = r.status.code();
      rec.found = r.found;
      rec.value = r.value;
      rec.ts = r.ts;
      world_.record("client " + std::to_string(c) + " read " + rec.key + " -> " + std::string(code_name(rec.result)) +
                    " " + r.ts.to_string());
    } else {
      const auto& w = std::get<WriteResult>(done.result);
      if (kind == Client::Kind::kFence) {
        FenceRecord& rec = history_.fences[record];
        rec.end_ms = now;
        rec.result = w.status.code();
      } else {
        WriteRecord& rec = history_.writes[record];
        rec.end_ms = now;
        rec.result = w.status.code();
        rec.ts = w.ts;
      }
      world_.record("client " + std::to_string(c) + " write -> " + w.status.to_string());
    }
    if (cl.ops_left > 0) schedule_next_op(c, world_.uniform(0, 30));
  }

  void schedule_next_op(int c, uint64_t delay) {
    if (world_.chance(o_.pause)) delay += world_.uniform(0, o_.pause_ms_max);  // a process pause
    world_.at(delay, "op client " + std::to_string(c), [this, c] { next_op(c); });
  }

  void next_op(int c) {
    Client& cl = clients_[c];
    if (cl.ops_left <= 0 || healed_) return;
    --cl.ops_left;
    uint64_t roll = world_.uniform(0, 99);
    std::string k = key(static_cast<int>(world_.uniform(0, o_.keys - 1)));
    if (roll < 10 || (cl.token == 0 && roll < 40)) return acquire(c);
    if (roll < 60) return start_write(c, k, false);
    if (roll < 65) return start_write(c, k, true);
    start_read(c, k);
  }

  // The lock service hands out the next token; the client makes the fence.
  void acquire(int c) {
    Client& cl = clients_[c];
    cl.token = ++tokens_;
    history_.fences.push_back({c, cl.token, world_.now_ms(), 0, Code::kTimeout});
    client::OpId op = cl.coordinator->start_fence(Fence{kLock, cl.token}, world_.now_ms());
    cl.ops[op] = {Client::Kind::kFence, history_.fences.size() - 1};
    world_.record("client " + std::to_string(c) + " fences token " + std::to_string(cl.token));
    pump(c);
  }

  void start_write(int c, const std::string& k, bool tombstone) {
    Client& cl = clients_[c];
    // Some writes go without a lock: plain last-writer-wins, losing to fenced ones.
    Fence fence = world_.chance(0.1) || cl.token == 0 ? Fence{} : Fence{kLock, cl.token};
    std::string value = tombstone ? "" : "c" + std::to_string(c) + "-" + std::to_string(++cl.counter);
    history_.writes.push_back({c, k, value, tombstone, fence.token, world_.now_ms(), 0, Code::kTimeout, {}});
    client::OpId op = cl.coordinator->start_write(k, value, tombstone, fence, world_.now_ms());
    cl.ops[op] = {Client::Kind::kWrite, history_.writes.size() - 1};
    world_.record("client " + std::to_string(c) + (tombstone ? " deletes " : " writes ") + k + " token " +
                  std::to_string(fence.token));
    pump(c);
  }

  void start_read(int c, const std::string& k) {
    Client& cl = clients_[c];
    history_.reads.push_back({c, k, world_.now_ms(), 0, Code::kTimeout, false, "", {}});
    client::OpId op = cl.coordinator->start_read(k, world_.now_ms());
    cl.ops[op] = {Client::Kind::kRead, history_.reads.size() - 1};
    pump(c);
  }

  QuorumSimOptions o_;
  World world_;
  std::vector<Replica> replicas_;
  std::vector<Client> clients_;
  History history_;
  uint64_t tokens_ = 0;
  bool healed_ = false;
};

}  // namespace

QuorumSimResult run_quorum_sim(const QuorumSimOptions& options) { return QuorumSim(options).run(); }

}  // namespace palisade::sim
