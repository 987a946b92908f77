#include "cli/demo.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "client/replica_connection.h"
#include "cli/cluster_clients.h"
#include "cli/delay_proxy.h"
#include "cli/holder_process.h"
#include "cli/local_cluster.h"
#include "base/temp_dir.h"

namespace palisade::cli {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The cluster, client B (in this process), the holders, and the timeline.
class Stage {
 public:
  explicit Stage(const DemoOptions& o) : options_(o), start_(Clock::now()) {
    LocalClusterOptions c;
    c.dir = dir_.sub("cluster");
    c.lockd_binary = o.lockd_binary;
    c.replica_binary = o.replica_binary;
    c.timing = short_lease_timing();
    c.group = "demo";
    c.secure = true;  // as `palisade cluster up` starts one
    auto cluster = LocalCluster::start(c);
    if (!cluster.is_ok()) throw std::runtime_error("the cluster did not start: " + cluster.status().to_string());
    cluster_ = std::move(cluster).value();
    say("a local cluster is up: 3 palisade-lockd (master lockd-%u), 3 palisade-replica (N=3, W=2, R=2), %s",
        cluster_->master_id().value_or(0),
        cluster_->credentials() ? "CurveZMQ links with a key per daemon and client" : "plaintext links");
    if (o.verbose) say("cluster file %s; daemon logs beside it", cluster_->cluster_file().c_str());
  }

  template <class... Args>
  void say(const char* format, Args... args) {
    const double s = std::chrono::duration<double>(Clock::now() - start_).count();
    std::printf("  %7.3f s  ", s);
    // Without arguments `format` is plain text: clang's -Wformat-security
    // refuses a non-literal format with nothing to format.
    if constexpr (sizeof...(args) == 0) {
      std::fputs(format, stdout);
    } else {
      std::printf(format, args...);
    }
    std::printf("\n");
    std::fflush(stdout);
  }

  LocalCluster& cluster() { return *cluster_; }

  // Client A: a lock holder in a process of its own, on `cluster_file` (the
  // cluster's own unless A's traffic goes through proxies).
  std::unique_ptr<HolderProcess> holder(const std::string& name, const std::vector<std::string>& args,
                                        std::string cluster_file = "") {
    if (cluster_file.empty()) cluster_file = cluster_->cluster_file();
    const std::string binary = options_.palisade_binary.empty() ? self_binary() : options_.palisade_binary;
    auto h = std::make_unique<HolderProcess>(binary, cluster_file, cluster_->admin_key_file(), args,
                                             dir_.sub(name + ".log"));
    if (!h->wait_for("ready", 20s)) {
      throw std::runtime_error("client " + name + " did not get its lock; its output:\n" + h->process().log());
    }
    return h;
  }

  // Client B, in this process, takes `lock`, waiting for the old holder's
  // session to expire. B goes away with the object (and so stops sending:
  // its store would otherwise keep resending to a replica that was down).
  struct ClientB {
    std::unique_ptr<QuorumStore> store;
    std::unique_ptr<LockClient> locks;  // closed first: it fences through `store`
    Lease lease;
    WriteResult put(const std::string& key, const std::string& value) { return store->put(key, value, lease); }
  };
  std::unique_ptr<ClientB> client_b(const std::string& lock) {
    auto b = std::make_unique<ClientB>();
    auto store = open_store(cluster_->access());
    if (!store.is_ok()) throw std::runtime_error(store.status().to_string());
    b->store = std::move(store).value();
    LockClientOptions lo = lock_client_options(cluster_->access());
    lo.store = b->store.get();
    auto locks = LockClient::connect(lo);
    if (!locks.is_ok()) throw std::runtime_error("client B cannot connect: " + locks.status().to_string());
    b->locks = std::move(locks).value();
    auto lease = b->locks->acquire(lock, {.wait = 20s});
    if (!lease.is_ok()) throw std::runtime_error("B cannot take " + lock + ": " + lease.status().to_string());
    b->lease = std::move(lease).value();
    return b;
  }

  // A reader that asks every replica (and so repairs every one that answered older).
  ReadResult read_all(const std::string& key) {
    QuorumStoreOptions o;
    o.replicas = cluster_->replica_endpoints();
    o.read_quorum = 3;
    o.write_quorum = 2;
    o.credentials = cluster_->credentials();
    auto reader = QuorumStore::open(o);
    if (!reader.is_ok()) throw std::runtime_error(reader.status().to_string());
    return reader.value()->get(key);
  }

  // The newest version replica i stores for `key`, as "(none)", "(deleted)" or the value.
  std::string stored(size_t i, const std::string& key) {
    client::ReplicaConnection conn(cluster_->replica(i).endpoint(), cluster_->credentials());
    auto reply = conn.call({0, wire::ReadRequest{key}}, 2000);
    if (!reply.is_ok() || !reply.value().status.is_ok()) return "(unreachable)";
    const wire::Version* v = reply.value().newest();
    return v == nullptr ? "(none)" : v->tombstone ? "(deleted)" : v->value;
  }
  // Waits until replica i stores `value` for `key`; whether it did within `timeout`.
  bool wait_stored(size_t i, const std::string& key, const std::string& value, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (stored(i, key) != value) {
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

  std::string write_file(const std::string& name, const std::string& text) {
    const std::string path = dir_.sub(name);
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) throw std::runtime_error("cannot write " + path);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    return path;
  }

 private:
  DemoOptions options_;
  Clock::time_point start_;
  TempDir dir_;
  std::unique_ptr<LocalCluster> cluster_;
};

std::string describe(const WriteResult& w) { return w.status.is_ok() ? "ok" : w.status.to_string(); }
std::string describe_put(const std::optional<std::string>& line) {
  return line ? *line : "no answer (the holder printed nothing)";
}
bool fenced(const std::optional<std::string>& put_line) { return put_line && put_line->rfind("fenced", 0) == 0; }
unsigned long long u(uint64_t v) { return v; }

int verdict(Stage& s, bool held, const char* promise) {
  s.say("%s %s", held ? "VERDICT PASS:" : "VERDICT FAIL:", promise);
  return held ? 0 : 1;
}

// 1. A process pause: A is stopped past its lease, B takes over, A wakes and writes.
int process_pause(Stage& s) {
  auto a = s.holder("A1", {"--lock", "ledger", "--store-key", "balance", "--value", "130"});
  s.say("client A (pid %d) takes lock 'ledger': token %llu", a->process().pid(), u(a->token()));
  a->process().signal(SIGSTOP);
  s.say("A is stopped with SIGSTOP (a long GC pause): its KeepAlives stop, its lease runs out");
  auto b = s.client_b("ledger");
  s.say("the lock group expires A's session; client B takes 'ledger': token %llu", u(b->lease.token()));
  s.say("B writes balance=70: %s", describe(b->put("balance", "70")).c_str());
  a->process().signal(SIGCONT);
  a->process().signal(SIGUSR1);
  s.say("A is resumed and, believing it still holds the lock, writes balance=130 with token %llu", u(a->token()));
  const auto put = a->wait_for("put", 15s);
  s.say("A's write: %s", describe_put(put).c_str());
  const ReadResult r = s.read_all("balance");
  s.say("a reader gets balance=%s", r.value.c_str());
  return verdict(s, fenced(put) && r.value == "70", "A's write is refused and the store keeps B's value");
}

// 2. A delayed request: A's write waits in the network until after B's.
int delayed_request(Stage& s) {
  // A reaches every node through a proxy that can hold its traffic back.
  std::vector<std::unique_ptr<DelayProxy>> proxies;
  ClusterConfig via_proxies = s.cluster().config();
  // A daemon keeps its identity behind its proxy: CURVE runs end to end.
  auto via_proxy = [&](std::string& endpoint) {
    const std::string proxied = proxies.emplace_back(std::make_unique<DelayProxy>(endpoint))->endpoint();
    if (auto identity = via_proxies.daemon_identity.extract(endpoint)) {
      via_proxies.daemon_identity[proxied] = identity.mapped();
    }
    endpoint = proxied;
  };
  for (LockdNode& n : via_proxies.lockd) via_proxy(n.endpoint);
  for (std::string& r : via_proxies.replicas) via_proxy(r);
  const std::string a_cluster = s.write_file("cluster-a.toml", format_cluster_config(via_proxies));

  auto a = s.holder("A2", {"--lock", "inventory", "--store-key", "stock", "--value", "5", "--store-timeout", "60s"},
                    a_cluster);
  s.say("client A takes lock 'inventory' through the network: token %llu", u(a->token()));
  for (auto& p : proxies) p->hold();
  s.say("the network starts holding back everything A sends");
  a->process().signal(SIGUSR1);
  s.say("A writes stock=5 with token %llu: the request waits in the network, and so do A's KeepAlives",
        u(a->token()));
  auto b = s.client_b("inventory");
  s.say("the lock group expires A's session; client B takes 'inventory': token %llu", u(b->lease.token()));
  s.say("B writes stock=3: %s", describe(b->put("stock", "3")).c_str());
  for (auto& p : proxies) p->release();
  s.say("the network delivers A's delayed write");
  const auto put = a->wait_for("put", 30s);
  s.say("A's write: %s", describe_put(put).c_str());
  const ReadResult r = s.read_all("stock");
  s.say("a reader gets stock=%s", r.value.c_str());
  return verdict(s, fenced(put) && r.value == "3", "the delayed write is refused and the store keeps B's value");
}

// Stops replica 3 and A, lets B take `lock` (its fence reaches replicas 1 and
// 2 only), run `b_writes` and finish, restarts replica 3, and lets A write.
std::optional<std::string> replica_down_then_late_write(Stage& s, HolderProcess& a, const std::string& lock,
                                                        const std::function<void(Stage::ClientB&)>& b_writes) {
  s.cluster().replica(2).kill();
  s.say("replica 3 is stopped");
  a.process().signal(SIGSTOP);
  s.say("A is stopped with SIGSTOP; its lease runs out");
  auto b = s.client_b(lock);
  s.say("client B takes '%s': token %llu; its fence reaches replicas 1 and 2 only", lock.c_str(),
        u(b->lease.token()));
  b_writes(*b);
  b.reset();
  s.say("client B is done and exits");
  if (Status st = s.cluster().replica(2).start_and_wait(); !st.is_ok()) throw std::runtime_error(st.to_string());
  s.say("replica 3 is back: it missed B's fence");
  a.process().signal(SIGCONT);
  a.process().signal(SIGUSR1);
  s.say("A is resumed and writes with its old token %llu", u(a.token()));
  const auto put = a.wait_for("put", 15s);
  s.say("A's write: %s (replicas 1 and 2 refuse it)", describe_put(put).c_str());
  return put;
}

// 3. DDIA figure 9-7: a replica misses the new holder's fence and write.
int replica_down(Stage& s) {
  auto a =
      s.holder("A3", {"--lock", "owner-lock", "--store-key", "owner", "--value", "A again", "--reach-all", "--stay"});
  s.say("client A takes lock 'owner-lock': token %llu", u(a->token()));
  const auto put = replica_down_then_late_write(s, *a, "owner-lock", [&](Stage::ClientB& b) {
    s.say("B writes owner=B: %s", describe(b.put("owner", "B")).c_str());
  });
  const bool reached = s.wait_stored(2, "owner", "A again", 10s);
  s.say("replica 3 %s", reached ? "took A's write (pending: nothing there says it is superseded)"
                                : "never got A's write");
  const ReadResult r = s.read_all("owner");
  s.say("a reader gets owner=%s, and repairs the replicas that answered older", r.value.c_str());
  const std::string all = s.stored(0, "owner") + "," + s.stored(1, "owner") + "," + s.stored(2, "owner");
  s.say("the replicas hold owner = %s", all.c_str());
  a->process().signal(SIGTERM);
  return verdict(s, fenced(put) && reached && r.value == "B" && all == "B,B,B",
                 "A is told Fenced, reads return B's value, and all three replicas end up with it");
}

// 4. The superseded holder writes a key that the new holder never wrote.
int fresh_key(Stage& s) {
  auto a = s.holder("A4",
                    {"--lock", "audit-lock", "--store-key", "audit", "--value", "A was here", "--reach-all", "--stay"});
  s.say("client A takes lock 'audit-lock': token %llu", u(a->token()));
  const auto put = replica_down_then_late_write(s, *a, "audit-lock", [&](Stage::ClientB&) {
    s.say("B writes nothing to key 'audit'");
  });
  const bool reached = s.wait_stored(2, "audit", "A was here", 10s);
  s.say("replica 3 %s", reached ? "took A's write as pending" : "never got A's write");
  const ReadResult r = s.read_all("audit");
  s.say("a reader asks every replica: %s", r.found ? ("audit=" + r.value).c_str() : "no such key");
  a->process().signal(SIGTERM);
  return verdict(s, fenced(put) && reached && r.status.is_ok() && !r.found,
                 "the refused write is never visible, even where one replica stored it");
}

struct Scenario {
  const char* title;
  std::function<int(Stage&)> run;
};

}  // namespace

int run_demo(const DemoOptions& options) {
  const std::vector<Scenario> scenarios = {
      {"1. Process pause: a lock holder stopped past its lease writes when it wakes", process_pause},
      {"2. Delayed request: the old holder's write is held in the network until after the new holder's",
       delayed_request},
      {"3. Replica down (DDIA figure 9-7): the old holder's late write reaches only the replica that missed the new "
       "holder",
       replica_down},
      {"4. The old holder writes a key the new holder never touched", fresh_key},
  };
  std::printf("palisade demo: fencing tokens against the failures of DDIA chapter 9\n");
  std::unique_ptr<Stage> stage;
  int failed = 0;
  for (const Scenario& sc : scenarios) {
    std::printf("\n%s\n", sc.title);
    try {
      if (!stage) stage = std::make_unique<Stage>(options);
      failed += sc.run(*stage);
    } catch (const std::exception& e) {
      std::printf("  VERDICT FAIL: the scenario could not run: %s\n", e.what());
      ++failed;
    }
  }
  if (stage) stage->cluster().stop();
  std::printf("\n%d of %zu verdicts held.\n", static_cast<int>(scenarios.size()) - failed, scenarios.size());
  return failed;
}

}  // namespace palisade::cli
