// The rules of a change of the replica set (docs/design.md "The replica
// set"): one replica replaced, added or removed at a time, through
// a fill while the set serves, a pause, a fill of the paused set, and the
// new set. `palisade member replace|add|remove --replica` and the
// simulator's operator (tests/sim/replacer.h) both go by them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "antientropy/anti_entropy.h"
#include "palisade/status.h"
#include "wire/replica_set.h"

namespace palisade {

enum class ReplicaChangeKind { kReplace, kAdd, kRemove };
std::string_view change_name(ReplicaChangeKind kind);

struct Quorums {
  uint32_t write = 0;  // W
  uint32_t read = 0;  // R
  friend bool operator==(const Quorums&, const Quorums&) = default;
};

// The quorums of the set after the change, from those of `old`. A field of
// `asked` that is 0 takes its default: W the larger of the old W and a
// majority, R the old R when it still meets W, else the smallest that does.
// BadRequest naming the rule a choice breaks:
// - a replacement keeps W and R;
// - W never falls (the fence floors that refused a superseded holder's
//   writes are on N - W + 1 of the old replicas, and no fill copies floors
//   to the replicas that stay), and an added replica raises it by one at
//   most (the one copy it is given of each version);
// - W and R within 1..N, W a majority, and R + W > N, of the new set.
Result<Quorums> quorums_after(ReplicaChangeKind kind, const wire::ReplicaSet& old, Quorums asked);

// Why a fill of the change does not let it go on, or "" when it does. The
// joining replica (`joining`: a replacement's or an addition's, else empty)
// must answer and take every copy and floor. A paused fill must also leave
// no version undecided, and in a removal every replica that stays
// (`staying`) must answer it and take every copy, for it holds the only
// copies of the versions the leaving replica held.
std::string fill_shortfall(ReplicaChangeKind kind, const Result<AntiEntropyReport>& report, bool paused,
                           const std::string& joining, const std::vector<std::string>& staying);

}  // namespace palisade
