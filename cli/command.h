// What every `palisade` subcommand shares: the flags every command takes
// (--cluster, -o), the exit codes, how the cluster file is found, and how a
// Status becomes an exit code and a message. Each subcommand lives in its own
// cli/*_command.cc and registers itself with an add_*_command function:
//
//   void add_get_command(CLI::App& app, const CommonOptions& common, int& exit_code);
//
// which adds the subcommand, its flags and a callback that runs it and stores
// its exit code.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "config/cluster_config.h"
#include "cli/cluster_access.h"
#include "palisade/status.h"

namespace palisade::cli {

// docs/cli.md lists these; scripts rely on them.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,  // any other error (a bad cluster file, a storage error, ...)
  kExitUsage = 2,  // bad flags or arguments
  kExitFenced = 3,  // a write was refused: its lock has a newer holder
  kExitUnavailable = 4,  // too few nodes answered
  kExitNotFound = 5,  // get: no such key
  kExitTimeout = 6,  // no answer in time, or `lock --wait` ran out: the outcome may be unknown
  kExitLeaseLost = 7,  // lock: the lease was lost while COMMAND ran (COMMAND got SIGTERM)
  kExitDiffered = 8,  // repair: replicas differed (repaired; with --dry-run, left as they are)
  kExitPermissionDenied = 9,  // the key's identity may not do this; nothing was done
  kExitNotAsExpected = 10,  // put/del --if-absent/--if-version: the key is not as expected; nothing was written
  kExitCannotRun = 126,  // lock: COMMAND exists but could not be run
  kExitNotFoundCommand = 127,  // lock: COMMAND was not found
};

enum class OutputFormat { kText, kJson };

struct CommonOptions {
  std::string cluster_file;  // --cluster; empty: $PALISADE_CLUSTER, else the local cluster's
  // --key: the key file to connect to a secure cluster with; empty:
  // $PALISADE_KEY, else keys/admin.key beside the cluster file (`cluster up`'s).
  std::string key_file;
  OutputFormat output = OutputFormat::kText;
  bool json() const { return output == OutputFormat::kJson; }
};

// Where `palisade cluster up` keeps a cluster when no --dir is given:
// $PALISADE_HOME, else $XDG_STATE_HOME/palisade, else ~/.local/state/palisade;
// then /local.
std::string default_cluster_dir();
// --cluster, else $PALISADE_CLUSTER, else default_cluster_dir()/cluster.toml.
std::string resolve_cluster_file(const CommonOptions& common);
// Loads the cluster file resolve_cluster_file() names, and on a secure cluster
// the key file (CommonOptions::key_file); the error says which file and how it
// was chosen, and how to start a local cluster or what key to give.
Result<ClusterAccess> load_cluster(const CommonOptions& common);

// Reports a load_cluster() failure: no cluster file is kExitUnavailable (start
// one), a file that cannot be read or is not a cluster file kExitFailure.
int report_cluster_error(std::string_view what, const Status& status);

// The exit code for a failed Status: fenced, unavailable, timeout, usage
// (bad request, too large), else failure.
int exit_code_for(const Status& status);
// Prints "palisade: <what>: <status>" to stderr and returns exit_code_for(status).
// With -o json, one line {"error": {"command", "message", "exit_code"}} instead.
int report_error(std::string_view what, const Status& status);
// As report_error, with a message and exit code of the caller's.
int report_failure(std::string_view what, std::string_view message, int code);
// For errors reported before -o is parsed (usage errors): main() scans argv.
void set_error_format(OutputFormat format);

// "500ms", "2s", "1m", "1h", "1m30s"; a bare number is rejected (say the unit).
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);
// 1500ms -> "1.5s", 60000ms -> "1m", 250ms -> "250ms".
std::string format_duration(std::chrono::milliseconds d);

// A lock group epoch (a Paxos ballot, (round << 8) | node) as people read it:
// "ROUND.NODE", so 259 -> "1.3" (round 1, begun by lockd-3); 0 -> "0" (none yet).
std::string format_epoch(uint64_t epoch);
// The epoch and its two parts, for -o json: {"epoch": 259, "epoch_round": 1, "epoch_node": 3}.
struct EpochParts {
  uint64_t round = 0;
  uint32_t node = 0;
};
EpochParts epoch_parts(uint64_t epoch);

// A flag that takes a duration with its unit, checked by parse_duration.
CLI::Option* add_duration_option(CLI::App* app, const std::string& name, std::chrono::milliseconds& target,
                                 const std::string& description);
// The same, refusing 0 when !allow_zero (a timeout, a lease).
CLI::Option* add_duration_option(CLI::App* app, const std::string& name, std::chrono::milliseconds& target,
                                 bool allow_zero, const std::string& description);
// Refuses a malformed endpoint (base/endpoint.h), naming it: a usage error.
CLI::Validator endpoint_validator();
// --cluster and -o/--output, given before or after the subcommand.
void add_common_options(CLI::App& app, CommonOptions& common);

// The subcommands, each in cli/<name>_command.cc.
void add_cluster_command(CLI::App& app, const CommonOptions& common, int& exit_code);  // cluster up|down|status
// cluster add|remove, under `cluster`.
void add_cluster_node_commands(CLI::App& cluster, const CommonOptions& common, int& exit_code);
// `cluster replace replica-N` (cli/cluster_replace_command.cc).
void add_cluster_replace_command(CLI::App& cluster, const CommonOptions& common, int& exit_code);
void add_kv_commands(CLI::App& app, const CommonOptions& common, int& exit_code);      // put, get, del
void add_lock_command(CLI::App& app, const CommonOptions& common, int& exit_code);
// elect: campaign and run COMMAND while leading, or --leader / --observe (cli/elect_command.cc).
void add_elect_command(CLI::App& app, const CommonOptions& common, int& exit_code);
void add_watch_command(CLI::App& app, const CommonOptions& common, int& exit_code);
void add_status_command(CLI::App& app, const CommonOptions& common, int& exit_code);
void add_holder_command(CLI::App& app, const CommonOptions& common, int& exit_code);   // demo-holder, hidden
// repair: kExitOk when the replicas were already equal, kExitDiffered when they
// differed (repaired, or with --dry-run left as they are), kExitUnavailable when
// a replica could not be reached (after repairing what the others allowed).
void add_repair_command(CLI::App& app, const CommonOptions& common, int& exit_code);
void add_keygen_command(CLI::App& app, const CommonOptions& common, int& exit_code);
// check-sequencer: kExitOk genuine and current, kExitFenced genuine but over,
// kExitUsage (bad_sequencer) not genuine.
void add_check_sequencer_command(CLI::App& app, const CommonOptions& common, int& exit_code);
// member list | add | remove | replace: the lock group's members.
void add_member_command(CLI::App& app, const CommonOptions& common, int& exit_code);

}  // namespace palisade::cli
