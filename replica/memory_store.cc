#include "replica/memory_store.h"

#include <algorithm>
#include <tuple>

#include "replica/merkle.h"
#include "replica/record.h"

namespace palisade::replica {

std::optional<std::string> MemoryStore::record(std::string_view key) const {
  if (auto it = batch_.records.find(key); it != batch_.records.end()) return it->second;
  if (auto it = durable_.records.find(key); it != durable_.records.end()) return it->second;
  return std::nullopt;
}

Result<Versions> MemoryStore::get(std::string_view key) {
  auto rec = record(key);
  if (!rec) return Versions();
  return decode_record(key, *rec);
}

Result<std::vector<std::string>> MemoryStore::keys_in(std::string_view prefix, std::string_view after, size_t max) {
  std::vector<std::string> out;
  const std::string_view from = std::max(prefix, after);
  // Both layers in order, the batch's erasures hiding durable keys.
  auto d = durable_.records.upper_bound(from);
  auto b = batch_.records.upper_bound(from);
  if (from == prefix && from != after) {
    d = durable_.records.lower_bound(from);
    b = batch_.records.lower_bound(from);
  }
  while (out.size() < max) {
    const bool d_left = d != durable_.records.end() && d->first.starts_with(prefix);
    const bool b_left = b != batch_.records.end() && b->first.starts_with(prefix);
    if (!d_left && !b_left) break;
    if (b_left && (!d_left || b->first <= d->first)) {
      if (d_left && d->first == b->first) ++d;
      if (b->second) out.push_back(b->first);
      ++b;
    } else {
      if (d->second) out.push_back(d->first);
      ++d;
    }
  }
  return out;
}

Result<std::optional<uint64_t>> MemoryStore::key_digest(std::string_view key) {
  auto rec = record(key);
  if (!rec) return std::optional<uint64_t>();
  return std::optional<uint64_t>(key_entry(key, *rec).digest);
}

Result<uint64_t> MemoryStore::fence_floor(std::string_view lock) {
  const std::string* rec = nullptr;
  if (auto it = durable_.floors.find(lock); it != durable_.floors.end()) rec = &it->second;
  if (auto it = batch_.floors.find(lock); it != batch_.floors.end()) rec = &it->second;
  if (rec == nullptr) return uint64_t{0};
  auto floor = decode_floor_record(lock, *rec);
  if (!floor.is_ok()) return floor.status();
  return floor.value().floor;
}

std::vector<std::pair<uint64_t, wire::LeafEntry>> MemoryStore::entries() const {
  std::vector<std::pair<uint64_t, wire::LeafEntry>> out;
  for (const State* state : {&durable_, &batch_}) {
    for (const auto& [key, rec] : state->records) {
      if (state == &durable_ && batch_.records.count(key) != 0) continue;  // the batch's version wins
      if (rec) out.emplace_back(key_position(key), key_entry(key, *rec));
    }
    for (const auto& [lock, rec] : state->floors) {
      if (state == &durable_ && batch_.floors.count(lock) != 0) continue;
      out.emplace_back(floor_position(lock), floor_entry(lock, rec));
    }
  }
  return out;
}

Result<wire::TreeNode> MemoryStore::tree_node(uint32_t level, uint64_t index) {
  wire::TreeNode node;
  for (const auto& [position, e] : entries()) {
    if (wire::tree_node_of(position, level) != index) continue;
    node.digest ^= e.digest;
    if (lone_tombstone(e)) ++node.tombstones;
  }
  return node;
}

Status MemoryStore::list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) {
  auto all = entries();
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.name) < std::tie(b.first, b.second.name);
  });
  for (auto& [position, e] : all) {
    if (wire::tree_node_of(position, wire::kTreeLeafLevel) == leaf) out.push_back(std::move(e));
  }
  return Status::ok();
}

Result<wire::ReplicaStats> MemoryStore::stats(size_t max_floors) {
  wire::ReplicaStats out;
  for (const auto& [position, e] : entries()) {
    if (e.kind == wire::LeafEntry::Kind::kKey) ++out.keys;
  }
  std::map<std::string, std::string, std::less<>> floors = durable_.floors;
  for (const auto& [lock, rec] : batch_.floors) floors[lock] = rec;
  out.floor_count = floors.size();
  for (const auto& [lock, rec] : floors) {
    if (out.floors.size() == max_floors) break;
    auto floor = decode_floor_record(lock, rec);
    if (!floor.is_ok()) return floor.status();
    out.floors.emplace_back(lock, floor.value().floor);
  }
  return out;
}

size_t MemoryStore::stored_bytes() const {
  size_t total = 0;
  for (const auto& [k, r] : durable_.records) total += k.size() + (r ? r->size() : 0);
  for (const auto& [k, r] : batch_.records) total += k.size() + (r ? r->size() : 0);
  return total;
}

Status MemoryStore::apply(const Change& c) {
  std::optional<std::string> rec;
  if (c.put != nullptr && !c.put->empty()) rec = encode_record(c.key, *c.put);
  if (rec && capacity_bytes_ != SIZE_MAX && stored_bytes() + c.key.size() + rec->size() > capacity_bytes_) {
    return Status(Code::kStorageError, "disk full");
  }
  if (c.put != nullptr) batch_.records[std::string(c.key)] = std::move(rec);
  if (c.floor != 0) {
    batch_.floors[std::string(c.lock)] = encode_floor_record(c.lock, {c.floor, std::string(c.floor_sequencer)});
  }
  return Status::ok();
}

Status MemoryStore::commit() {
  if (fail_next_commit_) {
    fail_next_commit_ = false;
    abort();
    return Status(Code::kStorageError, "injected sync failure");
  }
  for (auto& [k, r] : batch_.records) {
    if (r) {
      durable_.records[k] = std::move(*r);
    } else {
      durable_.records.erase(k);
    }
  }
  for (auto& [lock, floor] : batch_.floors) durable_.floors[lock] = floor;
  batch_ = {};
  return Status::ok();
}

bool MemoryStore::corrupt(std::string_view key) {
  auto it = durable_.records.find(key);
  if (it == durable_.records.end() || !it->second || it->second->empty()) return false;
  std::string& rec = *it->second;
  rec[rec.size() / 2] = static_cast<char>(rec[rec.size() / 2] ^ 0x10);
  return true;
}

}  // namespace palisade::replica
