// `palisade demo`: the fencing scenarios of DDIA chapter 9 replayed on a
// private local cluster (three palisade-lockd, three palisade-replica) with
// real processes: the old lock holder is a `palisade demo-holder` process that
// the demo stops with SIGSTOP, resumes, and whose traffic it holds back in a
// delaying proxy. It prints a timeline with a verdict for each scenario.
#pragma once

#include <string>

namespace palisade::cli {

struct DemoOptions {
  std::string replica_binary;   // empty: beside this program
  std::string lockd_binary;     // empty: beside this program
  std::string palisade_binary;  // runs the holders; empty: this program
  bool verbose = false;         // print where the cluster and its logs are
};

// Runs every scenario; returns the number of failed verdicts (0: all held).
int run_demo(const DemoOptions& options);

}  // namespace palisade::cli
