// The durable state of one Paxos acceptor, behind an interface so that the node
// runs on LMDB in palisade-lockd and on a simulated disk in the simulator.
//
// Changes since the last commit() are buffered (here, the same for every
// storage); commit() makes them durable (synced) before it returns ok. A node
// sends nothing that depends on a change before that change is committed: the
// driver commits after every step, then sends the step's messages.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "palisade/status.h"
#include "lockgroup/paxos_messages.h"

namespace palisade::lockgroup {

struct DurableState {
  Ballot promised = 0;
  Slot snapshot_slot = 0;  // the state machine through this slot is `snapshot`
  std::string snapshot;    // empty with snapshot_slot 0: the initial state
  std::map<Slot, Entry> accepted;  // only slots above snapshot_slot
  // The members before any change went through the log, as this node first
  // started with them; nullopt until recorded (a directory older than that).
  std::optional<Members> first_members;
};

class PaxosStorage {
 public:
  virtual ~PaxosStorage() = default;

  // What was committed last (Corrupt or StorageError when it cannot be read).
  virtual Result<DurableState> load() = 0;
  void set_promised(Ballot ballot);
  // Records the first members (once: a node's first start).
  void set_first_members(const Members& members);
  // Replaces whatever the slot held; dropped when the pending snapshot holds the slot.
  void put_accepted(const Entry& entry);
  // Stores the snapshot and drops every accepted entry with slot <= `slot`.
  void put_snapshot(Slot slot, const std::string& snapshot);
  // Makes every change since the last commit durable, or none of them.
  virtual Status commit() = 0;
  // Whether changes are waiting for commit().
  bool dirty() const { return pending_.any; }

 protected:
  // The changes since the last commit.
  struct Pending {
    bool any = false;
    std::optional<Ballot> promised;
    std::optional<Members> first_members;
    std::optional<Slot> snapshot_slot;
    std::string snapshot;
    std::map<Slot, Entry> accepted;  // only slots above snapshot_slot when it is set
  };
  // The changes to commit, leaving none pending.
  Pending take_pending() { return std::exchange(pending_, Pending()); }

 private:
  Pending pending_;
};

}  // namespace palisade::lockgroup
