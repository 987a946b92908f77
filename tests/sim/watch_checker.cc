#include "tests/sim/watch_checker.h"

#include <algorithm>
#include <set>

namespace palisade::sim {
namespace {

std::string describe(const WatchEvent& e) {
  return std::string(e.kind == WatchEvent::Kind::kPut ? "put" : "delete") + " of '" + e.key + "' " +
         (e.ts == FencedTimestamp{} ? "(version unknown)" : e.ts.to_string()) +
         (e.kind == WatchEvent::Kind::kPut ? " '" + e.value + "'" : "");
}

bool refused(Code c) { return c == Code::kFenced || c == Code::kStale || c == Code::kBadSequencer; }

bool is_write_of(const WriteRecord& w, const WatchEvent& e) {
  const bool put = e.kind == WatchEvent::Kind::kPut;
  if (w.key != e.key || w.tombstone == put || (put && w.value != e.value)) return false;
  if (w.ts == e.ts) return true;
  for (const FencedTimestamp& ts : w.attempts) {
    if (ts == e.ts) return true;
  }
  return false;
}

// "watcher missed a version", per watcher: every write acknowledged after
// its first round ended, once a round that read every feed began after it,
// is told by some round, unless a newer version of its key was told (or
// learnt) by a round that began before it was acknowledged (two writers
// racing, or an unfenced write below a fenced one), or a
// replica crashed between its start and the end of that round (a copy on
// that replica's feed, lost before the watcher read it).
std::vector<std::string> check_every_version(const History& history, const std::vector<WatchRound>& rounds,
                                             const std::vector<uint64_t>& feed_losses) {
  std::vector<std::string> out;
  std::map<int, std::vector<const WatchRound*>> of;
  for (const WatchRound& r : rounds) of[r.watcher].push_back(&r);
  for (const auto& [watcher, mine] : of) {
    auto first = std::find_if(mine.begin(), mine.end(), [](const WatchRound* r) { return r->first; });
    if (first == mine.end()) continue;
    const uint64_t began = (*first)->end_ms;
    for (const WriteRecord& w : history.writes) {
      if (w.result != Code::kOk || w.start_ms <= began) continue;
      // The first round after it that read every feed to its newest: by its
      // end the watcher has read every copy the feeds hold.
      auto after = std::find_if(mine.begin(), mine.end(),
                                [&](const WatchRound* r) { return r->every_version && r->start_ms > w.end_ms; });
      if (after == mine.end()) continue;
      const uint64_t read_by = (*after)->end_ms;
      if (std::any_of(feed_losses.begin(), feed_losses.end(),
                      [&](uint64_t t) { return t >= w.start_ms && t <= read_by; })) {
        continue;
      }
      bool told = false, passed_by = false;
      for (const WatchRound* r : mine) {
        for (const WatchEvent& e : r->events) told = told || is_write_of(w, e);
        // What it knew after a round (told, or learnt: a first round learns
        // deletes without telling them).
        auto known = r->seen.find(w.key);
        passed_by = passed_by || (r->start_ms < w.end_ms && known != r->seen.end() && w.ts < known->second);
      }
      if (!told && !passed_by) {
        out.push_back("watcher missed a version: watcher " + std::to_string(watcher) + ": '" + w.key +
                      "' acknowledged at " + w.ts.to_string() + " (" + std::to_string(w.start_ms) + " to " +
                      std::to_string(w.end_ms) + " ms), never told");
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> check_watches(const History& history, const std::vector<WatchRound>& rounds,
                                       const std::vector<uint64_t>& feed_losses) {
  std::vector<std::string> out;
  std::set<std::string> keys;
  for (const WriteRecord& w : history.writes) keys.insert(w.key);
  std::map<int, std::map<std::string, WatchEvent>> told;  // watcher -> key -> the last told
  std::map<int, std::map<std::string, FencedTimestamp>> learnt;  // the deletes a first round learnt
  for (const WatchRound& r : rounds) {
    const std::string who = ": watcher " + std::to_string(r.watcher) + ", round [" + std::to_string(r.start_ms) + ", " +
                            std::to_string(r.end_ms) + "]: ";
    auto& last = told[r.watcher];
    for (const WatchEvent& e : r.events) {
      if (e.ts != FencedTimestamp{}) {
        bool written = false, taken = false;
        for (const WriteRecord& w : history.writes) {
          if (!is_write_of(w, e)) continue;
          written = true;
          taken = taken || !refused(w.result);
        }
        if (!written) out.push_back("watcher told a version never written" + who + describe(e));
        if (written && !taken) out.push_back("watcher told a refused write" + who + describe(e));
      }
      if (auto before = last.find(e.key); before != last.end()) {
        const WatchEvent& b = before->second;
        const bool same = b.ts == e.ts && b.kind == e.kind && b.value == e.value;
        if ((e.ts != FencedTimestamp{} && e.ts < b.ts) || same) {
          out.push_back("watcher went back in time" + who + describe(e) + " after " + describe(b));
        }
      }
      last[e.key] = e;
    }
    if (r.first) {
      for (const auto& [key, ts] : r.seen) {
        if (!last.contains(key)) learnt[r.watcher][key] = ts;
      }
    }
    for (const std::string& key : keys) {
      if (!r.complete) break;
      if (r.held.contains(key)) continue;
      const WriteRecord* newest = nullptr;
      for (const WriteRecord& w : history.writes) {
        if (w.key == key && w.result == Code::kOk && w.end_ms < r.start_ms && (!newest || w.ts > newest->ts)) {
          newest = &w;
        }
      }
      if (newest == nullptr) continue;
      auto t = last.find(key);
      bool known = false;
      if (t != last.end()) {
        const WatchEvent& e = t->second;
        known = e.ts >= newest->ts ||
                (newest->tombstone && e.kind == WatchEvent::Kind::kDelete && e.ts == FencedTimestamp{});
      } else {  // nothing told: a first round may have learnt a delete as new
        auto l = learnt[r.watcher].find(key);
        known = l != learnt[r.watcher].end() && l->second >= newest->ts;
      }
      if (!known) {
        out.push_back("watcher missed a change" + who + "'" + key + "' acknowledged at " + newest->ts.to_string() +
                      " before the round began, last told " +
                      (t == last.end() ? std::string("nothing") : describe(t->second)));
      }
    }
  }
  for (std::string& v : check_every_version(history, rounds, feed_losses)) out.push_back(std::move(v));
  return out;
}

}  // namespace palisade::sim
