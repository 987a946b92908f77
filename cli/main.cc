// palisade: the command line. Each subcommand lives in cli/*_command.cc;
// cli/command.h holds what they share (flags, exit codes, the cluster file).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "base/version.h"
#include "cli/command.h"
#include "cli/demo.h"

namespace {

using palisade::cli::OutputFormat;

// Usage errors come before -o is parsed: whether argv asks for JSON.
OutputFormat output_in(int argc, char** argv) {
  OutputFormat format = OutputFormat::kText;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if ((a == "-o" || a == "--output") && i + 1 < argc) {
      format = std::strcmp(argv[i + 1], "json") == 0 ? OutputFormat::kJson : OutputFormat::kText;
    } else if (a == "-ojson" || a == "--output=json") {
      format = OutputFormat::kJson;
    }
  }
  return format;
}

// The first word that is not a flag or the value of --cluster, --key or -o: what the
// user meant as the command.
std::string first_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cluster" || a == "--key" || a == "-o" || a == "--output") {
      ++i;
    } else if (a.empty() || a[0] != '-') {
      return a;
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace palisade::cli;
  CLI::App app{"palisade: fenced locks and a quorum store that refuses the writes of lost lock holders", "palisade"};
  app.fallthrough();  // --cluster and -o also after the subcommand
  app.require_subcommand(1);
  app.set_version_flag("--version", palisade::version_line("palisade"));
  app.footer(
      "Examples:\n"
      "  palisade cluster up                      # a local cluster in the background\n"
      "  palisade put greeting hello\n"
      "  palisade get greeting -o json\n"
      "  palisade lock ledger -- sh -c 'palisade put balance 100'   # a write fenced by the lock\n"
      "  palisade status\n"
      "\n"
      "Exit codes: 0 ok, 1 error, 2 usage, 3 fenced, 4 unavailable, 5 no such key, 6 timeout,\n"
      "7 lease lost (lock), 8 replicas differed (repair), 9 permission denied. docs/cli.md has a tour.");
  CommonOptions common;
  add_common_options(app, common);
  int exit_code = kExitOk;
  add_cluster_command(app, common, exit_code);
  add_lock_command(app, common, exit_code);
  add_elect_command(app, common, exit_code);
  add_kv_commands(app, common, exit_code);
  add_watch_command(app, common, exit_code);
  add_status_command(app, common, exit_code);
  add_repair_command(app, common, exit_code);
  add_keygen_command(app, common, exit_code);
  add_check_sequencer_command(app, common, exit_code);
  add_member_command(app, common, exit_code);

  add_holder_command(app, common, exit_code);

  DemoOptions demo;
  auto* demo_cmd = app.add_subcommand(
      "demo", "Replay the fencing failure scenarios of DDIA chapter 9 on a private local cluster");
  demo_cmd->add_option("--replica-bin", demo.replica_binary, "palisade-replica to run (default: beside palisade)");
  demo_cmd->add_option("--lockd-bin", demo.lockd_binary, "palisade-lockd to run (default: beside palisade)");
  demo_cmd->add_flag("-v,--verbose", demo.verbose, "Say where the cluster file and the daemons' logs are");
  demo_cmd->callback([&] { exit_code = run_demo(demo) == 0 ? kExitOk : kExitFailure; });

  set_error_format(output_in(argc, argv));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string message = e.what();
    if (app.get_subcommands().empty()) {
      const std::string word = first_word(argc, argv);
      std::string commands;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App* s) { return !s->get_group().empty(); })) {
        commands += (commands.empty() ? "" : ", ") + sub->get_name();
      }
      message = (word.empty() ? "no command given" : "unknown command '" + word + "'") + "; the commands are " +
                commands + " (palisade --help)";
    }
    return report_failure("usage", message, kExitUsage);
  } catch (const std::exception& e) {
    // A bug, not an input: still an error message and an exit code, never an abort.
    return report_failure("internal error", e.what(), kExitFailure);
  }
  return exit_code;
}
