// palisade: the command line. Each subcommand lives in tools/*_command.cc;
// tools/command.h holds what they share (flags, exit codes, the cluster file).
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "tools/command.h"
#include "tools/demo.h"

int main(int argc, char** argv) {
  using namespace palisade::tools;
  CLI::App app{"palisade: fenced locks and a quorum store that refuses the writes of lost lock holders", "palisade"};
  app.fallthrough();  // --cluster and -o also after the subcommand
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 error, 2 usage, 3 fenced, 4 unavailable, 5 no such key, 6 timeout,\n"
      "7 lease lost (lock), 8 replicas differed (repair). docs/cli.md has a tour.");
  CommonOptions common;
  add_common_options(app, common);
  int exit_code = kExitOk;
  add_cluster_command(app, common, exit_code);
  add_lock_command(app, common, exit_code);
  add_kv_commands(app, common, exit_code);
  add_status_command(app, common, exit_code);
  add_repair_command(app, common, exit_code);

  add_holder_command(app, common, exit_code);

  DemoOptions demo;
  auto* demo_cmd = app.add_subcommand(
      "demo", "Replay the fencing failure scenarios of DDIA chapter 9 on a private local cluster");
  demo_cmd->add_option("--replica-bin", demo.replica_binary, "palisade-replica to run (default: beside palisade)");
  demo_cmd->add_option("--lockd-bin", demo.lockd_binary, "palisade-lockd to run (default: beside palisade)");
  demo_cmd->add_flag("-v,--verbose", demo.verbose, "Say where the cluster file and the daemons' logs are");
  demo_cmd->callback([&] { exit_code = run_demo(demo) == 0 ? kExitOk : kExitFailure; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  } catch (const std::exception& e) {
    // A bug, not an input: still an error message and an exit code, never an abort.
    std::fprintf(stderr, "palisade: internal error: %s\n", e.what());
    return kExitFailure;
  }
  return exit_code;
}
