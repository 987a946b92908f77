#include "antientropy/anti_entropy_core.h"

#include <algorithm>
#include <set>
#include <utility>

namespace palisade::client {
namespace {

using wire::LeafEntry;
using wire::TreeNode;
using wire::VersionHead;
using wire::VersionState;

constexpr uint32_t kRangeLevel = 2;  // ranges are the nodes of level 2
constexpr size_t kLeavesPerBatch = 1024;
// A copy_many stops taking copies past this size: well within a request's limit.
constexpr size_t kCopyBudgetBytes = size_t{512} << 10;

int range_of(uint32_t level, uint64_t node) {
  return static_cast<int>(node >> (wire::kTreeFanoutBits * (level - kRangeLevel)));
}

// What one replica holds of a key, from its leaf listing or, fresher, its read.
struct View {
  bool heard = false;
  bool corrupt = false;
  std::vector<VersionHead> heads;
  const std::map<std::string, uint64_t>* floors = nullptr;  // from a read
};

struct Candidate {
  VersionHead head;
  std::set<int> holders, committed;
};

bool head_newer(const VersionHead& a, const VersionHead& b) {
  if (a.ts != b.ts) return a.ts > b.ts;
  return a.hash > b.hash;
}

bool same(const VersionHead& a, const VersionHead& b) { return a.ts == b.ts && a.hash == b.hash; }

// Every distinct version the heard replicas hold, newest first.
std::vector<Candidate> candidates(const std::vector<View>& views) {
  std::vector<Candidate> out;
  for (int r = 0; r < static_cast<int>(views.size()); ++r) {
    for (const VersionHead& h : views[r].heads) {
      auto it = std::find_if(out.begin(), out.end(), [&](const Candidate& c) { return same(c.head, h); });
      if (it == out.end()) it = out.insert(out.end(), Candidate{h, {}, {}});
      it->holders.insert(r);
      if (h.state == VersionState::kCommitted) it->committed.insert(r);
    }
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return head_newer(a.head, b.head); });
  return out;
}

// The version every replica must end up with: the newest one committed
// somewhere or held by W replicas (a reader would return it).
const Candidate* settled(const std::vector<Candidate>& all, int w) {
  for (const Candidate& c : all) {
    if (!c.committed.empty() || static_cast<int>(c.holders.size()) >= w) return &c;
  }
  return nullptr;
}

// The copy of `head` that `v` holds, if any.
const VersionHead* copy_of(const std::vector<VersionHead>& heads, const VersionHead& head) {
  auto it = std::find_if(heads.begin(), heads.end(), [&](const VersionHead& h) { return same(h, head); });
  return it == heads.end() ? nullptr : &*it;
}

const VersionHead* committed_of(const View& v) {
  return !v.heads.empty() && v.heads.back().state == VersionState::kCommitted ? &v.heads.back() : nullptr;
}

// Pending versions newer than the settled one (all, without one) that fewer
// than W replicas hold: failed or in-flight writes.
std::vector<const Candidate*> unsettled(const std::vector<Candidate>& all, const Candidate* settled_version, int w) {
  std::vector<const Candidate*> out;
  for (const Candidate& c : all) {
    if (&c == settled_version) break;
    if (c.committed.empty() && static_cast<int>(c.holders.size()) < w) out.push_back(&c);
  }
  return out;
}

}  // namespace

AntiEntropyCore::AntiEntropyCore(AntiEntropyConfig config)
    : config_(config),
      alive_(everyone(), true),
      queues_(everyone()),
      in_flight_(everyone(), 0),
      reads_waiting_(everyone()),
      copies_waiting_(everyone()),
      single_only_(everyone(), false),
      refusing_(everyone(), false),
      outstanding_(wire::tree_width(kRangeLevel), 0) {
  report_.ranges_total = wire::tree_width(kRangeLevel);
  report_.dry_run = config.dry_run;
  report_.equal = true;
  ask_tree(0, {0}, -1);
}

uint64_t AntiEntropyCore::send(int replica, wire::ReplicaRequestBody body, Kind kind, uint64_t item) {
  uint64_t id = next_id_++;
  pending_[id] = Ticket{kind, item, replica};
  const uint64_t config = is_target(replica) ? config_.target_config : config_.config;
  queues_[replica].push_back(wire::ReplicaRequest{id, std::move(body), config_.cluster_id, config});
  ++queued_;
  return id;
}

bool AntiEntropyCore::done() const {
  auto empty = [](const auto& per_replica) {
    return std::all_of(per_replica.begin(), per_replica.end(), [](const auto& v) { return v.empty(); });
  };
  return pending_.empty() && queued_ == 0 && empty(reads_waiting_) && empty(copies_waiting_);
}

void AntiEntropyCore::flush_many() {
  for (int r = 0; r < everyone(); ++r) {
    std::vector<uint64_t> reads = std::exchange(reads_waiting_[r], {});
    std::vector<CopyItem> copies = std::exchange(copies_waiting_[r], {});
    if (!alive_[r]) {
      for (uint64_t key : reads) on_read(key, r, nullptr);
      for (const CopyItem& c : copies) finish_work(c.range);
      continue;
    }
    if (single_only_[r]) {
      for (uint64_t key : reads) send(r, wire::ReadRequest{keys_.at(key).key}, Kind::kRead, key);
      for (CopyItem& c : copies) {
        const wire::Version& v = c.copy.version;
        send(r,
             wire::WriteRequest{c.copy.key, v.value, v.tombstone, v.ts, v.lock, !c.copy.pending, v.sequencer,
                                c.copy.replaces},
             Kind::kRepair, static_cast<uint64_t>(c.range));
      }
      continue;
    }
    // Copies over corrupt records, and pending copies, go in requests of their
    // own: a replica older than `replaces` or `pending` refuses the whole
    // request (bad_request), and only them.
    auto group = [](const CopyItem& c) { return c.copy.replaces ? 1 : c.copy.pending ? 2 : 0; };
    std::stable_sort(copies.begin(), copies.end(),
                     [&](const CopyItem& a, const CopyItem& b) { return group(a) < group(b); });
    for (size_t at = 0; at < reads.size(); at += wire::kMaxKeysPerReadMany) {
      const uint64_t item = next_item_++;
      ManyBatch& b = many_[item];
      b.keys.assign(reads.begin() + at, reads.begin() + std::min(reads.size(), at + wire::kMaxKeysPerReadMany));
      wire::ReadManyRequest request;
      for (uint64_t key : b.keys) request.keys.push_back(keys_.at(key).key);
      send(r, std::move(request), Kind::kReadMany, item);
    }
    for (size_t at = 0; at < copies.size();) {
      const uint64_t item = next_item_++;
      ManyBatch& b = many_[item];
      wire::CopyManyRequest request;
      size_t bytes = 0;
      const int kind = group(copies[at]);
      for (; at < copies.size() && b.copies.size() < wire::kMaxCopiesPerRequest && bytes < kCopyBudgetBytes &&
             group(copies[at]) == kind;
           ++at) {
        const wire::Copy& c = copies[at].copy;
        bytes += c.key.size() + c.version.value.size() + c.version.lock.size() + c.version.sequencer.size() + 32;
        request.copies.push_back(c);
        b.copies.push_back(std::move(copies[at]));
      }
      send(r, std::move(request), Kind::kCopyMany, item);
    }
  }
}

std::vector<AntiEntropySend> AntiEntropyCore::take_sends() {
  // A replica that dropped out answers its waiting reads at once, which may
  // gather copies for the others: flush until nothing waits.
  while (!std::all_of(reads_waiting_.begin(), reads_waiting_.end(), [](const auto& v) { return v.empty(); }) ||
         !std::all_of(copies_waiting_.begin(), copies_waiting_.end(), [](const auto& v) { return v.empty(); })) {
    flush_many();
  }
  std::vector<AntiEntropySend> out;
  for (int r = 0; r < everyone(); ++r) {
    while (!queues_[r].empty() && in_flight_[r] < config_.window) {
      out.push_back({r, std::move(queues_[r].front())});
      queues_[r].pop_front();
      --queued_;
      ++in_flight_[r];
    }
  }
  return out;
}

void AntiEntropyCore::start_work(int range) {
  if (range >= 0) ++outstanding_[range];
}

void AntiEntropyCore::finish_work(int range) {
  if (range >= 0 && --outstanding_[range] == 0) ++report_.ranges_done;
}

void AntiEntropyCore::finish_ranges(uint32_t level) {
  // A node at or above the range level that needs no descent covers ranges with nothing to do.
  if (level <= kRangeLevel) report_.ranges_done += wire::tree_width(kRangeLevel - level);
}

void AntiEntropyCore::ask_tree(uint32_t level, std::vector<uint64_t> nodes, int range) {
  uint64_t item = next_item_++;
  TreeBatch& b = trees_[item];
  b.level = level;
  b.nodes = std::move(nodes);
  b.range = range;
  b.replies.resize(everyone());
  start_work(range);
  for (int r = 0; r < everyone(); ++r) {
    if (!alive_[r]) continue;
    ++b.waiting;
    send(r, wire::TreeRequest{level, b.nodes}, Kind::kTree, item);
  }
  if (b.waiting == 0) compare_tree(item);
}

void AntiEntropyCore::ask_leaves(std::vector<uint64_t> leaves, int range) {
  uint64_t item = next_item_++;
  LeafBatch& b = leaves_[item];
  b.leaves = std::move(leaves);
  b.range = range;
  b.listed.assign(everyone(), 0);
  b.entries.resize(everyone());
  start_work(range);
  for (int r = 0; r < everyone(); ++r) {
    if (!alive_[r]) continue;
    ++b.waiting;
    send(r, wire::LeafRequest{b.leaves}, Kind::kLeaf, item);
  }
  if (b.waiting == 0) compare_leaves(item);
}

void AntiEntropyCore::on_reply(int replica, const wire::ReplicaReply& reply) {
  auto it = pending_.find(reply.id);
  if (it == pending_.end() || it->second.replica != replica) return;  // late, after the replica dropped out
  Ticket t = it->second;
  pending_.erase(it);
  --in_flight_[replica];
  switch (t.kind) {
    case Kind::kTree: return on_tree(t.item, replica, &reply);
    case Kind::kLeaf: return on_leaf(t.item, replica, &reply);
    case Kind::kRead: return on_read(t.item, replica, &reply);
    case Kind::kRepair:
      on_repair(replica, reply);
      return finish_work(static_cast<int>(t.item));
    case Kind::kReadMany: return on_read_many(t.item, replica, &reply);
    case Kind::kCopyMany: return on_copy_many(t.item, replica, &reply);
  }
}

void AntiEntropyCore::on_unreachable(int replica, uint64_t id) {
  if (pending_.count(id) == 0 || !alive_[replica]) return;
  alive_[replica] = false;
  queued_ -= queues_[replica].size();
  queues_[replica].clear();
  in_flight_[replica] = 0;
  std::vector<Ticket> lost;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.replica == replica) {
      lost.push_back(it->second);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  for (const Ticket& t : lost) {
    switch (t.kind) {
      case Kind::kTree: on_tree(t.item, replica, nullptr); break;
      case Kind::kLeaf: on_leaf(t.item, replica, nullptr); break;
      case Kind::kRead: on_read(t.item, replica, nullptr); break;
      case Kind::kRepair: finish_work(static_cast<int>(t.item)); break;
      case Kind::kReadMany: on_read_many(t.item, replica, nullptr); break;
      case Kind::kCopyMany: on_copy_many(t.item, replica, nullptr); break;
    }
  }
}

void AntiEntropyCore::on_tree(uint64_t item, int replica, const wire::ReplicaReply* reply) {
  TreeBatch& b = trees_.at(item);
  if (reply != nullptr && reply->status.is_ok() && reply->nodes.size() == b.nodes.size()) {
    b.replies[replica] = reply->nodes;
  } else if (reply != nullptr) {
    // A replica that cannot answer tree requests (an old version, a disk
    // error) cannot be compared at all.
    if (report_.first_refusal.empty()) report_.first_refusal = "tree: " + reply->status.to_string();
    alive_[replica] = false;
  }
  if (--b.waiting == 0) compare_tree(item);
}

void AntiEntropyCore::compare_tree(uint64_t item) {
  TreeBatch& b = trees_.at(item);
  const uint32_t child_level = b.level + 1;
  std::map<int, std::vector<uint64_t>> next;  // by range (-1 above the range level)
  for (size_t i = 0; i < b.nodes.size(); ++i) {
    std::optional<TreeNode> first;
    bool differ = false, tombstones = false;
    for (const auto& nodes : b.replies) {
      if (!nodes) continue;
      const TreeNode& n = (*nodes)[i];
      if (first && first->digest != n.digest) differ = true;
      if (!first) first = n;
      tombstones |= n.tombstones > 0;
    }
    const bool descend = differ || (tombstones && config_.gc_grace_ms.has_value());
    if (!descend) {
      finish_ranges(b.level);
      continue;
    }
    if (b.level == wire::kTreeLeafLevel) {
      next[range_of(b.level, b.nodes[i])].push_back(b.nodes[i]);
      continue;
    }
    for (uint64_t c = 0; c < wire::tree_width(1); ++c) {
      uint64_t child = (b.nodes[i] << wire::kTreeFanoutBits) | c;
      next[child_level > kRangeLevel ? range_of(child_level, child) : -1].push_back(child);
    }
  }
  for (auto& [range, nodes] : next) {
    const bool leaves = b.level == wire::kTreeLeafLevel;
    const size_t chunk = leaves ? kLeavesPerBatch : wire::kMaxTreeNodesPerRequest;
    for (size_t at = 0; at < nodes.size(); at += chunk) {
      std::vector<uint64_t> part(nodes.begin() + at, nodes.begin() + std::min(nodes.size(), at + chunk));
      if (leaves) {
        ask_leaves(std::move(part), range);
      } else {
        ask_tree(child_level, std::move(part), range);
      }
    }
  }
  int range = b.range;
  trees_.erase(item);
  finish_work(range);
}

void AntiEntropyCore::on_leaf(uint64_t item, int replica, const wire::ReplicaReply* reply) {
  LeafBatch& b = leaves_.at(item);
  if (reply != nullptr && reply->status.is_ok() && reply->leaves_done > 0 &&
      b.listed[replica] + reply->leaves_done <= b.leaves.size()) {
    b.listed[replica] += reply->leaves_done;
    auto& into = b.entries[replica];
    into.insert(into.end(), reply->entries.begin(), reply->entries.end());
    if (b.listed[replica] < b.leaves.size()) {  // the rest, in another reply
      send(replica, wire::LeafRequest{{b.leaves.begin() + b.listed[replica], b.leaves.end()}}, Kind::kLeaf, item);
      return;
    }
  } else if (reply != nullptr) {
    if (report_.first_refusal.empty()) report_.first_refusal = "leaf: " + reply->status.to_string();
    alive_[replica] = false;
  }
  if (--b.waiting == 0) compare_leaves(item);
}

void AntiEntropyCore::compare_leaves(uint64_t item) {
  LeafBatch& b = leaves_.at(item);
  std::vector<bool> listed(everyone());
  for (int r = 0; r < everyone(); ++r) listed[r] = alive_[r] && b.listed[r] == b.leaves.size();
  // Per entry, what each replica holds (nullptr: nothing).
  std::map<std::pair<LeafEntry::Kind, std::string>, std::vector<const LeafEntry*>> by_name;
  for (int r = 0; r < everyone(); ++r) {
    if (!listed[r]) continue;
    for (const LeafEntry& e : b.entries[r]) {
      auto& slot = by_name[{e.kind, e.name}];
      slot.resize(everyone(), nullptr);
      slot[r] = &e;
    }
  }
  for (const auto& [name, entries] : by_name) {
    ++report_.keys_compared;
    bool differ = false;
    std::optional<uint64_t> digest;
    for (int r = 0; r < everyone(); ++r) {
      if (!listed[r]) continue;
      uint64_t d = entries[r] != nullptr ? entries[r]->digest : 0;
      if (digest && *digest != d) differ = true;
      digest = d;
    }
    if (differ) {
      ++report_.keys_differing;
      report_.equal = false;
    }
    if (name.first == LeafEntry::Kind::kFloor) {
      if (differ) compare_floor(entries, b.range);
    } else if (differ) {
      uint64_t item = next_item_++;
      KeyTask& t = keys_[item];
      t.key = name.second;
      t.range = b.range;
      t.reads.resize(everyone());
      // A replica that listed the leaf without the key holds nothing of it.
      for (int r = 0; r < everyone(); ++r) {
        if (listed[r]) {
          t.entries.emplace_back(entries[r] != nullptr ? *entries[r] : LeafEntry{});
        } else {
          t.entries.emplace_back(std::nullopt);
        }
      }
      compare_key(item);
    } else if (gc_due(entries, listed)) {
      const VersionHead& h = entries[0]->heads[0];
      ++report_.tombstones_dropped;
      for (int r = 0; r < config_.replicas; ++r) repair(r, b.range, wire::DropTombstoneRequest{name.second, h.ts, h.hash});
    }
  }
  int range = b.range;
  leaves_.erase(item);
  finish_work(range);
}

bool AntiEntropyCore::gc_due(const std::vector<const LeafEntry*>& entries, const std::vector<bool>& listed) const {
  // A run with targets fills them: it drops nothing they are still to get.
  if (!config_.gc_grace_ms || config_.replicas != config_.cluster_size || config_.targets > 0) return false;
  for (int r = 0; r < config_.replicas; ++r) {
    const LeafEntry* e = entries[r];
    if (!listed[r] || e == nullptr || e->heads.size() != 1) return false;
    const VersionHead& h = e->heads[0];
    if (!h.tombstone || h.state != VersionState::kCommitted || !same(h, entries[0]->heads[0])) return false;
  }
  const uint64_t written_ms = hlc::physical_ms(entries[0]->heads[0].ts.hlc);
  return config_.now_wall_ms >= written_ms && config_.now_wall_ms - written_ms >= *config_.gc_grace_ms;
}

void AntiEntropyCore::compare_floor(const std::vector<const LeafEntry*>& entries, int range) {
  const LeafEntry* highest = nullptr;  // of the compared replicas: a target's counts for nothing
  for (int r = 0; r < config_.replicas; ++r) {
    const LeafEntry* e = entries[r];
    if (e != nullptr && (highest == nullptr || e->floor > highest->floor)) highest = e;
  }
  if (highest == nullptr || highest->floor == 0) return;
  // Paused replicas take no fences (a change keeps W from falling, so the
  // floors they hold are enough): only the targets are fenced then.
  for (int r = config_.paused ? config_.replicas : 0; r < everyone(); ++r) {
    if (!alive_[r] || (entries[r] != nullptr && entries[r]->floor >= highest->floor)) continue;
    if (config_.broken_targets_skip_floors && is_target(r)) continue;
    ++report_.floors_raised;
    repair(r, range, wire::FenceRequest{highest->name, highest->floor, highest->sequencer});
  }
}

void AntiEntropyCore::compare_key(uint64_t item) {
  KeyTask& t = keys_.at(item);
  start_work(t.range);
  std::vector<View> views(config_.replicas);  // the compared replicas': what targets hold decides nothing
  for (int r = 0; r < config_.replicas; ++r) {
    if (!t.entries[r]) continue;
    views[r].corrupt = t.entries[r]->corrupt;
    views[r].heard = !views[r].corrupt;
    views[r].heads = t.entries[r]->heads;
  }
  auto all = candidates(views);
  const Candidate* target = settled(all, config_.write_quorum);
  auto open = unsettled(all, target, config_.write_quorum);
  // A corrupt record is replaced only from views taken after its damage was
  // seen: the listings of the others may predate a newer version that it held
  // (written there after they were listed, then damaged). So every replica is
  // read again, now, and the copy names the damage that read reports.
  bool damaged = false;
  for (int r = 0; r < everyone(); ++r) damaged |= t.entries[r] && t.entries[r]->corrupt;
  std::vector<int> ask;
  std::string floor_of;
  if (!open.empty() || (damaged && target != nullptr)) {
    // Deciding about a pending version takes every replica's floor of its lock.
    for (const Candidate* c : open) {
      if (!c->head.lock.empty()) {
        floor_of = c->head.lock;
        break;
      }
    }
    for (int r = 0; r < everyone(); ++r) {
      if (t.entries[r] && alive_[r]) ask.push_back(r);
    }
  } else if (target != nullptr && !config_.dry_run) {
    bool copy = false;
    for (int r = 0; r < everyone(); ++r) {
      copy |= t.entries[r] && alive_[r] && copy_of(t.entries[r]->heads, target->head) == nullptr;
    }
    // The value comes from one holder, committed if possible; never from a
    // corrupt one. Such reads go out together, in read_many requests.
    const std::set<int>& from = target->committed.empty() ? target->holders : target->committed;
    if (copy) {
      ++t.waiting;
      reads_waiting_[*from.begin()].push_back(item);
    }
  }
  for (int r : ask) {
    ++t.waiting;
    send(r, wire::ReadRequest{t.key, floor_of}, Kind::kRead, item);
  }
  if (t.waiting == 0) resolve(item);
}

void AntiEntropyCore::on_read(uint64_t item, int replica, const wire::ReplicaReply* reply) {
  KeyTask& t = keys_.at(item);
  if (reply != nullptr) t.reads[replica] = *reply;
  if (--t.waiting == 0) resolve(item);
}

void AntiEntropyCore::on_read_many(uint64_t item, int replica, const wire::ReplicaReply* reply) {
  ManyBatch b = std::move(many_.at(item));
  many_.erase(item);
  if (reply != nullptr && reply->status.code() == Code::kUnknownType) {
    single_only_[replica] = true;  // a replica older than read_many: ask again, one read per key
    reads_waiting_[replica].insert(reads_waiting_[replica].end(), b.keys.begin(), b.keys.end());
    return;
  }
  if (reply != nullptr && reply->status.is_ok() && reply->keys_done > 0 && reply->keys_done <= b.keys.size() &&
      reply->records.size() == reply->keys_done) {
    for (size_t i = 0; i < reply->keys_done; ++i) {
      const wire::KeyRecord& record = reply->records[i];
      wire::ReplicaReply one;  // what a read of that key alone would have answered
      if (record.corrupt) {
        one.status = Status(Code::kCorrupt, "the record failed its checksum");
      } else {
        one.versions = record.versions;
      }
      on_read(b.keys[i], replica, &one);
    }
    // The rest, in another request.
    reads_waiting_[replica].insert(reads_waiting_[replica].end(), b.keys.begin() + reply->keys_done, b.keys.end());
    return;
  }
  // An error: for every key, as if its own read got it; no answer, or one that
  // makes no sense: as if the key had not been read.
  const bool error = reply != nullptr && !reply->status.is_ok();
  for (uint64_t key : b.keys) on_read(key, replica, error ? reply : nullptr);
}

void AntiEntropyCore::on_copy_many(uint64_t item, int replica, const wire::ReplicaReply* reply) {
  ManyBatch b = std::move(many_.at(item));
  many_.erase(item);
  if (reply != nullptr && reply->status.code() == Code::kUnknownType) {
    single_only_[replica] = true;  // a replica older than copy_many: send them one write each
    for (CopyItem& c : b.copies) copies_waiting_[replica].push_back(std::move(c));
    return;
  }
  if (reply != nullptr && reply->status.is_ok()) {
    refused(replica, reply->refused, reply->first_refusal);
  } else if (reply != nullptr) {
    refused(replica, b.copies.size(), reply->status.to_string());
  } else if (is_target(replica)) {
    refused(replica, b.copies.size(), "no answer");  // a target must get every copy
  }
  for (const CopyItem& c : b.copies) finish_work(c.range);
}

void AntiEntropyCore::copy(int replica, int range, wire::Copy version) {
  if (config_.dry_run) return;
  start_work(range);
  copies_waiting_[replica].push_back({range, std::move(version)});
}

void AntiEntropyCore::repair(int replica, int range, wire::ReplicaRequestBody body) {
  if (config_.dry_run) return;
  start_work(range);
  send(replica, std::move(body), Kind::kRepair, static_cast<uint64_t>(range));
}

void AntiEntropyCore::resolve(uint64_t item) {
  KeyTask& t = keys_.at(item);
  const int w = config_.write_quorum;
  std::vector<View> views(everyone());
  std::vector<const wire::Version*> values;  // full versions from the reads
  for (int r = 0; r < everyone(); ++r) {
    View& v = views[r];
    if (!alive_[r]) continue;  // dropped out since: not heard from
    if (t.reads[r]) {
      const wire::ReplicaReply& read = *t.reads[r];
      v.corrupt = read.status.code() == Code::kCorrupt;
      v.heard = read.status.is_ok();
      for (const wire::Version& version : read.versions) {
        v.heads.push_back(wire::head_of(version));
        values.push_back(&version);
      }
      v.floors = &read.floors;
    } else if (t.entries[r]) {
      v.corrupt = t.entries[r]->corrupt;
      v.heard = !v.corrupt;
      v.heads = t.entries[r]->heads;
    }
  }
  // What the compared replicas hold decides; targets only receive.
  const std::vector<View> compared(views.begin(), views.begin() + config_.replicas);
  const int heard =
      static_cast<int>(std::count_if(compared.begin(), compared.end(), [](const View& v) { return v.heard; }));
  const int not_heard = config_.cluster_size - heard;
  // When the replicas not heard from (down, or holding a corrupt record of
  // the key) could hold all W copies of a version, none heard from shows it:
  // a corrupt record may hold one of its copies, so it is not replaced, and
  // a replacement's paused fill cannot copy it (the replica that leaves may
  // hold its last good copy).
  const bool quorum_hidden = not_heard >= w;
  if (quorum_hidden && config_.paused) {
    ++report_.undecided;
    if (report_.first_undecided.empty()) report_.first_undecided = t.key;
  }
  auto all = candidates(compared);
  const Candidate* target = settled(all, w);
  const std::vector<const Candidate*> open = unsettled(all, target, w);
  // A corrupt record may be one of the copies that make a version
  // acknowledged: a newer pending one that the replicas not heard from (the
  // corrupt one among them) could make up to W, or one they could hold whole.
  // Replacing it with an older version could lose that write: it is kept.
  const bool corrupt_may_count = quorum_hidden || std::any_of(open.begin(), open.end(), [&](const Candidate* c) {
                                   return static_cast<int>(c->holders.size()) + not_heard >= w;
                                 });
  if (target != nullptr) {
    auto value = std::find_if(values.begin(), values.end(), [&](const wire::Version* v) {
      return same(wire::head_of(*v), target->head);
    });
    for (int r = 0; r < everyone(); ++r) {
      const View& v = views[r];
      if (!v.heard && !v.corrupt) continue;
      const VersionHead* held = copy_of(v.heads, target->head);
      if (held != nullptr && held->state == VersionState::kCommitted) continue;
      if (held != nullptr) {
        ++report_.versions_committed;
        repair(r, t.range, wire::CommitRequest{t.key, target->head.ts, target->head.hash});
        continue;
      }
      // A dry run reads no values; else a missing one means the source changed since it was listed.
      // A corrupt record takes only a copy that names the damage its read found
      // (compare_key read every replica after the listing showed it).
      const std::optional<uint64_t> damage = v.corrupt && t.reads[r] ? t.reads[r]->digest : std::nullopt;
      if ((value == values.end() && !config_.dry_run) || (v.corrupt && (!damage || corrupt_may_count))) {
        ++report_.undecided;
        if (report_.first_undecided.empty()) report_.first_undecided = t.key;
        continue;
      }
      ++report_.versions_sent;
      if (v.corrupt) ++report_.corrupt_replaced;
      if (value == values.end()) continue;
      copy(r, t.range, wire::Copy{t.key, **value, damage});
    }
  }
  for (const Candidate* c : open) {
    int could_store = 0;  // heard replicas that do not hold it and would still take it, paused or not
    for (int r = 0; r < config_.replicas; ++r) {
      const View& v = views[r];
      if (!v.heard || c->holders.count(r) != 0) continue;
      uint64_t floor = 0;  // unknown: assume the write could still land there
      if (v.floors != nullptr && !c->head.lock.empty()) {
        auto f = v.floors->find(c->head.lock);
        if (f != v.floors->end()) floor = f->second;
      }
      const VersionHead* committed = committed_of(v);
      if (floor <= c->head.ts.token && (committed == nullptr || head_newer(c->head, *committed))) ++could_store;
    }
    const int copies = static_cast<int>(c->holders.size());
    const int can_store = config_.paused ? 0 : could_store;  // a paused replica stores no more writes
    if (copies + can_store + not_heard < w) {
      // It never had W copies and never will: a failed write, not to be spread.
      ++report_.purged;
      for (int r : c->holders) repair(r, t.range, wire::PurgeRequest{t.key, c->head.ts, c->head.hash});
    } else if (copies + can_store < w) {
      // The replicas not heard from may hold the copies that made it
      // acknowledged. Over paused replicas it can gain no other: a fill
      // completes it on the targets when its writer cannot have been told
      // it failed for good, which takes N - W + 1 final refusals, from
      // replicas that now refuse it or were not heard from. Every replica
      // heard from stores it, pending: a holder that leaves takes its copy
      // along, and a target's copy stands in for it (a removal needs the
      // copies of those that stay). Committed, one copy would pass for W,
      // though the W may never have been (a reader would return it from the
      // target alone, and the next read, without it, go back).
      const int final_refusals = heard - copies - could_store + not_heard;
      auto value = std::find_if(values.begin(), values.end(),
                                [&](const wire::Version* v) { return same(wire::head_of(*v), c->head); });
      if (config_.paused && final_refusals < config_.cluster_size - w + 1 && value != values.end()) {
        ++report_.completed;
        for (int r = 0; r < everyone(); ++r) {
          if (views[r].heard && copy_of(views[r].heads, c->head) == nullptr)
            copy(r, t.range, wire::Copy{.key = t.key, .version = **value, .pending = true});
        }
        continue;
      }
      ++report_.undecided;
      if (report_.first_undecided.empty()) report_.first_undecided = t.key;
    }
  }
  int range = t.range;
  keys_.erase(item);
  finish_work(range);
}

void AntiEntropyCore::on_repair(int replica, const wire::ReplicaReply& reply) {
  if (!reply.status.is_ok()) refused(replica, 1, reply.status.to_string());
}

void AntiEntropyCore::refused(int replica, uint64_t count, const std::string& why) {
  if (count == 0) return;
  refusing_[replica] = true;
  report_.refused += count;
  if (is_target(replica)) report_.target_refused += count;
  if (report_.first_refusal.empty()) report_.first_refusal = why;
}

}  // namespace palisade::client
