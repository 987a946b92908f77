#include "tests/sim/world.h"

#include "wire/hash.h"

namespace palisade::sim {

World::World(uint64_t seed, bool keep_trace) : rng_(seed), keep_trace_(keep_trace) {}

void World::at(uint64_t delay_ms, std::string what, Action action) {
  queue_.emplace(std::make_pair(now_ms_ + delay_ms, seq_++), Event{std::move(what), std::move(action)});
}

void World::isolate(int node, uint64_t for_ms) {
  isolated_until_[node] = now_ms_ + for_ms;
  record("isolate " + std::to_string(node) + " for " + std::to_string(for_ms) + " ms");
}

void World::send(int from, int to, std::string bytes) {
  if (tap_) tap_(from, to, bytes);
  for (int end : {from, to}) {
    auto it = isolated_until_.find(end);
    if (it != isolated_until_.end() && now_ms_ < it->second) {
      record("cut " + std::to_string(from) + "->" + std::to_string(to));
      return;
    }
  }
  if (chance(faults_.drop)) {
    record("drop " + std::to_string(from) + "->" + std::to_string(to));
    return;
  }
  int copies = chance(faults_.duplicate) ? 2 : 1;
  for (int i = 0; i < copies; ++i) {
    uint64_t delay = chance(faults_.long_delay) ? uniform(0, faults_.long_delay_ms) : uniform(0, faults_.max_delay_ms);
    std::string what = "deliver " + std::to_string(from) + "->" + std::to_string(to) + " #" +
                       std::to_string(hash64(bytes) & 0xffff);
    at(delay, std::move(what), [this, from, to, bytes] {
      auto it = receivers_.find(to);
      if (it != receivers_.end()) it->second(from, bytes);
    });
  }
}

void World::run(uint64_t until_ms) {
  while (!queue_.empty()) {
    auto it = queue_.begin();
    if (it->first.first > until_ms) break;
    now_ms_ = it->first.first;
    Event event = std::move(it->second);
    queue_.erase(it);
    ++events_;
    record(event.what);
    event.action();
  }
}

void World::record(const std::string& line) {
  std::string stamped = std::to_string(now_ms_) + " " + line;
  trace_hash_ = hash64(stamped, trace_hash_);
  if (keep_trace_) trace_ += stamped + "\n";
}

}  // namespace palisade::sim
