// The quorum simulation's watchers (QuorumSimOptions::watchers): rounds of
// prefix reads through client::WatchState, and the checker that holds what
// they told to the promises of docs/consistency.md "Watches".
#pragma once

#include <cstdint>
#include <map>
#include <set>
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
  // It read every key, or every replica's change feed to its newest: held
  // to "missed a change".
  bool complete = true;
  // It read every replica's change feed to its newest (watcher_feeds, no
  // replica set changes): held to "missed a version" too.
  bool every_version = false;
  // Keys whose versions it holds back after the round (feeds): a version
  // that may prove acknowledged comes first.
  std::set<std::string> held{};
};

// One line per violation; `rounds` in the order each watcher completed them:
//  - "watcher told a version never written": no write of the key with that
//    timestamp and content;
//  - "watcher told a refused write": every such write was answered fenced,
//    stale or bad_sequencer;
//  - "watcher went back in time": a key told at an older version than before,
//    or the same version twice;
//  - "watcher missed a change": after a complete round, a key's last told
//    version is older than the newest write of it acknowledged before the
//    round began (a key the round holds back excepted: the last round,
//    after the heal, holds none);
//  - "watcher missed a version": a write acknowledged, begun after the
//    watcher's first round, with a round that read every feed after it, was
//    never told, though no newer version of its key was told by a round that
//    began before it was acknowledged, and no replica crashed (its feed
//    lost: `feed_losses`, the times) between the write's start and the end
//    of the first round that read every feed after it was acknowledged.
std::vector<std::string> check_watches(const History& history, const std::vector<WatchRound>& rounds,
                                       const std::vector<uint64_t>& feed_losses = {});

}  // namespace palisade::sim
