// `palisade elect NAME [--value V] -- COMMAND ...`: campaigns in election NAME
// (palisade/election.h) and runs COMMAND while leading, as `palisade lock`
// runs it while holding a lock (cli/held_command.h): the grant in its
// environment, stopped when leadership is lost, and a resignation (the value
// deleted, fenced, and the lock released) when it exits.
// `--leader` prints who leads now; `--observe` prints it and every change
// until interrupted.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <stop_token>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/held_command.h"
#include "cli/signal_relay.h"
#include "palisade/election.h"

namespace palisade::cli {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct ElectFlags : HeldFlags {
  std::string name;
  std::vector<std::string> command;
  std::string value;  // empty: HOSTNAME:PID
  std::string key;  // empty: the name
  bool leader = false;
  bool observe = false;
};

std::string default_value() {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host) + ":" + std::to_string(getpid());
}

// One line: "TOKEN VALUE", "TOKEN" while the leader has stored no value, "none"
// when nobody leads; with -o json {"leader": {"token", "value", "ts"}} or {"leader": null}.
void print_leader(const std::optional<Leader>& leader, const CommonOptions& common) {
  if (common.json()) {
    nlohmann::json out = {{"leader", nullptr}};
    if (leader) {
      out["leader"] = {{"token", leader->token}};
      if (leader->value) {
        out["leader"]["value"] = *leader->value;
        out["leader"]["ts"] = leader->ts.to_string();
      }
    }
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (!leader) {
    std::printf("none\n");
  } else if (leader->value) {
    std::printf("%llu %s\n", static_cast<unsigned long long>(leader->token), leader->value->c_str());
  } else {
    std::printf("%llu\n", static_cast<unsigned long long>(leader->token));
  }
  std::fflush(stdout);
}

// --leader and --observe: no campaign.
int watch(const ElectFlags& flags, const CommonOptions& common, HeldSession& session) {
  Election election(*session.client, *session.store, {.name = flags.name, .key = flags.key, .lock_delay = {}});
  if (flags.leader) {
    auto now = election.leader();
    if (!now.is_ok()) return report_error("elect", now.status());
    print_leader(now.value(), common);
    return now.value() ? kExitOk : kExitNotFound;
  }
  Status ended;
  until_stop_signal([&](std::stop_token stop) {
    ended = election.observe([&](const std::optional<Leader>& leader) { print_leader(leader, common); }, stop);
  });
  return ended.is_ok() ? kExitOk : report_error("elect", ended);
}

int run(const ElectFlags& flags, const CommonOptions& common) {
  if (flags.leader && flags.observe) return report_failure("elect", "give --leader or --observe, not both", kExitUsage);
  const bool watching = flags.leader || flags.observe;
  if (watching && !flags.command.empty()) {
    return report_failure("elect", "--leader and --observe run no COMMAND", kExitUsage);
  }
  if (!watching && flags.command.empty()) {
    return report_failure("elect", "give a COMMAND to run while leading (after --), or --leader or --observe",
                          kExitUsage);
  }
  // Before any thread starts, so that only sigtimedwait takes these.
  HeldCommand held{.verb = "elect",
                   .name = flags.name,
                   .command = flags.command,
                   .env = {},
                   .kill_after = flags.kill_after,
                   .handled = block_held_command_signals()};
  const auto deadline = Clock::now() + flags.wait;
  HeldSession session;
  if (int failed = open_held_session(held.verb, common, flags.ttl, flags.wait, flags.verbose, session)) return failed;
  if (watching) return watch(flags, common, session);

  Election election(*session.client, *session.store,
                    {.name = flags.name, .key = flags.key, .lock_delay = flags.lock_delay});
  const std::string value = flags.value.empty() ? default_value() : flags.value;
  int caught = 0;
  const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()), 0ms);
  auto lease = take_or_stop([&](std::stop_token stop) { return election.campaign(value, left, stop); }, caught);
  if (caught != 0) {
    // Elected at the last moment or not: COMMAND does not run.
    if (lease.is_ok()) (void)election.resign(lease.value());
    return cancelled_by(held, caught);
  }
  if (!lease.is_ok()) return report_error("elect '" + flags.name + "'", lease.status());
  if (flags.verbose) {
    std::fprintf(stderr, "palisade: elect: leading '%s' as '%s' (token %llu, session %llu)\n", flags.name.c_str(),
                 value.c_str(), static_cast<unsigned long long>(lease.value().token()),
                 static_cast<unsigned long long>(session.client->session()));
  }
  held.env = grant_env(lease.value(), session.cluster_file);
  held.env.insert(held.env.end(), {{"PALISADE_ELECTION", flags.name},
                                   {"PALISADE_ELECTION_KEY", election.key()},
                                   {"PALISADE_ELECTION_VALUE", value}});
  return run_held_command(
      held, *session.expired, *session.running, [&] { return election.resign(lease.value()); }, flags.verbose);
}

}  // namespace

void add_elect_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<ElectFlags>();
  auto* elect = app.add_subcommand("elect", "Run COMMAND while leading election NAME; or show who leads");
  elect->add_option("NAME", flags->name, "The election (the lock its candidates campaign for)")->required();
  elect->add_option("COMMAND", flags->command, "The command and its arguments (after --)");
  elect->add_option("--value", flags->value, "What this candidate stores as the leader's value, for others to read")
      ->default_str("HOSTNAME:PID");
  elect->add_option("--key", flags->key, "The key the leader's value is stored at")->default_str("NAME");
  elect->add_flag("--leader", flags->leader, "Print who leads now and exit (5 when nobody does)");
  elect->add_flag("--observe", flags->observe, "Print who leads now and every change until interrupted");
  add_duration_option(elect, "--wait", flags->wait, "How long to campaign (0s: give up at once when another leads)")
      ->default_str("until elected");
  add_held_options(elect, *flags, "leadership");
  elect->add_flag("-v,--verbose", flags->verbose, "Say on stderr when leading, with the token");
  elect->footer(
      "The leader stores its value at the key, fenced by its grant: once a later leader is elected, a\n"
      "deposed leader's writes (its value included) are refused. COMMAND runs with PALISADE_LOCK,\n"
      "PALISADE_TOKEN, PALISADE_SEQUENCER, PALISADE_CLUSTER, PALISADE_ELECTION, PALISADE_ELECTION_KEY and\n"
      "PALISADE_ELECTION_VALUE set; `palisade put` inside it is fenced by the grant, and\n"
      "`palisade check-sequencer` tells a server whether the sequencer it was handed still leads.\n"
      "When COMMAND exits, the leader resigns: its value is deleted and the lock released.\n"
      "--leader and --observe print one line per state: \"TOKEN VALUE\", \"TOKEN\" while the leader has\n"
      "stored no value yet, \"none\" when nobody leads (-o json: {\"leader\": {...}} or {\"leader\": null}).\n"
      "Exit: COMMAND's code; 7 when leadership was lost while COMMAND ran (its group got SIGTERM);\n"
      "6 when --wait ran out; 5 (--leader) when nobody leads; 4 when the cluster is unavailable;\n"
      "126/127 when COMMAND cannot be run / is not found; 128+N when signal N cancelled the campaign.\n"
      "Examples:\n"
      "  palisade elect scheduler --value node-a -- ./run-scheduler\n"
      "  palisade elect scheduler --leader\n"
      "  palisade elect scheduler --observe -o json");
  elect->callback([flags, &common, &exit_code] { exit_code = run(*flags, common); });
}

}  // namespace palisade::cli
