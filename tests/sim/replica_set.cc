#include "tests/sim/replica_set.h"

#include <filesystem>
#include <stdexcept>

#include "replica/lmdb_store.h"
#include "tests/support/forwarding_store.h"

namespace palisade::sim {
namespace {

using test::SimDisk;

// Small, so that checkpoints come every few batches.
constexpr replica::LmdbStore::Options kLmdbOptions{
    .map_size_bytes = size_t{4} << 20, .journal_bytes = size_t{16} << 10, .checkpoint_bytes = size_t{4} << 10};

// The negative control's disk: it forgets every fence floor.
class FloorlessStore final : public test::ForwardingStore {
 public:
  Result<uint64_t> fence_floor(std::string_view) override { return uint64_t{0}; }
};

// The negative control's disk: a write leaves the fence floor where it was
// (fences still raise it).
class WriteKeepsFloorStore final : public test::ForwardingStore {
 public:
  Status apply(const replica::Change& c) override {
    if (c.put == nullptr) return inner.apply(c);
    replica::Change without_floor = c;
    without_floor.floor = 0;
    return inner.apply(without_floor);
  }
};

std::string describe(const wire::Version& v) {
  return v.ts.to_string() + (v.tombstone ? " tombstone" : " '" + v.value + "'") +
         (v.state == wire::VersionState::kCommitted ? " committed" : " pending");
}

std::string carried(const std::vector<wire::CommitRequest>& commits) {
  std::string out;
  for (const auto& c : commits) out += " +commit " + c.key + " " + c.ts.to_string();
  return out;
}

}  // namespace

std::string describe(const wire::ReplicaRequest& r) {
  std::string id = "#" + std::to_string(r.id) + " ";
  if (auto* w = std::get_if<wire::WriteRequest>(&r.body)) {
    return id + "write " + w->key + " " + w->ts.to_string() + (w->tombstone ? " tombstone" : " '" + w->value + "'") +
           (w->committed ? " committed" : "") + carried(w->commits);
  }
  if (auto* f = std::get_if<wire::FenceRequest>(&r.body)) return id + "fence " + f->lock + " " + std::to_string(f->token);
  if (auto* c = std::get_if<wire::CommitRequest>(&r.body)) return id + "commit " + c->key + " " + c->ts.to_string();
  if (auto* p = std::get_if<wire::PurgeRequest>(&r.body)) return id + "purge " + p->key + " " + p->ts.to_string();
  if (auto* rd = std::get_if<wire::ReadRequest>(&r.body)) return id + "read " + rd->key + " floor_of " + rd->floor_of;
  if (auto* cm = std::get_if<wire::CopyManyRequest>(&r.body)) {
    std::string out = id + "copy_many";
    for (const wire::Copy& c : cm->copies) {
      out +=
          " " + c.key + " " + c.version.ts.to_string() + " '" + c.version.value + "'" + (c.pending ? " pending" : "");
    }
    return out;
  }
  return id + std::string(wire::request_type(r.body));
}

std::string describe(const wire::ReplicaReply& r) {
  std::string out = "#" + std::to_string(r.id) + " " + r.status.to_string();
  for (const auto& v : r.versions) out += " [" + describe(v) + "]";
  for (const auto& [lock, floor] : r.floors) out += " floor " + lock + "=" + std::to_string(floor);
  return out;
}

ReplicaSet::ReplicaSet(World& world, Options options) : world_(world), options_(std::move(options)) {
  if (options_.lmdb) {
    if (options_.skip_fence_floor || options_.writes_keep_floor || options_.skip_checksum) {
      throw std::invalid_argument("replicas on LMDB cannot have the memory stores' negative controls");
    }
    dir_ = std::make_unique<TempDir>();
    disk_ = std::make_unique<test::SimDiskScope>(dir_->path());
    if (options_.lying_journal_sync) SimDisk::lie_about_syncs("journal");
  }
  for (int i = 0; i < options_.replicas; ++i) {
    Replica r;
    if (options_.lmdb) {
      r.dir = dir_->sub("r" + std::to_string(i));
      std::filesystem::create_directory(r.dir);
    } else if (options_.skip_fence_floor || options_.writes_keep_floor) {
      std::unique_ptr<test::ForwardingStore> broken;
      if (options_.skip_fence_floor) {
        broken = std::make_unique<FloorlessStore>();
      } else {
        broken = std::make_unique<WriteKeepsFloorStore>();
      }
      r.disk = &broken->inner;
      r.store = std::move(broken);
    } else {
      auto memory = std::make_unique<replica::MemoryStore>();
      r.disk = memory.get();
      r.store = std::move(memory);
    }
    int64_t offset = static_cast<int64_t>(world_.uniform(0, 2 * options_.max_clock_offset_ms)) -
                     static_cast<int64_t>(options_.max_clock_offset_ms);
    r.physical = std::make_unique<SkewedClock>(world_, offset);
    replicas_.push_back(std::move(r));
    if (!restart(i)) throw std::runtime_error(why_);
    world_.attach(i, [this, i](int from, const std::string& bytes) { receive(i, from, bytes); });
  }
}

void ReplicaSet::receive(int i, int from, const std::string& bytes) {
  Replica& r = replicas_[i];
  if (!r.up) return;
  // One request a network message: a message of one frame.
  const std::string_view frame = bytes;
  auto taken = r.driver->take(static_cast<uint64_t>(from), std::span<const std::string_view>(&frame, 1));
  if (taken.requests == 1) {
    world_.record("replica " + std::to_string(i) + " <- " + std::to_string(from) + " " +
                  describe(r.driver->pending().back()));
  }
  if (r.flush_scheduled) return;
  r.flush_scheduled = true;
  uint64_t incarnation = r.incarnation;
  // The batch commits (syncs) a little later; a crash before then loses it.
  // (The simulated batches stay far below the driver's limits.)
  world_.at(world_.uniform(1, 5), "flush replica " + std::to_string(i), [this, i, incarnation] {
    if (replicas_[i].incarnation == incarnation) flush(i);
  });
}

void ReplicaSet::flush(int i) {
  Replica& r = replicas_[i];
  r.flush_scheduled = false;
  r.driver->flush();
  if (r.crash_armed && SimDisk::crashed()) {
    world_.record("replica " + std::to_string(i) + " lost power inside its commit");
    ++power_losses_in_commit_;
    crash(i);
    if (options_.crashed_in_commit) options_.crashed_in_commit(i);
  }
}

void ReplicaSet::Host::reply(uint64_t route, std::vector<std::string> replies) {
  // Power went inside the commit: the process is dead, nothing is answered.
  if (set_.replicas_[i_].crash_armed && SimDisk::crashed()) return;
  for (std::string& bytes : replies) set_.world_.send(i_, static_cast<int>(route), std::move(bytes));
}

void ReplicaSet::Host::amend(const wire::ReplicaRequest& request, wire::ReplicaReply& reply) {
  auto* read = std::get_if<wire::ReadRequest>(&request.body);
  if (read == nullptr || !reply.status.is_ok()) return;
  Replica& r = set_.replicas_[i_];
  if (auto it = r.flipped.find(read->key); it != r.flipped.end()) {
    for (wire::Version& v : reply.versions) {
      if (wire::same_write(v, it->second)) v.value[0] = static_cast<char>(v.value[0] ^ 0x20);
    }
  }
}

void ReplicaSet::crash(int i) {
  Replica& r = replicas_[i];
  const size_t lost = r.driver->drop();
  world_.record("crash replica " + std::to_string(i) + " losing " + std::to_string(lost) + " requests");
  r.up = false;
  r.flush_scheduled = false;
  ++r.incarnation;
  if (options_.lmdb) {
    lose_power(i);
  } else {
    r.store->abort();
  }
}

void ReplicaSet::lose_power(int i) {
  Replica& r = replicas_[i];
  if (!SimDisk::crashed()) SimDisk::crash_dir(r.dir, world_.rng());
  // Torn down as the power left it: the store's close writes nothing durable.
  r.driver.reset();
  r.handler.reset();
  r.store.reset();
  const SimDisk::Counters before = SimDisk::counters();
  SimDisk::revive();
  const SimDisk::Counters after = SimDisk::counters();
  ++power_losses_;
  unsynced_writes_lost_ += after.writes_lost + after.writes_cut - before.writes_lost - before.writes_cut;
  // A crash (this one, or the armed one it replaced) disarms every other.
  for (Replica& other : replicas_) other.crash_armed = false;
}

void ReplicaSet::crash_in_next_commit(int i, uint64_t writes) {
  if (!options_.lmdb) return crash(i);
  for (Replica& other : replicas_) other.crash_armed = false;
  replicas_[i].crash_armed = true;
  SimDisk::crash_dir_after(replicas_[i].dir, writes, world_.rng());
  world_.record("replica " + std::to_string(i) + " loses power at write or sync " + std::to_string(writes) +
                " from now");
}

bool ReplicaSet::restart(int i) {
  Replica& r = replicas_[i];
  if (options_.lmdb) {
    auto opened = replica::LmdbStore::open(r.dir, kLmdbOptions);
    if (!opened.is_ok()) {
      why_ = "replica " + std::to_string(i) + "'s store does not open after a crash: " + opened.status().to_string();
      return false;
    }
    r.store = std::move(opened).value();
  }
  r.up = true;
  r.clock = std::make_unique<HybridClock>(*r.physical);
  std::optional<replica::ReplicaAuth> auth = options_.auth;
  if (auth) auth->replica_id = static_cast<uint64_t>(i) + 1;  // each replica its own id, as its directory would
  if (auth) auth->spare = options_.spares_from >= 0 && i >= options_.spares_from;
  r.handler = std::make_unique<replica::ReplicaHandler>(*r.store, *r.clock, std::move(auth),
                                                        replica::FeedOptions{.log = ++feeds_started_});
  if (!r.host) r.host = std::make_unique<Host>(*this, i);
  r.driver = std::make_unique<replica::ReplicaDriver>(
      *r.handler, *r.clock, *r.host,
      replica::ReplicaDriverOptions{.broken_trust_everyone = options_.trust_everyone,
                                    .broken_ack_writes_without_storing = options_.first_acks_without_storing && i == 0,
                                    .broken_forget_dropped = options_.forget_dropped,
                                    .broken_hide_pending = options_.hide_pending,
                                    .broken_pending_as_committed = options_.pending_as_committed});
  return true;
}

bool ReplicaSet::corrupt(int i, const std::string& key) {
  Replica& r = replicas_[i];
  if (r.disk == nullptr) return false;
  if (!options_.skip_checksum) return r.disk->corrupt(key);
  // Unchecked, the flip shows in the value served: of the newest version that has one.
  auto stored = r.disk->get(key);
  if (!stored.is_ok()) return false;
  for (const wire::Version& v : stored.value()) {
    if (v.tombstone || v.value.empty()) continue;
    r.flipped[key] = v;
    return true;
  }
  return false;
}

bool ReplicaSet::holds_corrupt(int i, const std::string& key) {
  Replica& r = replicas_[i];
  if (r.disk == nullptr) return false;
  auto stored = r.disk->get(key);
  if (!stored.is_ok()) return stored.code() == Code::kCorrupt;
  auto it = r.flipped.find(key);
  if (it == r.flipped.end()) return false;
  for (const wire::Version& v : stored.value()) {
    if (wire::same_write(v, it->second)) return true;
  }
  return false;
}

int ReplicaSet::corrupt_copies(const std::string& key) {
  int n = 0;
  for (int i = 0; i < size(); ++i) n += holds_corrupt(i, key) ? 1 : 0;
  return n;
}

bool ReplicaSet::restart_all() {
  bool all = true;
  for (int i = 0; i < size(); ++i) {
    if (!replicas_[i].up) all = restart(i) && all;
  }
  return all;
}

}  // namespace palisade::sim
