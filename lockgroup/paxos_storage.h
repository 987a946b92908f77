// The durable state of one Paxos acceptor, behind an interface so that the node
// runs on LMDB in palisade-lockd and on a simulated disk in the simulator.
//
// Changes since the last commit() are buffered; commit() makes them durable
// (synced) before it returns ok. A node sends nothing that depends on a change
// before that change is committed: the driver commits after every step, then
// sends the step's messages.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

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
  virtual void set_promised(Ballot ballot) = 0;
  // Records the first members (once: a node's first start).
  virtual void set_first_members(const Members& members) = 0;
  // Replaces whatever the slot held.
  virtual void put_accepted(const Entry& entry) = 0;
  // Stores the snapshot and drops every accepted entry with slot <= `slot`.
  virtual void put_snapshot(Slot slot, const std::string& snapshot) = 0;
  // Makes every change since the last commit durable, or none of them.
  virtual Status commit() = 0;
  // Whether changes are waiting for commit().
  virtual bool dirty() const = 0;
};

}  // namespace palisade::lockgroup
