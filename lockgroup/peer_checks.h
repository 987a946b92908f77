// What the lock service checks in a peer's message before its Paxos node sees
// it: every value is a batch this node could apply, and a catch-up snapshot it
// would install restores and does not take the grant counter back. A peer's
// message is network input: a bug or a forgery there must be refused, never
// found later when a CHECK fires while applying it.
#pragma once

#include "palisade/status.h"
#include "lockgroup/lock_table.h"
#include "lockgroup/paxos_messages.h"

namespace palisade::lockgroup {

// Ok, or BadRequest saying what is wrong. `table` is the state machine as
// applied through `applied`.
Status check_peer_values(const PeerMessage& message, const LockTable& table, Slot applied);

}  // namespace palisade::lockgroup
