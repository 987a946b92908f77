#include "lockgroup/paxos_storage.h"

namespace palisade::lockgroup {

void PaxosStorage::set_promised(Ballot ballot) {
  pending_.promised = ballot;
  pending_.any = true;
}

void PaxosStorage::set_first_members(const Members& members) {
  pending_.first_members = members;
  pending_.any = true;
}

void PaxosStorage::put_accepted(const Entry& entry) {
  if (pending_.snapshot_slot && entry.slot <= *pending_.snapshot_slot) return;
  pending_.accepted[entry.slot] = entry;
  pending_.any = true;
}

void PaxosStorage::put_snapshot(Slot slot, const std::string& snapshot) {
  pending_.snapshot_slot = slot;
  pending_.snapshot = snapshot;
  pending_.accepted.erase(pending_.accepted.begin(), pending_.accepted.upper_bound(slot));
  pending_.any = true;
}

}  // namespace palisade::lockgroup
