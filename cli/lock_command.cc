// `palisade lock NAME -- COMMAND ...`: runs COMMAND while holding a lock, with
// the grant in its environment (PALISADE_LOCK, PALISADE_TOKEN,
// PALISADE_SEQUENCER, and PALISADE_CLUSTER so that `palisade put` inside it
// writes to the same cluster, fenced). COMMAND runs in a process group of its
// own, which gets the terminal when we have it. When the session expires
// meanwhile, COMMAND's group gets SIGTERM (SIGKILL after --kill-after) and this
// exits with kExitLeaseLost, as it does when the release finds the session
// gone; else it releases the lock and exits with COMMAND's code.
// SIGINT, SIGTERM and SIGHUP are passed on to COMMAND's group, which decides
// (cli/signal_relay.h).
// While COMMAND has not started yet (the lock is not granted) they cancel the
// wait instead: COMMAND never runs and this exits 128 + the signal, like a shell.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stop_token>
#include <thread>

#include "cli/cluster_clients.h"
#include "cli/command.h"
#include "cli/reachable.h"
#include "cli/signal_relay.h"

namespace palisade::cli {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct LockFlags {
  std::string name;
  std::vector<std::string> command;
  std::chrono::milliseconds wait = 24h;  // in effect: until granted
  std::chrono::milliseconds ttl{0};  // 0: the cluster's session lease
  std::chrono::milliseconds lock_delay{0};
  std::chrono::milliseconds kill_after = 10s;
  bool shared = false;
  bool verbose = false;
};

// Forks and execs COMMAND with `env` added, in a process group of its own so
// that a stop (lease lost, a signal passed on) reaches what it started too: a
// shell's children would outlive a signal sent to the shell alone. When
// `palisade` owns the terminal, the group gets it (as a shell's foreground
// job), so COMMAND reads it and gets its keys (Ctrl-C, Ctrl-Z) straight.
// The child's pid (its group's id), or the exit code that says why it could
// not start (126, 127).
struct Child {
  pid_t pid = -1;
  int start_error = 0;
  sigset_t missed{};  // pending at the fork: COMMAND never got them (pass_on)
  int terminal = -1;  // the terminal handed to COMMAND's group, -1 when none
};

// Our terminal when we are its foreground process group, else -1.
int owned_terminal() {
  return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp() ? STDIN_FILENO : -1;
}

Child spawn(const std::vector<std::string>& command, const std::vector<std::pair<std::string, std::string>>& env) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return {.start_error = kExitCannotRun};
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int terminal = owned_terminal();
  const pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    return {.start_error = kExitCannotRun};
  }
  if (pid == 0) {
    // Both sides set the group and hand over the terminal, as a shell does,
    // so neither order of running races. SIGTTOU is blocked (run()) until exec.
    setpgid(0, 0);
    if (terminal >= 0) tcsetpgrp(terminal, getpid());
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvp(argv[0], argv.data());
    const int err = errno;
    (void)!write(report[1], &err, sizeof err);
    _exit(kExitCannotRun);
  }
  setpgid(pid, pid);
  if (terminal >= 0) tcsetpgrp(terminal, pid);
  sigset_t missed;
  sigpending(&missed);
  close(report[1]);
  int err = 0;
  const bool failed = read(report[0], &err, sizeof err) == sizeof err;
  close(report[0]);
  if (!failed) return {.pid = pid, .missed = missed, .terminal = terminal};
  waitpid(pid, nullptr, 0);
  if (terminal >= 0) tcsetpgrp(terminal, getpgrp());
  std::fprintf(stderr, "palisade: lock: cannot run %s: %s\n", command[0].c_str(), std::strerror(err));
  return {.start_error = err == ENOENT ? kExitNotFoundCommand : kExitCannotRun};
}

// Whether any process of COMMAND's group is left (its leader may have exited).
bool group_alive(pid_t group) { return kill(-group, 0) == 0 || errno == EPERM; }

// COMMAND stopped (Ctrl-Z): stop too, as a shell's job does, giving the
// terminal back; resumed (`fg`), hand it over again and resume COMMAND.
void stop_with(const Child& child) {
  if (child.terminal < 0) return;  // not on a terminal: whoever stopped it resumes it
  tcsetpgrp(child.terminal, getpgrp());
  raise(SIGTSTP);
  if (owned_terminal() >= 0) tcsetpgrp(child.terminal, child.pid);
  kill(-child.pid, SIGCONT);
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitFailure;
}

// Acquires the lock; SIGINT, SIGTERM or SIGHUP (blocked, so taken here with
// sigtimedwait) cancel the wait. `caught` is the signal that did, 0 when none.
Result<Lease> acquire_or_stop(LockClient& client, const LockFlags& flags, std::chrono::milliseconds wait,
                              int& caught) {
  std::stop_source stop;
  std::atomic<bool> acquiring{true};
  std::atomic<int> signal_caught{0};
  std::thread watcher([&] {
    const sigset_t stops = stop_signals();
    const timespec tick{0, 100'000'000};
    while (acquiring) {
      const int sig = sigtimedwait(&stops, nullptr, &tick);
      if (sig > 0) {
        signal_caught = sig;
        stop.request_stop();
        return;
      }
    }
  });
  auto lease = client.acquire(flags.name, {.mode = flags.shared ? LockMode::kShared : LockMode::kExclusive,
                                           .wait = wait,
                                           .lock_delay = flags.lock_delay,
                                           .cancel = stop.get_token()});
  acquiring = false;
  watcher.join();
  caught = signal_caught;
  return lease;
}

int run(const LockFlags& flags, const CommonOptions& common) {
  // Before any thread starts, so that only sigtimedwait below takes these.
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  sigset_t blocked = handled;
  sigaddset(&blocked, SIGTTOU);  // tcsetpgrp() from the background, as COMMAND ends
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);

  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error("lock", loaded.status());
  // Nothing listening is known at once; else --wait bounds the whole wait,
  // finding a master included.
  const ClusterConfig& cluster = loaded.value().config;
  std::vector<std::string> nodes;
  for (const LockdNode& n : cluster.lockd) nodes.push_back(n.endpoint);
  if (Status s = enough_listening(nodes, nodes.size() / 2 + 1, "lock group nodes"); !s.is_ok()) {
    return report_error("lock", s);
  }
  const auto deadline = Clock::now() + flags.wait;
  auto store = open_store(loaded.value());
  if (!store.is_ok()) return report_error("lock", store.status());
  const ReplicaSetInUse set = store.value()->replica_set();  // the lock group's, once it records one
  if (Status s = enough_listening(set.replicas, set.write_quorum, "replicas"); !s.is_ok()) {
    return report_error("lock", s);
  }
  auto expired = std::make_shared<std::atomic<bool>>(false);
  // Jeopardy matters to a user while COMMAND runs under the lock; while
  // waiting (a master failover passes through it) only with -v.
  auto running = std::make_shared<std::atomic<bool>>(false);
  LockClientOptions options = lock_client_options(loaded.value());
  options.session_ttl = flags.ttl;
  options.store = store.value().get();  // the acquire fences a write quorum of replicas before it returns
  options.on_event = [expired, running, verbose = flags.verbose](SessionEvent e) {
    if (e == SessionEvent::kExpired) expired->store(true);
    if (!running->load() && !verbose) return;
    if (e == SessionEvent::kJeopardy) {
      std::fprintf(stderr, running->load() ? "palisade: lock: session in jeopardy: no KeepAlive answer within its "
                                             "lease; the command is stopped if the session expires\n"
                                           : "palisade: lock: session in jeopardy while waiting: no KeepAlive "
                                             "answer within its lease\n");
    }
    if (e == SessionEvent::kSafe) std::fprintf(stderr, "palisade: lock: session safe again\n");
  };
  auto client = LockClient::connect(options, std::clamp(flags.wait, std::chrono::milliseconds(1000),
                                                       std::chrono::milliseconds(10000)));
  if (!client.is_ok()) {
    // The library and the lock group name the lease by their fields; a user gave --ttl.
    std::string message = client.status().message();
    for (const char* field : {"session_ttl ", "lease_ms "}) {
      if (message.rfind(field, 0) == 0) message = "--ttl " + format_duration(flags.ttl) + " (" + message + ")";
    }
    return report_error("lock", Status(client.status().code(), message));
  }
  int caught = 0;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  auto lease = acquire_or_stop(*client.value(), flags, std::max(left, std::chrono::milliseconds(0)), caught);
  // Granted at the last moment or not: COMMAND does not run.
  auto cancel = [&](int sig) {
    if (lease.is_ok()) (void)client.value()->release(lease.value());
    std::fprintf(stderr, "palisade: lock: %s while waiting for '%s': not running the command\n", strsignal(sig),
                 flags.name.c_str());
    return 128 + sig;
  };
  if (caught != 0) return cancel(caught);
  if (!lease.is_ok()) return report_error("lock '" + flags.name + "'", lease.status());
  if (flags.verbose) {
    std::fprintf(stderr, "palisade: lock: holding '%s' (token %llu, session %llu)\n", flags.name.c_str(),
                 static_cast<unsigned long long>(lease.value().token()),
                 static_cast<unsigned long long>(client.value()->session()));
  }

  const std::string cluster_file = std::filesystem::absolute(loaded.value().config.path).string();
  const std::vector<std::pair<std::string, std::string>> env = {
      {"PALISADE_LOCK", flags.name},
      {"PALISADE_TOKEN", std::to_string(lease.value().token())},
      {"PALISADE_SEQUENCER", lease.value().sequencer()},
      {"PALISADE_CLUSTER", cluster_file}};
  // A signal taken since the wait ended reached no COMMAND, and the loop below
  // might not pass it on (Ctrl-C): it cancels, as one during the wait does.
  const sigset_t stops = stop_signals();
  const timespec now{0, 0};
  if (const int sig = sigtimedwait(&stops, nullptr, &now); sig > 0) return cancel(sig);
  running->store(true);
  Child child = spawn(flags.command, env);
  if (child.pid < 0) {
    // Best effort: the start error is what the exit reports, and closing the
    // session (the client's destructor, on return) releases the lock anyway.
    (void)client.value()->release(lease.value());
    return child.start_error;
  }

  std::optional<Clock::time_point> kill_at;
  bool killed = false;
  bool exited = false;
  int wait_status = 0;
  // Until COMMAND has exited and, once stopping it, its whole group has.
  while (!exited || (kill_at && !killed && group_alive(child.pid))) {
    if (!exited && waitpid(child.pid, &wait_status, WNOHANG | WUNTRACED) == child.pid) {
      if (WIFSTOPPED(wait_status)) {
        stop_with(child);
        continue;
      }
      exited = true;
      if (child.terminal >= 0) tcsetpgrp(child.terminal, getpgrp());
      continue;
    }
    if (expired->load() && !kill_at) {
      std::fprintf(stderr, "palisade: lock: lost '%s': the session expired; stopping the command (SIGTERM)\n",
                   flags.name.c_str());
      kill(-child.pid, SIGTERM);
      kill_at = Clock::now() + flags.kill_after;
    }
    if (kill_at && !killed && Clock::now() >= *kill_at) {
      std::fprintf(stderr, "palisade: lock: the command did not exit within %s of SIGTERM; killing it (SIGKILL)\n",
                   format_duration(flags.kill_after).c_str());
      kill(-child.pid, SIGKILL);
      killed = true;
    }
    const timespec tick{0, 100'000'000};
    siginfo_t info{};
    if (sigtimedwait(&handled, &info, &tick) > 0 && !exited && pass_on(info, child.pid, child.missed)) {
      kill(-child.pid, info.si_signo);  // the command decides, with all it started
    }
  }
  if (kill_at) return kExitLeaseLost;  // said so as it stopped COMMAND
  if (expired->load()) {
    std::fprintf(stderr, "palisade: lock: lost '%s' while the command ran: the session expired\n", flags.name.c_str());
    return kExitLeaseLost;
  }
  // The session may have expired unseen (this process was paused past its
  // lease while COMMAND ran): the lock group says so now.
  if (Status s = client.value()->release(lease.value()); !s.is_ok()) {
    if (s.code() == Code::kNoSession || expired->load()) {
      std::fprintf(stderr, "palisade: lock: lost '%s' while the command ran: %s\n", flags.name.c_str(),
                   s.to_string().c_str());
      return kExitLeaseLost;
    }
    if (flags.verbose) std::fprintf(stderr, "palisade: lock: release: %s\n", s.to_string().c_str());
  }
  return exit_code_of(wait_status);
}

}  // namespace

void add_lock_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<LockFlags>();
  auto* lock = app.add_subcommand("lock", "Run COMMAND while holding lock NAME; exit with COMMAND's code");
  lock->add_option("NAME", flags->name, "The lock")->required();
  lock->add_option("COMMAND", flags->command, "The command and its arguments (after --)")->required();
  add_duration_option(lock, "--wait", flags->wait, "How long to wait for the lock (0s: fail at once when held)")
      ->default_str("until granted");
  add_duration_option(lock, "--ttl", flags->ttl, /*allow_zero=*/false,
                      "The session's lease: how long the lock outlives this process's last KeepAlive (1s..10m)")
      ->default_str("the cluster's session_lease_ms");
  add_duration_option(lock, "--lock-delay", flags->lock_delay,
                      "Keep the lock from others this long should our session expire holding it (at most 1m)");
  add_duration_option(lock, "--kill-after", flags->kill_after,
                      "After a lost lease, SIGKILL the command if it has not exited this long after SIGTERM");
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
