// `palisade demo-holder` (hidden): a lock holder in a process of its own, for
// the demo and the tests, which pause (SIGSTOP), resume and kill it. It
// acquires --lock (the acquire fences a write quorum of replicas) and prints,
// one line each, flushed:
//   session N
//   token N
//   sequencer TEXT
//   ready
// then waits for SIGUSR1. With --key it then writes --value to the key under
// the grant as it knew it, without asking whether its lease is still valid (as
// a process paused between that check and its write would), and prints
//   put CODE floor N
// (CODE a wire code name: ok, fenced, ...). With --reach-all it first waits
// (up to 10 s) until a read reaches every replica, as a client that has just
// woken up reconnects before it writes. With --stay it then waits for
// SIGTERM, keeping its connections open so that a write still queued for a
// replica that was down gets there. Exit 2 when it cannot connect or acquire.
#include <signal.h>

#include <cstdio>
#include <thread>

#include "cli/cluster_clients.h"
#include "cli/command.h"

namespace palisade::cli {
namespace {

struct HolderFlags {
  std::string lock;
  std::string key;
  std::string value = "from the lock holder";
  std::chrono::milliseconds lock_delay{0};
  std::chrono::milliseconds wait{10000};
  std::chrono::milliseconds store_timeout{5000};
  bool reach_all = false;
  bool stay = false;
};

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

void wait_for_signal(int sig) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  int got = 0;
  while (sigwait(&set, &got) != 0 || got != sig) {
  }
}

int run(const HolderFlags& flags, const CommonOptions& common) {
  // Before any thread starts, so that every thread inherits the mask and
  // sigwait alone takes them.
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGUSR1);
  sigaddset(&waited, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &waited, nullptr);

  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) {
    say("cluster file: " + loaded.status().to_string());
    return 2;
  }
  if (flags.reach_all) loaded.value().config.read_quorum = static_cast<int>(loaded.value().config.replicas.size());
  auto store = open_store(loaded.value(), flags.store_timeout);
  if (!store.is_ok()) {
    say("store: " + store.status().to_string());
    return 2;
  }
  LockClientOptions options = lock_client_options(loaded.value());
  options.request_timeout = std::chrono::milliseconds(300);
  options.call_timeout = std::chrono::milliseconds(5000);
  options.store = store.value().get();
  auto client = LockClient::connect(options);
  if (!client.is_ok()) {
    say("connect: " + client.status().to_string());
    return 2;
  }
  auto lease = client.value()->acquire(flags.lock, {.wait = flags.wait, .lock_delay = flags.lock_delay});
  if (!lease.is_ok()) {
    say("acquire: " + lease.status().to_string());
    return 2;
  }
  say("session " + std::to_string(client.value()->session()));
  say("token " + std::to_string(lease.value().token()));
  say("sequencer " + lease.value().sequencer());
  say("ready");

  wait_for_signal(SIGUSR1);
  if (flags.key.empty()) return 0;
  const auto reach_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (flags.reach_all && !store.value()->get("palisade-demo-holder").status.is_ok() &&
         std::chrono::steady_clock::now() < reach_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const Fence fence{lease.value().name(), lease.value().token(), lease.value().sequencer()};
  WriteResult w = store.value()->put(flags.key, flags.value, fence);
  say("put " + std::string(code_name(w.status.code())) + " floor " + std::to_string(w.floor));
  if (flags.stay) wait_for_signal(SIGTERM);
  return 0;
}

}  // namespace

void add_holder_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<HolderFlags>();
  auto* holder = app.add_subcommand("demo-holder", "A lock holder for the demo and tests (SIGUSR1: write)");
  holder->group("");  // hidden from --help
  holder->add_option("--lock", flags->lock, "The lock to acquire")->required();
  holder->add_option("--store-key", flags->key, "The key to write after SIGUSR1 (none: exit without writing)");
  holder->add_option("--value", flags->value, "The value to write");
  add_duration_option(holder, "--lock-delay", flags->lock_delay, "The acquire's lock-delay");
  add_duration_option(holder, "--wait", flags->wait, "How long the acquire waits for the lock");
  add_duration_option(holder, "--store-timeout", flags->store_timeout, "How long the write waits for its quorum");
  holder->add_flag("--reach-all", flags->reach_all, "Before the write, wait until a read reaches every replica");
  holder->add_flag("--stay", flags->stay, "After the write, wait for SIGTERM");
  holder->callback([flags, &common, &exit_code] { exit_code = run(*flags, common); });
}

}  // namespace palisade::cli
