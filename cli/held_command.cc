#include "cli/held_command.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "cli/cluster_clients.h"
#include "cli/command.h"
#include "cli/reachable.h"
#include "cli/signal_relay.h"

namespace palisade::cli {
namespace {

using Clock = std::chrono::steady_clock;

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
int owned_terminal() { return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp() ? STDIN_FILENO : -1; }

Child spawn(const std::string& verb, const std::vector<std::string>& command,
            const std::vector<std::pair<std::string, std::string>>& env) {
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
  std::fprintf(stderr, "palisade: %s: cannot run %s: %s\n", verb.c_str(), command[0].c_str(), std::strerror(err));
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

}  // namespace

void add_held_options(CLI::App* app, HeldFlags& flags, const std::string& held) {
  add_duration_option(app, "--ttl", flags.ttl, /*allow_zero=*/false,
                      "The session's lease: how long " + held + " outlives this process's last KeepAlive (1s..10m)")
      ->default_str("the cluster's session_lease_ms");
  add_duration_option(app, "--lock-delay", flags.lock_delay,
                      "Keep " + held + " from others this long should our session expire holding it (at most 1m)");
  add_duration_option(app, "--kill-after", flags.kill_after,
                      "After a lost lease, SIGKILL the command if it has not exited this long after SIGTERM");
}

std::vector<std::pair<std::string, std::string>> grant_env(const Lease& lease, const std::string& cluster_file) {
  return {{"PALISADE_LOCK", lease.name()},
          {"PALISADE_TOKEN", std::to_string(lease.token())},
          {"PALISADE_SEQUENCER", lease.sequencer()},
          {"PALISADE_CLUSTER", cluster_file}};
}

int open_held_session(const std::string& verb, const CommonOptions& common, std::chrono::milliseconds ttl,
                      std::chrono::milliseconds wait, bool verbose, HeldSession& out) {
  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error(verb, loaded.status());
  // Nothing listening is known at once; else the wait bounds the whole wait,
  // finding a master included.
  const ClusterConfig& cluster = loaded.value().config;
  std::vector<std::string> nodes;
  for (const LockdNode& n : cluster.lockd) nodes.push_back(n.endpoint);
  if (Status s = enough_listening(nodes, nodes.size() / 2 + 1, "lock group nodes"); !s.is_ok()) {
    return report_error(verb, s);
  }
  auto store = open_store(loaded.value());
  if (!store.is_ok()) return report_error(verb, store.status());
  const ReplicaSetInUse set = store.value()->replica_set();  // the lock group's, once it records one
  if (Status s = enough_listening(set.replicas, set.write_quorum, "replicas"); !s.is_ok()) {
    return report_error(verb, s);
  }
  out.store = std::move(store).value();
  out.cluster_file = std::filesystem::absolute(cluster.path).string();
  LockClientOptions options = lock_client_options(loaded.value());
  options.session_ttl = ttl;
  options.store = out.store.get();  // the acquire fences a write quorum of replicas before it returns
  // Jeopardy matters to a user while COMMAND runs under the lease; while
  // waiting (a master failover passes through it) only when verbose.
  options.on_event = [expired = out.expired, running = out.running, verbose, verb](SessionEvent e) {
    if (e == SessionEvent::kExpired) expired->store(true);
    if (!running->load() && !verbose) return;
    if (e == SessionEvent::kJeopardy) {
      std::fprintf(stderr,
                   running->load() ? "palisade: %s: session in jeopardy: no KeepAlive answer within its "
                                     "lease; the command is stopped if the session expires\n"
                                   : "palisade: %s: session in jeopardy while waiting: no KeepAlive "
                                     "answer within its lease\n",
                   verb.c_str());
    }
    if (e == SessionEvent::kSafe) std::fprintf(stderr, "palisade: %s: session safe again\n", verb.c_str());
  };
  auto client =
      LockClient::connect(options, std::clamp(wait, std::chrono::milliseconds(1000), std::chrono::milliseconds(10000)));
  if (!client.is_ok()) {
    // The library and the lock group name the lease by their fields; a user gave --ttl.
    std::string message = client.status().message();
    for (const char* field : {"session_ttl ", "lease_ms "}) {
      if (message.rfind(field, 0) == 0) message = "--ttl " + format_duration(ttl) + " (" + message + ")";
    }
    return report_error(verb, Status(client.status().code(), message));
  }
  out.client = std::move(client).value();
  return 0;
}

sigset_t block_held_command_signals() {
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  sigset_t blocked = handled;
  sigaddset(&blocked, SIGTTOU);  // tcsetpgrp() from the background, as COMMAND ends
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  return handled;
}

Result<Lease> take_or_stop(const std::function<Result<Lease>(std::stop_token)>& take, int& caught) {
  std::stop_source stop;
  std::atomic<bool> taking{true};
  std::atomic<int> signal_caught{0};
  std::thread watcher([&] {
    const sigset_t stops = stop_signals();
    const timespec tick{0, 100'000'000};
    while (taking) {
      const int sig = sigtimedwait(&stops, nullptr, &tick);
      if (sig > 0) {
        signal_caught = sig;
        stop.request_stop();
        return;
      }
    }
  });
  auto lease = take(stop.get_token());
  taking = false;
  watcher.join();
  caught = signal_caught;
  return lease;
}

int cancelled_by(const HeldCommand& held, int sig) {
  std::fprintf(stderr, "palisade: %s: %s while waiting for '%s': not running the command\n", held.verb.c_str(),
               strsignal(sig), held.name.c_str());
  return 128 + sig;
}

int run_held_command(const HeldCommand& held, const std::atomic<bool>& expired, std::atomic<bool>& running,
                     const std::function<Status()>& let_go, bool verbose) {
  const char* verb = held.verb.c_str();
  const char* name = held.name.c_str();
  // A signal taken since the wait ended reached no COMMAND, and the loop below
  // might not pass it on (Ctrl-C): it cancels, as one during the wait does.
  const sigset_t stops = stop_signals();
  const timespec now{0, 0};
  if (const int sig = sigtimedwait(&stops, nullptr, &now); sig > 0) {
    (void)let_go();
    return cancelled_by(held, sig);
  }
  running.store(true);
  Child child = spawn(held.verb, held.command, held.env);
  if (child.pid < 0) {
    // Best effort: the start error is what the exit reports, and closing the
    // session (on return) releases the lock anyway.
    (void)let_go();
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
    if (expired.load() && !kill_at) {
      std::fprintf(stderr, "palisade: %s: lost '%s': the session expired; stopping the command (SIGTERM)\n", verb,
                   name);
      kill(-child.pid, SIGTERM);
      kill_at = Clock::now() + held.kill_after;
    }
    if (kill_at && !killed && Clock::now() >= *kill_at) {
      std::fprintf(stderr, "palisade: %s: the command did not exit within %s of SIGTERM; killing it (SIGKILL)\n", verb,
                   format_duration(held.kill_after).c_str());
      kill(-child.pid, SIGKILL);
      killed = true;
    }
    const timespec tick{0, 100'000'000};
    siginfo_t info{};
    if (sigtimedwait(&held.handled, &info, &tick) > 0 && !exited && pass_on(info, child.pid, child.missed)) {
      kill(-child.pid, info.si_signo);  // the command decides, with all it started
    }
  }
  if (kill_at) return kExitLeaseLost;  // said so as it stopped COMMAND
  if (expired.load()) {
    std::fprintf(stderr, "palisade: %s: lost '%s' while the command ran: the session expired\n", verb, name);
    return kExitLeaseLost;
  }
  // The session may have expired unseen (this process was paused past its
  // lease while COMMAND ran): the lock group says so now.
  if (Status s = let_go(); !s.is_ok()) {
    if (s.code() == Code::kNoSession || expired.load()) {
      std::fprintf(stderr, "palisade: %s: lost '%s' while the command ran: %s\n", verb, name, s.to_string().c_str());
      return kExitLeaseLost;
    }
    if (verbose) std::fprintf(stderr, "palisade: %s: letting go of '%s': %s\n", verb, name, s.to_string().c_str());
  }
  return exit_code_of(wait_status);
}

}  // namespace palisade::cli
