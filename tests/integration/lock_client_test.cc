// LockClient against three real palisade-lockd processes (and, for fencing,
// three palisade-replica processes that hold the cluster key): sessions,
// grants, waits, failover, expiry and fenced writes on real sockets and disks.
// The cluster runs with short timings (session lease 3 s, master lease 1 s) so
// that failovers and expiries take seconds.
#include "palisade/lock_client.h"

#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "wire/lock_protocol.h"
#include "auth/cluster_key.h"
#include "tests/support/sequencers.h"
#include "transport/transport.h"
#include "palisade/quorum_store.h"
#include "tests/support/printers.h"
#include "tests/support/replica_process.h"
#include "cli/process.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;

constexpr char kGroup[] = "lock-client-test";

// Three lockd nodes and three replicas sharing one cluster key.
struct Cluster {
  TempDir dir;
  std::string key_file = dir.sub("cluster.key");
  std::string cluster_file = dir.sub("cluster.toml");
  std::vector<std::unique_ptr<test::ReplicaProcess>> replicas;
  std::vector<std::string> lockd_endpoints;
  std::vector<std::unique_ptr<cli::Process>> lockd;

  Cluster() {
    std::ofstream(key_file) << ClusterKey::generate().to_hex() << "\n";
    const std::vector<std::string> endpoints = cli::free_endpoints(6);
    lockd_endpoints.assign(endpoints.begin(), endpoints.begin() + 3);
    const std::vector<std::string> replica_endpoints(endpoints.begin() + 3, endpoints.end());
    std::ofstream toml(cluster_file);
    toml << "group = \"" << kGroup << "\"\nkey_file = \"" << key_file << "\"\n";
    for (int i = 0; i < 3; ++i) {
      toml << "[[lockd]]\nid = " << i + 1 << "\nendpoint = \"" << lockd_endpoints[i] << "\"\n";
      toml << "[[replica]]\nendpoint = \"" << replica_endpoints[i] << "\"\n";
    }
    toml << "[timing]\nsession_lease_ms = 3000\nclient_grace_ms = 5000\nmaster_lease_ms = 1000\n"
         << "heartbeat_ms = 100\nelection_timeout_ms = 300\n";
    toml.close();
    // Plaintext links (no identities), said with --insecure; sequencers checked with the cluster file's key.
    for (int i = 0; i < 3; ++i) {
      replicas.push_back(std::make_unique<test::ReplicaProcess>(
          dir.sub("r" + std::to_string(i)), std::vector<std::string>{"--cluster", cluster_file}, replica_endpoints[i]));
    }
    for (int i = 0; i < 3; ++i) {
      lockd.push_back(nullptr);
      start(i);
    }
    const bool elected = wait_for_master(15000);
    INFO(logs());
    REQUIRE(elected);
  }

  void start(int i) {
    const std::string id = std::to_string(i + 1);
    lockd[i] = std::make_unique<cli::Process>(
        std::vector<std::string>{PALISADE_LOCKD_BIN, "--id", id, "--cluster", cluster_file, "--data-dir",
                                 dir.sub("lockd" + id), "--log-level", "info", "--insecure"},
        dir.sub("lockd" + id + ".log"));
  }
  void kill(int i) { lockd[i]->kill(); }

  std::string logs() {
    std::string all;
    for (auto& p : lockd) {
      if (p) all += p->log_path() + ":\n" + p->log() + "\n";
    }
    return all;
  }

  // Asks node i for its status; nullopt when it does not answer in time.
  std::optional<wire::LockReply> status(size_t i) {
    zmq::context_t ctx(1);
    zmq::socket_t s = transport::make_dealer(ctx, lockd_endpoints[i], {.queue_until_connected = true});
    const std::string bytes = wire::encode_lock_request({.id = 1, .body = wire::LockStatusRequest{}});
    s.send(zmq::buffer(bytes), zmq::send_flags::none);
    zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, 300ms) <= 0) return std::nullopt;
    zmq::message_t msg;
    if (!s.recv(msg)) return std::nullopt;
    auto reply = wire::decode_lock_reply({static_cast<const char*>(msg.data()), msg.size()}, 16 << 20);
    if (!reply.is_ok()) return std::nullopt;
    return reply.value();
  }

  std::optional<size_t> master() {
    for (size_t i = 0; i < lockd.size(); ++i) {
      if (!lockd[i] || !lockd[i]->running()) continue;
      auto s = status(i);
      if (s && s->role == "master") return i;
    }
    return std::nullopt;
  }

  bool wait_for_master(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      if (master()) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  LockClientOptions client_options() {
    LockClientOptions o;
    o.nodes = lockd_endpoints;
    o.request_timeout = 300ms;
    o.grace = 5000ms;
    o.call_timeout = 5000ms;
    return o;
  }

  std::unique_ptr<LockClient> client(LockClientOptions o) {
    auto c = LockClient::connect(std::move(o), 10s);
    INFO(logs());
    REQUIRE(c.is_ok());
    return std::move(c).value();
  }
  std::unique_ptr<LockClient> client() { return client(client_options()); }

  std::unique_ptr<QuorumStore> store() {
    QuorumStoreOptions o;
    for (auto& r : replicas) o.replicas.push_back(r->endpoint());
    auto s = QuorumStore::open(o);
    REQUIRE(s.is_ok());
    return std::move(s).value();
  }
};

// Session events, recorded from the background thread.
struct Events {
  std::mutex mu;
  std::vector<SessionEvent> seen;
  std::function<void(SessionEvent)> callback() {
    return [this](SessionEvent e) {
      std::lock_guard lock(mu);
      seen.push_back(e);
    };
  }
  std::vector<SessionEvent> get() {
    std::lock_guard lock(mu);
    return seen;
  }
};

template <class F>
bool eventually(F&& f, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return f();
}

// Releases `lease` on its own thread after `delay`; `released` tells whether it
// worked (Catch2 assertions belong to the main thread).
std::thread release_after(LockClient& client, Lease lease, std::chrono::milliseconds delay,
                          std::atomic<bool>& released) {
  return std::thread([&client, lease, delay, &released]() mutable {
    std::this_thread::sleep_for(delay);
    released = client.release(lease).is_ok();
  });
}

TEST_CASE("lock client: grants, busy, sequencers, release", "[lock_client]") {
  Cluster cluster;
  auto a = cluster.client();
  auto b = cluster.client();
  CHECK(a->session() != 0);
  CHECK(b->session() != a->session());
  CHECK(a->epoch() != 0);
  CHECK(a->safe());

  auto first = a->acquire("orders");
  REQUIRE(first.is_ok());
  Lease lease = first.value();
  CHECK(lease.valid());
  CHECK(lease.name() == "orders");
  CHECK(lease.mode() == LockMode::kExclusive);
  CHECK(lease.token() >= 1);
  CHECK(lease.remaining() > 0ms);
  CHECK(lease.remaining() <= 3000ms);
  auto seq = parse_sequencer(lease.sequencer());
  REQUIRE(seq.is_ok());
  CHECK(seq.value().group == kGroup);
  CHECK(seq.value().lock == "orders");
  CHECK(seq.value().token == lease.token());

  // The same session asking again gets the same grant.
  auto again = a->acquire("orders");
  REQUIRE(again.is_ok());
  CHECK(again.value().token() == lease.token());

  auto busy = b->try_acquire("orders");
  CHECK(busy.code() == Code::kBusy);
  auto check = b->check_sequencer(lease.sequencer());
  REQUIRE(check.is_ok());
  CHECK(check.value());
  CHECK(b->check_sequencer("ps2.not-a-sequencer").code() == Code::kBadSequencer);

  Lease copy = lease;
  REQUIRE(a->release(lease).is_ok());
  CHECK_FALSE(lease.valid());
  CHECK_FALSE(copy.valid());
  CHECK_FALSE(again.value().valid());  // the same grant
  CHECK(a->release(lease).is_ok());    // idempotent

  auto second = b->try_acquire("orders");
  REQUIRE(second.is_ok());
  CHECK(second.value().token() > lease.token());
  auto stale = a->check_sequencer(lease.sequencer());
  REQUIRE(stale.is_ok());
  CHECK_FALSE(stale.value());

  // Shared holders share a token; an exclusive acquire is then busy.
  AcquireOptions shared{.mode = LockMode::kShared};
  auto s1 = a->acquire("config", shared);
  auto s2 = b->acquire("config", shared);
  REQUIRE(s1.is_ok());
  REQUIRE(s2.is_ok());
  CHECK(s1.value().token() == s2.value().token());
  CHECK(s2.value().mode() == LockMode::kShared);
  auto c = cluster.client();
  CHECK(c->try_acquire("config").code() == Code::kBusy);

  // A lease from another client is refused.
  CHECK(b->release(s1.value()).code() == Code::kBadRequest);

  // Each client counts its own calls by outcome.
  const LockCounters na = a->counters();
  CHECK(na.acquires[Code::kOk] == 3);  // orders twice, config
  CHECK(na.acquires.total() == 3);
  CHECK(na.releases[Code::kOk] == 2);
  const LockCounters nb = b->counters();
  CHECK(nb.acquires[Code::kBusy] == 1);
  CHECK(nb.acquires[Code::kOk] == 2);
  CHECK(nb.releases[Code::kBadRequest] == 1);
  CHECK(c->counters().acquires[Code::kBusy] == 1);
  CHECK(na.jeopardy + na.safe_again + na.expired == 0);
}

TEST_CASE("lock client: a waiting acquire is granted when the holder lets go", "[lock_client]") {
  Cluster cluster;
  auto a = cluster.client();
  auto b = cluster.client();
  auto held = a->acquire("jobs");
  REQUIRE(held.is_ok());

  // The wait runs out.
  auto start = std::chrono::steady_clock::now();
  auto timed_out = b->acquire("jobs", {.wait = 500ms});
  CHECK(timed_out.code() == Code::kTimeout);
  CHECK(std::chrono::steady_clock::now() - start >= 450ms);

  // The holder releases during the wait.
  std::atomic<bool> released{false};
  std::thread releaser = release_after(*a, held.value(), 300ms, released);
  auto granted = b->acquire("jobs", {.wait = 5000ms});
  releaser.join();
  CHECK(released);
  REQUIRE(granted.is_ok());
  CHECK(granted.value().token() > held.value().token());
  CHECK(granted.value().valid());

  // Closing a client releases its locks at once (no lock-delay).
  auto c = cluster.client();
  auto d = cluster.client();
  REQUIRE(c->acquire("report", {.lock_delay = 30000ms}).is_ok());
  CHECK(d->try_acquire("report").code() == Code::kBusy);
  c.reset();
  CHECK(d->try_acquire("report").is_ok());
}

TEST_CASE("lock client: a lease granted after a wait longer than the session lease is valid at once",
          "[lock_client]") {
  // The grant bounds the local deadline by the lease the master had left,
  // counted from when the acquire was sent, 3.5 s ago with a 3 s lease: acquire
  // returns once a KeepAlive has moved the deadline on.
  Cluster cluster;
  auto a = cluster.client();
  auto b = cluster.client();
  auto held = a->acquire("ledger");
  REQUIRE(held.is_ok());
  std::atomic<bool> released{false};
  std::thread releaser = release_after(*a, held.value(), 3500ms, released);
  auto granted = b->acquire("ledger", {.wait = 10000ms});
  const bool valid = granted.is_ok() && granted.value().valid();
  releaser.join();
  CHECK(released);
  REQUIRE(granted.is_ok());
  CHECK(valid);
}

TEST_CASE("lock client: blocking calls from many threads share one session", "[lock_client]") {
  Cluster cluster;
  auto holder = cluster.client();
  auto shared = cluster.client();
  auto held = holder->acquire("queue");
  REQUIRE(held.is_ok());
  // One thread waits in an acquire (the caller that drives its own call), while
  // the others' calls go through the client's I/O thread meanwhile.
  std::atomic<bool> waiter_granted{false};
  std::thread waiter([&] {
    auto granted = shared->acquire("queue", {.wait = 10000ms});
    waiter_granted = granted.is_ok() && granted.value().token() > held.value().token();
    if (granted.is_ok()) (void)shared->release(granted.value());
  });
  std::atomic<int> cycles{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t) {
    workers.emplace_back([&, t] {
      uint64_t last = 0;
      for (int i = 0; i < 10; ++i) {
        auto lease = shared->acquire("own-" + std::to_string(t));
        if (!lease.is_ok() || lease.value().token() <= last) return;
        last = lease.value().token();
        if (shared->release(lease.value()).is_ok()) ++cycles;
      }
    });
  }
  for (auto& w : workers) w.join();
  CHECK(cycles == 30);
  CHECK_FALSE(waiter_granted);  // still waiting: the other calls did not wait for it
  Lease lease = held.value();
  REQUIRE(holder->release(lease).is_ok());
  waiter.join();
  CHECK(waiter_granted);
}

TEST_CASE("lock client: a cancelled acquire ends at once and holds nothing", "[lock_client]") {
  Cluster cluster;
  auto holder = cluster.client();
  auto waiter = cluster.client();
  auto other = cluster.client();
  // One lock per way of cancelling, so that each one's late grant must be
  // given back by its own path.
  const std::vector<std::string> locks = {"jobs-direct", "jobs-queued"};
  std::vector<Lease> held;
  for (const std::string& lock : locks) {
    auto lease = holder->acquire(lock);
    REQUIRE(lease.is_ok());
    held.push_back(lease.value());
  }
  REQUIRE(holder->acquire("side").is_ok());

  // Cancelled from another thread while it waits: once on the caller's own
  // thread, once while another call of the same client holds that path (so it
  // goes through the client's I/O thread).
  for (bool behind_another_call : {false, true}) {
    INFO("behind another call: " << behind_another_call);
    std::thread busy;
    std::atomic<bool> busy_started{false};
    if (behind_another_call) {
      busy = std::thread([&] {
        busy_started = true;
        (void)waiter->acquire("side", {.wait = 1500ms});
      });
      while (!busy_started) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(100ms);  // its acquire is on the wire
    }
    std::stop_source stop;
    std::thread canceller([&] {
      std::this_thread::sleep_for(300ms);
      stop.request_stop();
    });
    const auto start = std::chrono::steady_clock::now();
    auto cancelled = waiter->acquire(locks[behind_another_call ? 1 : 0], {.wait = 10000ms, .cancel = stop.get_token()});
    const auto took = std::chrono::steady_clock::now() - start;
    canceller.join();
    if (busy.joinable()) busy.join();
    CHECK(cancelled.code() == Code::kCancelled);
    CHECK(took < 1000ms);
  }
  CHECK(waiter->safe());

  // The lock group still has the cancelled waits queued: once the holder lets
  // go it grants them, and the waiter gives each back (the direct one's grant
  // reaches the direct sockets after their caller left) with no further call,
  // so a third client gets both locks.
  for (Lease& lease : held) REQUIRE(holder->release(lease).is_ok());
  for (const std::string& lock : locks) {
    INFO(lock);
    Result<Lease> got = Status(Code::kBusy, "not tried");
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!got.is_ok() && std::chrono::steady_clock::now() < deadline) {
      got = other->try_acquire(lock);
      if (!got.is_ok()) std::this_thread::sleep_for(20ms);
    }
    CHECK(got.is_ok());
  }
}

TEST_CASE("lock client: the session and its leases live through a failover", "[lock_client]") {
  Cluster cluster;
  Events events;
  LockClientOptions o = cluster.client_options();
  o.on_event = events.callback();
  auto a = cluster.client(std::move(o));
  auto held = a->acquire("leader");
  REQUIRE(held.is_ok());
  const uint64_t session = a->session();
  const uint64_t epoch = a->epoch();

  auto m = cluster.master();
  REQUIRE(m);
  cluster.kill(static_cast<int>(*m));
  INFO(cluster.logs());
  // A new master; the client finds it and its KeepAlives are answered again.
  REQUIRE(cluster.wait_for_master(10000));
  CHECK(eventually([&] { return a->epoch() > epoch && a->safe(); }, 10s));
  CHECK(a->session() == session);
  CHECK(held.value().valid());
  auto current = a->check_sequencer(held.value().sequencer());
  REQUIRE(current.is_ok());
  CHECK(current.value());
  // New calls work, with tokens above the old ones.
  auto next = a->acquire("follower");
  REQUIRE(next.is_ok());
  CHECK(next.value().token() > held.value().token());
  for (SessionEvent e : events.get()) CHECK(e != SessionEvent::kExpired);
  // The dead node comes back.
  cluster.start(static_cast<int>(*m));
}

TEST_CASE("lock client: with no lock group, jeopardy, then expiry", "[lock_client]") {
  Cluster cluster;
  Events events;
  LockClientOptions o = cluster.client_options();
  o.on_event = events.callback();
  o.grace = 1500ms;
  auto a = cluster.client(std::move(o));
  auto store = cluster.store();
  auto held = a->acquire("x");
  REQUIRE(held.is_ok());
  for (int i = 0; i < 3; ++i) cluster.kill(i);

  // Within a session lease (3 s), the lease is void.
  CHECK(eventually([&] { return !held.value().valid(); }, 4s));
  CHECK_FALSE(a->safe());
  CHECK(store->put("k", "v", held.value()).status.code() == Code::kNoSession);
  CHECK(eventually([&] { return events.get().size() >= 2; }, 5s));
  CHECK(events.get() == std::vector{SessionEvent::kJeopardy, SessionEvent::kExpired});
  CHECK(a->counters().jeopardy == 1);
  CHECK(a->counters().expired == 1);
  CHECK(a->counters().safe_again == 0);
  CHECK(a->try_acquire("y").code() == Code::kNoSession);
  CHECK(a->counters().acquires[Code::kNoSession] == 1);
  CHECK(a->check_sequencer(held.value().sequencer()).code() == Code::kNoSession);
  // Closing an expired client is quick.
  auto start = std::chrono::steady_clock::now();
  a.reset();
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("lock client: acquire fences the store, and a superseded holder's writes are refused", "[lock_client]") {
  Cluster cluster;
  auto store = cluster.store();
  LockClientOptions o = cluster.client_options();
  o.store = store.get();
  auto a = cluster.client(o);
  auto b = cluster.client(o);

  auto la = a->acquire("account");
  REQUIRE(la.is_ok());
  WriteResult w = store->put("balance", "100", la.value());
  REQUIRE(w.status.is_ok());
  CHECK(w.ts.token == la.value().token());
  const Fence old_fence{la.value().name(), la.value().token(), la.value().sequencer()};

  Lease lease_a = la.value();
  REQUIRE(a->release(lease_a).is_ok());
  // Refused locally: the lease is no longer valid.
  CHECK(store->put("balance", "90", lease_a).status.code() == Code::kNoSession);
  CHECK(store->del("balance", lease_a).status.code() == Code::kNoSession);

  auto lb = b->acquire("account");
  REQUIRE(lb.is_ok());
  // b's acquire raised the fence floor before it returned: a write with a's
  // token (say, from a paused process) is fenced.
  CHECK(store->put("balance", "90", old_fence).status.code() == Code::kFenced);
  REQUIRE(store->put("balance", "200", lb.value()).status.is_ok());
  ReadResult r = store->get("balance");
  REQUIRE(r.status.is_ok());
  CHECK(r.value == "200");
  CHECK(r.lock == "account");
  REQUIRE(store->del("balance", lb.value()).status.is_ok());

  // Shared leases do not write.
  auto shared = a->acquire("catalog", {.mode = LockMode::kShared});
  REQUIRE(shared.is_ok());
  CHECK(store->put("item", "1", shared.value()).status.code() == Code::kBadRequest);
}

TEST_CASE("lock client: connect gives up when no node answers", "[lock_client]") {
  LockClientOptions o;
  for (int i = 0; i < 3; ++i) o.nodes.push_back("tcp://127.0.0.1:" + std::to_string(cli::free_port()));
  o.request_timeout = 100ms;
  auto start = std::chrono::steady_clock::now();
  auto c = LockClient::connect(o, 500ms);
  CHECK(c.code() == Code::kUnavailable);
  CHECK(std::chrono::steady_clock::now() - start < 2s);

  CHECK(LockClient::connect(LockClientOptions{}).code() == Code::kBadRequest);
  LockClientOptions bad;
  bad.nodes = {"not an endpoint"};
  CHECK(LockClient::connect(bad, 100ms).code() == Code::kBadRequest);
}

}  // namespace
}  // namespace palisade

namespace palisade {

TEST_CASE("lock client: an acquire whose fence finds a higher floor fails fenced and holds nothing",
          "[lock_client]") {
  // A later holder's fence is on the replicas already (here: one signed with
  // the cluster key for token 1000), so any grant the group makes now is
  // superseded before it is used.
  Cluster cluster;
  auto store = cluster.store();
  auto key = ClusterKey::load(cluster.key_file);
  REQUIRE(key.is_ok());
  const Sequencer later{.group = kGroup, .lock = "account", .mode = LockMode::kExclusive, .token = 1000};
  REQUIRE(store->fence(Fence{"account", 1000, sign_sequencer(later, key.value())}).status.is_ok());

  LockClientOptions o = cluster.client_options();
  o.store = store.get();
  auto a = cluster.client(o);
  auto la = a->acquire("account");
  CHECK(la.code() == Code::kFenced);
  // It gave the grant back: another session gets the lock at once.
  auto b = cluster.client(cluster.client_options());
  auto lb = b->try_acquire("account");
  CHECK(lb.is_ok());
}

}  // namespace palisade
