// `palisade lock NAME -- COMMAND ...`: runs COMMAND while holding a lock, with
// the grant in its environment (PALISADE_LOCK, PALISADE_TOKEN,
// PALISADE_SEQUENCER, and PALISADE_CLUSTER so that `palisade put` inside it
// writes to the same cluster, fenced). How COMMAND runs, stops when the lease
// is lost, and gets signals: cli/held_command.h.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <stop_token>

#include "cli/command.h"
#include "cli/held_command.h"

namespace palisade::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct LockFlags : HeldFlags {
  std::string name;
  std::vector<std::string> command;
  bool shared = false;
};

int run(const LockFlags& flags, const CommonOptions& common) {
  // Before any thread starts, so that only sigtimedwait below takes these.
  HeldCommand held{.verb = "lock",
                   .name = flags.name,
                   .command = flags.command,
                   .env = {},
                   .kill_after = flags.kill_after,
                   .handled = block_held_command_signals()};

  const auto deadline = Clock::now() + flags.wait;
  HeldSession session;
  if (int failed = open_held_session(held.verb, common, flags.ttl, flags.wait, flags.verbose, session)) return failed;
  LockClient& client = *session.client;
  int caught = 0;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  auto lease = take_or_stop(
      [&](std::stop_token stop) {
        return client.acquire(flags.name, {.mode = flags.shared ? LockMode::kShared : LockMode::kExclusive,
                                           .wait = std::max(left, std::chrono::milliseconds(0)),
                                           .lock_delay = flags.lock_delay,
                                           .cancel = stop});
      },
      caught);
  if (caught != 0) {
    // Granted at the last moment or not: COMMAND does not run.
    if (lease.is_ok()) (void)client.release(lease.value());
    return cancelled_by(held, caught);
  }
  if (!lease.is_ok()) return report_error("lock '" + flags.name + "'", lease.status());
  if (flags.verbose) {
    std::fprintf(stderr, "palisade: lock: holding '%s' (token %llu, session %llu)\n", flags.name.c_str(),
                 static_cast<unsigned long long>(lease.value().token()),
                 static_cast<unsigned long long>(client.session()));
  }

  held.env = grant_env(lease.value(), session.cluster_file);
  return run_held_command(
      held, *session.expired, *session.running, [&] { return client.release(lease.value()); }, flags.verbose);
}

}  // namespace

void add_lock_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<LockFlags>();
  auto* lock = app.add_subcommand("lock", "Run COMMAND while holding lock NAME; exit with COMMAND's code");
  lock->add_option("NAME", flags->name, "The lock")->required();
  lock->add_option("COMMAND", flags->command, "The command and its arguments (after --)")->required();
  add_duration_option(lock, "--wait", flags->wait, "How long to wait for the lock (0s: fail at once when held)")
      ->default_str("until granted");
  add_held_options(lock, *flags, "the lock");
  lock->add_flag("--shared", flags->shared, "A shared (reader) lock instead of an exclusive one; it cannot fence writes");
  lock->add_flag("-v,--verbose", flags->verbose, "Say on stderr what is held, with its token");
  lock->footer(
      "COMMAND runs with PALISADE_LOCK, PALISADE_TOKEN (decimal), PALISADE_SEQUENCER and PALISADE_CLUSTER set,\n"
      "in a process group of its own; `palisade put` and `palisade del` inside it are fenced by the grant\n"
      "(an exclusive one: a --shared grant cannot fence a write, and put refuses its sequencer).\n"
      "SIGINT, SIGTERM and SIGHUP are passed on to COMMAND's group; while the lock is not yet granted\n"
      "they cancel the wait instead.\n"
      "Exit: COMMAND's code; 7 when the lease was lost while COMMAND ran (its group got SIGTERM);\n"
      "6 when --wait ran out;\n"
      "4 when the cluster is unavailable; 126/127 when COMMAND cannot be run / is not found;\n"
      "128+N when signal N cancelled the wait (COMMAND did not run).\n"
      "Examples:\n"
      "  palisade lock ledger -- sh -c 'palisade put balance 100'\n"
      "  palisade lock -v job --ttl 5s --wait 1m -- ./nightly-job.sh\n"
      "  palisade lock readers --shared -- palisade get balance");
  lock->callback([flags, &common, &exit_code] { exit_code = run(*flags, common); });
}

}  // namespace palisade::cli
