// Running COMMAND while a lease is held: what `palisade lock` and `palisade
// elect` share. COMMAND runs in a process group of its own, which gets the
// terminal when we have it, with the grant in its environment. When the
// session expires meanwhile, COMMAND's group gets SIGTERM (SIGKILL after
// kill_after) and the run ends with kExitLeaseLost, as it does when letting
// go finds the session gone; else it lets go (a release, a resignation) and
// ends with COMMAND's code. SIGINT, SIGTERM and SIGHUP are passed on to
// COMMAND's group (cli/signal_relay.h); before COMMAND starts they cancel
// instead: COMMAND never runs and the exit is 128 + the signal, like a shell.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "palisade/lease.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "palisade/status.h"

namespace palisade::cli {

// The flags `lock` and `elect` share (--wait is each one's own).
struct HeldFlags {
  std::chrono::milliseconds wait{std::chrono::hours(24)};  // in effect: until granted
  std::chrono::milliseconds ttl{0};  // 0: the cluster's session lease
  std::chrono::milliseconds lock_delay{0};
  std::chrono::milliseconds kill_after{10000};
  bool verbose = false;
};
// Adds --ttl, --lock-delay and --kill-after; `held` says what is held ("the
// lock", "leadership").
void add_held_options(CLI::App* app, HeldFlags& flags, const std::string& held);
// PALISADE_LOCK, PALISADE_TOKEN, PALISADE_SEQUENCER and PALISADE_CLUSTER for COMMAND.
std::vector<std::pair<std::string, std::string>> grant_env(const Lease& lease, const std::string& cluster_file);

// The store and the session a lease is held with.
struct HeldSession {
  std::unique_ptr<QuorumStore> store;
  std::unique_ptr<LockClient> client;  // its acquires fence `store`
  std::shared_ptr<std::atomic<bool>> expired = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<std::atomic<bool>> running = std::make_shared<std::atomic<bool>>(false);
  std::string cluster_file;  // absolute: for PALISADE_CLUSTER
};
// Loads the cluster file, checks that a majority of the lock group and a write
// quorum of replicas listen, opens the store and the session (with lease
// `ttl`, 0: the cluster's), within `wait` (clamped to 1..10 s). Jeopardy and
// safety again are said on stderr once COMMAND runs (before, with `verbose`).
// 0, or the exit code of the error it reported.
int open_held_session(const std::string& verb, const CommonOptions& common, std::chrono::milliseconds ttl,
                      std::chrono::milliseconds wait, bool verbose, HeldSession& out);

// Blocks SIGCHLD, SIGINT, SIGTERM, SIGHUP (taken with sigtimedwait from now
// on) and SIGTTOU. Call before any thread starts. The handled set.
sigset_t block_held_command_signals();

// Runs `take` (an acquire, a campaign) with a stop token that SIGINT, SIGTERM
// or SIGHUP request; `caught` is the signal that did, 0 when none.
Result<Lease> take_or_stop(const std::function<Result<Lease>(std::stop_token)>& take, int& caught);

struct HeldCommand {
  std::string verb;  // "lock", "elect": how its messages start
  std::string name;  // what is held, for messages
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> env;  // added to COMMAND's
  std::chrono::milliseconds kill_after{10000};
  sigset_t handled{};  // block_held_command_signals()'s
};

// Runs COMMAND while the lease holds. `expired` turns true (from the session's
// event thread) when the session expires; `running` is set once COMMAND is
// about to start. `let_go` releases at the end (not after a lost lease); a
// no_session from it means the lease was lost unseen (a pause). When a stop
// signal came since the lease was taken, `let_go` runs and COMMAND does not.
int run_held_command(const HeldCommand& held, const std::atomic<bool>& expired, std::atomic<bool>& running,
                     const std::function<Status()>& let_go, bool verbose);

// "palisade: VERB: SIGNAL while waiting for 'NAME': not running the command", 128 + sig.
int cancelled_by(const HeldCommand& held, int sig);

}  // namespace palisade::cli
