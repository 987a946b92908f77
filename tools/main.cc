// palisade: the command line. It parses flags and wires library objects; the
// work lives in tools/*.cc.
#include <CLI/CLI.hpp>

#include "tools/demo.h"
#include "tools/replica_process.h"

int main(int argc, char** argv) {
  CLI::App app{"palisade: fenced locks and a quorum store that refuses the writes of lost lock holders"};
  app.require_subcommand(1);

  palisade::tools::DemoOptions demo;
  demo.replica_binary = palisade::tools::sibling_replica_binary();
  auto* demo_cmd = app.add_subcommand("demo", "Replay the fencing failure scenarios on a private local cluster");
  demo_cmd->add_option("--replica-bin", demo.replica_binary, "palisade-replica to run")->capture_default_str();
  demo_cmd->add_flag("-v,--verbose", demo.verbose, "Show where each replica listens and logs");

  CLI11_PARSE(app, argc, argv);
  if (demo_cmd->parsed()) return palisade::tools::run_demo(demo) == 0 ? 0 : 1;
  return 0;
}
