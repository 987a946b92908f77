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
  // Applies the pending changes to the committed state. After fail_next_commit():
  // StorageError, and the pending changes are dropped (none of them is durable).
  Status commit() override;

  // The process died: the changes not committed are lost.
  void crash() { (void)take_pending(); }
  // The next commit() fails with StorageError and drops the pending changes.
  void fail_next_commit() { fail_next_commit_ = true; }

  // The committed state, without copying it.
  const DurableState& committed() const { return committed_; }
  // How many commit() calls made changes durable (a simulated fsync each).
  uint64_t sync_count() const { return sync_count_; }

 private:
  DurableState committed_;
  bool fail_next_commit_ = false;
  uint64_t sync_count_ = 0;
};

}  // namespace palisade::lockgroup
