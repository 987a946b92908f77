// The simulated world: one clock, one seeded RNG, one event queue, and a network
// that drops, duplicates, delays (sometimes by minutes) and so reorders messages.
// Everything that happens goes through here in a single thread, so a seed fixes
// the whole run, and the trace hash proves it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/random.h"

namespace palisade::sim {

struct NetworkFaults {
  double drop = 0.03;               // probability a message is lost
  double duplicate = 0.02;          // probability it is delivered twice
  uint64_t max_delay_ms = 15;       // ordinary delay: uniform 0..max
  double long_delay = 0.01;         // probability of a long delay instead
  uint64_t long_delay_ms = 120000;  // up to two minutes
};

class World {
 public:
  using Action = std::function<void()>;
  using Receiver = std::function<void(int from, const std::string& bytes)>;

  World(uint64_t seed, bool keep_trace);

  uint64_t now_ms() const { return now_ms_; }
  // Every draw of the simulation comes from here (base/random.h), so a
  // seed gives the same run with any compiler and standard library.
  Random& rng() { return rng_; }
  bool chance(double p) { return rng_.chance(p); }
  uint64_t uniform(uint64_t lo, uint64_t hi) { return rng_.uniform(lo, hi); }
  size_t index(size_t size) { return rng_.index(size); }

  // Runs `action` at now + delay_ms (after everything already due then).
  void at(uint64_t delay_ms, std::string what, Action action);
  // Node `to` receives what is sent to it through `receiver`.
  void attach(int node, Receiver receiver) { receivers_[node] = std::move(receiver); }
  // Sends through the faulty network.
  void send(int from, int to, std::string bytes);
  // `observer` sees every frame sent, as it is sent (before the network loses,
  // duplicates or delays it): an eavesdropper on the wire, which until CurveZMQ
  // encrypts the sockets anyone on the network can be. Draws nothing from the
  // RNG, so a tap changes no run.
  void tap(std::function<void(int from, int to, const std::string& bytes)> observer) { tap_ = std::move(observer); }

  NetworkFaults& faults() { return faults_; }
  // Cuts `node` off from every other node for `for_ms`: what it sends and what
  // is sent to it in that time is lost.
  void isolate(int node, uint64_t for_ms);
  // Runs events until none is left or the clock passes `until_ms`.
  void run(uint64_t until_ms);
  bool idle() const { return queue_.empty(); }
  // When the next event is due; now when none is.
  uint64_t next_event_ms() const { return queue_.empty() ? now_ms_ : queue_.begin()->first.first; }

  // Records a line in the trace; everything recorded feeds the trace hash.
  void record(const std::string& line);
  uint64_t trace_hash() const { return trace_hash_; }
  const std::string& trace() const { return trace_; }
  uint64_t events() const { return events_; }

 private:
  struct Event {
    std::string what;
    Action action;
  };
  uint64_t now_ms_ = 0;
  uint64_t seq_ = 0;
  uint64_t events_ = 0;
  Random rng_;
  std::map<std::pair<uint64_t, uint64_t>, Event> queue_;  // (time, seq) -> event
  std::map<int, Receiver> receivers_;
  std::function<void(int, int, const std::string&)> tap_;
  std::map<int, uint64_t> isolated_until_;
  NetworkFaults faults_;
  bool keep_trace_;
  std::string trace_;
  uint64_t trace_hash_ = 0;
};

}  // namespace palisade::sim
