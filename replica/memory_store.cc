#include "replica/memory_store.h"

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

Result<uint64_t> MemoryStore::fence_floor(std::string_view lock) {
  if (auto it = batch_.floors.find(lock); it != batch_.floors.end()) return it->second;
  if (auto it = durable_.floors.find(lock); it != durable_.floors.end()) return it->second;
  return uint64_t{0};
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
  if (c.floor != 0) batch_.floors[std::string(c.lock)] = c.floor;
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
