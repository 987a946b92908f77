#include "lockgroup/memory_paxos_storage.h"

namespace palisade::lockgroup {

Result<DurableState> MemoryPaxosStorage::load() { return committed_; }

Status MemoryPaxosStorage::commit() {
  Pending changes = take_pending();
  if (fail_next_commit_) {
    fail_next_commit_ = false;
    return Status(Code::kStorageError, "simulated disk refused the commit (disk full)");
  }
  if (!changes.any) return Status::ok();
  if (changes.promised) committed_.promised = *changes.promised;
  if (changes.first_members) committed_.first_members = std::move(changes.first_members);
  if (changes.snapshot_slot) {
    committed_.snapshot_slot = *changes.snapshot_slot;
    committed_.snapshot = std::move(changes.snapshot);
    committed_.accepted.erase(committed_.accepted.begin(), committed_.accepted.upper_bound(committed_.snapshot_slot));
  }
  for (auto& [slot, entry] : changes.accepted) {
    if (slot > committed_.snapshot_slot) committed_.accepted[slot] = std::move(entry);
  }
  ++sync_count_;
  return Status::ok();
}

}  // namespace palisade::lockgroup
