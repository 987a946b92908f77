// What a watcher has told, and what the next round tells (palisade/watch.h's
// rules). Sans-I/O: Watcher runs it over its gets and scans, and the quorum
// simulation over the scans of its simulated watchers (tests/sim).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "palisade/timestamp.h"
#include "palisade/watch.h"

namespace palisade::client {

// A key as a round read it by the read rules: its value, or its tombstone.
struct KeyRead {
  bool deleted = false;
  std::string value{};
  FencedTimestamp ts{};
  std::string lock{};
};

class WatchState {
 public:
  // `initial`: the first round tells the keys that have a value (else it
  // only learns them).
  explicit WatchState(bool initial = true) : initial_(initial) {}

  // What a round that read `now` tells: `now` holds every key of the watched
  // range that has a version (a value, or a tombstone replicas keep). A key
  // told before with a value and missing from it is told deleted, version
  // unknown. Per key in the order reads give versions; keys in byte order.
  std::vector<WatchEvent> round(const std::map<std::string, KeyRead>& now);

  // The version last told (or learnt) of each key; {0, 0} for a delete whose
  // version is unknown.
  std::map<std::string, FencedTimestamp> seen() const;
  // Goes on from `seen` (another watcher's): a key read at a version not
  // newer is not told again, and one gone since is told deleted.
  void resume(const std::map<std::string, FencedTimestamp>& seen);

  // Negative control for the simulation's watch checker: a key is told only
  // the first time (its later versions are missed).
  bool broken_tells_new_keys_only = false;

 private:
  struct Told {
    FencedTimestamp ts;
    std::optional<uint64_t> content;  // of the version told; nullopt when resumed or unknown
    bool alive = false;  // told with a value
  };
  bool initial_;
  bool first_ = true;
  std::map<std::string, Told> told_;
};

}  // namespace palisade::client
