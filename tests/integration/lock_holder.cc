// palisade_lock_holder: a lock holder in a process of its own, for
// lock_group_test (a process the test can SIGSTOP, SIGKILL and SIGCONT).
//
// Connects to the cluster of --cluster with a LockClient and a QuorumStore,
// acquires --lock (the acquire fences a write quorum of replicas), and prints,
// one line each and flushed:
//   session N
//   token N
//   sequencer TEXT
//   ready
// Then waits for SIGUSR1. With --key, it then writes --value to the key with a
// Fence built from the lease's token and sequencer, bypassing lease.valid(), as
// a process paused since its grant would, and prints
//   put CODE floor N
// (CODE a wire code name: ok, fenced, ...) and exits 0. Exit 2 when it cannot
// connect or acquire.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "common/cluster_config.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"

namespace {

using namespace palisade;

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts, so that every thread inherits the mask and
  // sigwait alone takes SIGUSR1.
  sigset_t go;
  sigemptyset(&go);
  sigaddset(&go, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &go, nullptr);

  std::string cluster_file, lock, key, value = "from the lock holder";
  uint64_t lock_delay_ms = 0, wait_ms = 10000;
  CLI::App app{"palisade_lock_holder: holds a lock until SIGUSR1, then writes under its old token"};
  app.add_option("--cluster", cluster_file, "The cluster file")->required();
  app.add_option("--lock", lock, "The lock to acquire")->required();
  app.add_option("--key", key, "The key to write after SIGUSR1 (none: exit without writing)");
  app.add_option("--value", value, "The value to write");
  app.add_option("--lock-delay-ms", lock_delay_ms, "The acquire's lock-delay");
  app.add_option("--wait-ms", wait_ms, "How long the acquire waits for the lock");
  CLI11_PARSE(app, argc, argv);

  auto cluster = load_cluster_file(cluster_file);
  if (!cluster.is_ok()) {
    say("cluster file: " + cluster.status().to_string());
    return 2;
  }
  const ClusterConfig& config = cluster.value();
  QuorumStoreOptions store_options;
  store_options.replicas = config.replicas;
  const int majority = static_cast<int>(config.replicas.size()) / 2 + 1;
  store_options.read_quorum = config.read_quorum != 0 ? config.read_quorum : majority;
  store_options.write_quorum = config.write_quorum != 0 ? config.write_quorum : majority;
  store_options.timeout = std::chrono::milliseconds(5000);  // room for slow syncs on a busy machine
  auto store = QuorumStore::open(store_options);
  if (!store.is_ok()) {
    say("store: " + store.status().to_string());
    return 2;
  }

  LockClientOptions options;
  for (const LockdNode& n : config.lockd) options.nodes.push_back(n.endpoint);
  options.request_timeout = std::chrono::milliseconds(300);
  options.call_timeout = std::chrono::milliseconds(5000);
  options.max_clock_drift_ppm = config.timing.max_clock_drift_ppm;
  options.store = store.value().get();
  auto client = LockClient::connect(options, std::chrono::seconds(10));
  if (!client.is_ok()) {
    say("connect: " + client.status().to_string());
    return 2;
  }
  auto lease = client.value()->acquire(
      lock, {.wait = std::chrono::milliseconds(wait_ms), .lock_delay = std::chrono::milliseconds(lock_delay_ms)});
  if (!lease.is_ok()) {
    say("acquire: " + lease.status().to_string());
    return 2;
  }
  say("session " + std::to_string(client.value()->session()));
  say("token " + std::to_string(lease.value().token()));
  say("sequencer " + lease.value().sequencer());
  say("ready");

  int sig = 0;
  while (sigwait(&go, &sig) != 0 || sig != SIGUSR1) {
  }
  if (key.empty()) return 0;
  // The old grant, as this process knew it before it was paused.
  const Fence fence{lease.value().name(), lease.value().token(), lease.value().sequencer()};
  WriteResult w = store.value()->put(key, value, fence);
  say("put " + std::string(code_name(w.status.code())) + " floor " + std::to_string(w.floor));
  return 0;
}
