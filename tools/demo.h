// `palisade demo`: fencing scenarios of DDIA chapter 9 replayed with real
// palisade-replica processes on loopback, printed as a timeline with a verdict
// for each. Until palisade-lockd exists, the demo itself plays the lock service:
// it hands out strictly increasing fencing tokens.
#pragma once

#include <string>

namespace palisade::tools {

struct DemoOptions {
  std::string replica_binary;  // palisade-replica to start
  bool verbose = false;        // print each replica's log path
};

// Runs every scenario; returns the number of failed verdicts (0: all held).
int run_demo(const DemoOptions& options);

}  // namespace palisade::tools
