// The compare of a conditional write: is the key as the write expects?
// ConditionalStore decides with it, and so does the lock simulation's
// compare-and-set cycle (tests/sim/lock_sim.cc), which runs the same steps
// over the sans-I/O cores.
#pragma once

#include "palisade/conditional.h"
#include "palisade/quorum_store.h"
#include "palisade/status.h"

namespace palisade::client {

// Ok when `current` (a read by the read rules, ok) is as `expect` says;
// else Stale saying what was expected.
Status conditional_compare(const Expect& expect, const ReadResult& current);

}  // namespace palisade::client
