// A whole quorum store in one process: replica cores on simulated disks, client
// coordinators with their own clocks, a faulty network, crashes, and a workload
// of lock holders that get superseded and keep writing. Deterministic per seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/sim/history.h"
#include "tests/sim/world.h"

namespace palisade::sim {

struct QuorumSimOptions {
  uint64_t seed = 1;
  int replicas = 3;  // N; W = R = N / 2 + 1
  int clients = 3;
  int keys = 3;
  int ops_per_client = 40;
  NetworkFaults faults;
  double crash_per_second = 0.05;   // chance per simulated second that some replica crashes
  double corrupt_per_second = 0.02; // chance per simulated second that a stored record gets a bit flip
  double pause = 0.05;              // chance a client pauses (like a GC pause) before an operation
  uint64_t pause_ms_max = 60000;
  uint64_t max_clock_offset_ms = 200;  // each node's clock is off by up to this
  // Negative control: replicas that ignore fence floors. The checkers must object.
  bool broken_replicas_skip_fence_floor = false;
  bool keep_trace = false;
};

struct QuorumSimResult {
  std::vector<std::string> violations;
  uint64_t trace_hash = 0;
  std::string trace;  // when keep_trace
  uint64_t events = 0;
  uint64_t writes_ok = 0, writes_fenced = 0, writes_unknown = 0, reads_ok = 0, reads_failed = 0;
  History history;
};

QuorumSimResult run_quorum_sim(const QuorumSimOptions& options);

}  // namespace palisade::sim
