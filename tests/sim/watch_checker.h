// The quorum simulation's watchers (QuorumSimOptions::watchers): rounds of
// prefix reads through client::WatchState, and the checker that holds what
// they told to the promises of docs/consistency.md "Watches".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "palisade/timestamp.h"
#include "palisade/watch.h"
#include "tests/sim/history.h"

namespace palisade::sim {

// One round a watcher completed: when it started and ended, what it told,
// and what it knew after it (WatchState::seen, for the deletes a first round
// learns without telling).
struct WatchRound {
  int watcher = 0;
  uint64_t start_ms = 0, end_ms = 0;
  bool first = false;
  std::vector<WatchEvent> events;
  std::map<std::string, FencedTimestamp> seen;
};

// One line per violation; `rounds` in the order each watcher completed them:
//  - "watcher told a version never written": no write of the key with that
//    timestamp and content;
//  - "watcher told a refused write": every such write was answered fenced,
//    stale or bad_sequencer;
//  - "watcher went back in time": a key told at an older version than before,
//    or the same version twice;
//  - "watcher missed a change": after a round, a key's last told version is
//    older than the newest write of it acknowledged before the round began.
std::vector<std::string> check_watches(const History& history, const std::vector<WatchRound>& rounds);

}  // namespace palisade::sim
