// The replica set a QuorumStore sends to (docs/design.md "The replica set"):
// the one its options list (version 0) at first, then each newer set whose
// config certificate a replica hands back (stale_config) and the store can
// check. Sans-I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "palisade/credentials.h"
#include "palisade/quorum_store.h"
#include "palisade/status.h"

namespace palisade::client {

struct ReplicaView {
  uint64_t version = 0;
  std::string certificate{};  // the set's config certificate; empty at version 0
  std::vector<std::string> endpoints{};
  int read_quorum = 0;
  int write_quorum = 0;
  std::optional<Credentials> credentials{};  // with a server key for every endpoint
  // The set is paused (a change of the set): its replicas refuse writes and
  // fences, and reads wait, until the next set (CoordinatorOptions::paused).
  bool paused = false;
};

// Whether `signature` is the lock group's over `message`; null: no check.
using SignatureCheck = std::function<bool(std::string_view message, std::string_view signature)>;

// The view `certificate` gives after `current`. Stale when it is not newer
// (of equal version, when `current` has no replicas: a store that lists none
// takes the lock group's signed copy of the cluster file's list, version 0).
// BadRequest, saying why, when the store cannot take it: it is not the lock
// group's (the check fails, or there is no check and the store uses CURVE: a
// secure store takes no unchecked certificate), its record does not decode,
// its quorums break the store's rules (R + W > N, W > N / 2), or a replica
// has no CURVE key on a store that uses CURVE.
Result<ReplicaView> next_view(const ReplicaView& current, std::string_view certificate, const SignatureCheck& check);

// The newest view that `certificates` give after `current`, taken in order
// (each checked as next_view does); `current` when none is newer and checks out.
ReplicaView newest_view(ReplicaView current, const std::vector<std::string>& certificates, const SignatureCheck& check);

// The answer to a write that moved to a newer replica set and was sent again
// there (with a new timestamp), from its last attempt's: `fenced` and `stale`
// rule out that attempt alone. An earlier one may have reached W replicas of
// the old set, and readers may return it (docs/consistency.md "After
// unavailable or timeout"), so the write answers `unavailable`, with the
// floor; any other answer stands.
WriteResult answer_of_resent_write(WriteResult last);

}  // namespace palisade::client
