// PaxosStorage in memory, for the simulator and unit tests: a simulated disk.
// What commit() made durable survives crash(); what was not committed does not.
// The disk can be made to refuse one commit (fail_next_commit), as a full disk would.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "lockgroup/paxos_storage.h"

namespace palisade::lockgroup {

class MemoryPaxosStorage final : public PaxosStorage {
 public:
  MemoryPaxosStorage() = default;

  // The committed state (never the pending changes). Never fails.
  Result<DurableState> load() override;
  void set_promised(Ballot ballot) override;
  void set_first_members(const Members& members) override;
  // An entry at or below the snapshot slot is dropped (the snapshot holds it).
  void put_accepted(const Entry& entry) override;
  void put_snapshot(Slot slot, const std::string& snapshot) override;
  // Applies the pending changes to the committed state. After fail_next_commit():
  // StorageError, and the pending changes are dropped (none of them is durable).
  Status commit() override;
  bool dirty() const override { return pending_.any; }

  // The process died: the changes not committed are lost.
  void crash() { pending_ = Pending(); }
  // The next commit() fails with StorageError and drops the pending changes.
  void fail_next_commit() { fail_next_commit_ = true; }

  // The committed state, without copying it.
  const DurableState& committed() const { return committed_; }
  // How many commit() calls made changes durable (a simulated fsync each).
  uint64_t sync_count() const { return sync_count_; }

 private:
  struct Pending {
    bool any = false;
    std::optional<Ballot> promised;
    std::optional<Members> first_members;
    std::optional<Slot> snapshot_slot;
    std::string snapshot;
    std::map<Slot, Entry> accepted;  // only slots above snapshot_slot when it is set
  };

  DurableState committed_;
  Pending pending_;
  bool fail_next_commit_ = false;
  uint64_t sync_count_ = 0;
};

}  // namespace palisade::lockgroup
