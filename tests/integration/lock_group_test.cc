// The lock group as a whole, on real processes: three palisade-lockd nodes and
// three palisade-replica daemons (verifying sequencers) started by
// cli::LocalCluster, clients in this process and lock holders in processes of
// their own (`palisade demo-holder`) that the tests pause and kill. docs/design.md
// "Lock group", "Client" and "Fence safety"; docs/sessions.md.
//
// The cluster runs with short timings (session lease 3 s, master lease 1.5 s,
// election timeout 0.5 s) so that failovers and expiries take seconds. Every
// wait polls for its condition with a deadline; timing bounds are generous and
// the measured times are printed.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <filesystem>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <msgpack.hpp>
#include <zmq.hpp>

#include "config/cluster_config.h"
#include "wire/envelope.h"
#include "wire/hash.h"
#include "wire/lock_protocol.h"
#include "auth/cluster_key.h"
#include "tests/support/sequencers.h"
#include "transport/transport.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "client/replica_connection.h"
#include "lockgroup/lock_table.h"
#include "lockgroup/paxos_messages.h"
#include "lockgroup/peer_auth.h"
#include "tests/support/local_cluster.h"
#include "tests/support/printers.h"
#include "tests/support/replica_requests.h"
#include "cli/holder_process.h"
#include "cli/process.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kGroup[] = "lock-group-test";

int64_t ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<milliseconds>(to - from).count();
}

// Polls `f` every 20 ms until it holds or `timeout` passes.
template <class F>
bool eventually(F&& f, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return f();
}

// A local cluster in a temporary directory. Should the test end by a failed
// REQUIRE, the end of every daemon's log goes to stderr.
struct Fixture {
  TempDir dir;
  std::unique_ptr<cli::LocalCluster> cluster;

  explicit Fixture(const std::function<void(cli::LocalClusterOptions&)>& tweak = {}) {
    cli::LocalClusterOptions o = test::local_cluster_options(dir.sub("cluster"));
    o.group = kGroup;
    o.timing = cli::short_lease_timing();
    if (tweak) tweak(o);
    cluster = test::start_local_cluster(std::move(o));
  }

  ~Fixture() {
    if (std::uncaught_exceptions() > 0 && cluster) std::cerr << "daemon logs:\n" << cluster->logs(60) << "\n";
  }

  std::string logs() const { return cluster->logs(60); }

  LockClientOptions client_options() const {
    LockClientOptions o;
    o.nodes = cluster->lockd_endpoints();
    o.request_timeout = 300ms;
    o.grace = milliseconds(cluster->config().timing.client_grace_ms);
    o.call_timeout = 8000ms;
    return o;
  }

  std::unique_ptr<LockClient> client(LockClientOptions o) {
    auto c = LockClient::connect(std::move(o), 10s);
    if (!c.is_ok()) {
      INFO(logs());
      FAIL("LockClient::connect: " << c.status().to_string());
    }
    return std::move(c).value();
  }
  std::unique_ptr<LockClient> client() { return client(client_options()); }

  std::unique_ptr<QuorumStore> store(int read_quorum = 2) {
    QuorumStoreOptions o;
    o.replicas = cluster->replica_endpoints();
    o.read_quorum = read_quorum;
    o.timeout = 5000ms;  // room for slow syncs on a busy machine
    auto s = QuorumStore::open(o);
    REQUIRE(s.is_ok());
    return std::move(s).value();
  }

  uint32_t master() {
    auto m = cluster->wait_for_master(10s);
    if (!m) {
      INFO(logs());
      FAIL("no lockd master");
    }
    return *m;
  }

  // What each replica stores for `key` (versions, newest first, and floors), read
  // directly: for failure messages.
  std::string replica_view(const std::string& key) {
    std::ostringstream out;
    for (size_t i = 0; i < cluster->replica_count(); ++i) {
      out << "replica " << i << ": ";
      client::ReplicaConnection conn(cluster->replica(i).endpoint());
      auto reply = conn.call(test::read_req(key), 2000);
      if (!reply.is_ok()) {
        out << reply.status().to_string() << "\n";
        continue;
      }
      for (const wire::Version& v : reply.value().versions) {
        out << "[" << v.ts.token << "@" << (v.ts.hlc >> 16) << "." << (v.ts.hlc & 0xffff) << " "
            << (v.state == wire::VersionState::kCommitted ? "committed" : "pending") << " lock '" << v.lock
            << "' value '" << v.value << "'] ";
      }
      for (const auto& [lock, floor] : reply.value().floors) out << "floor " << lock << "=" << floor << " ";
      out << "\n";
    }
    return out.str();
  }

  // The lock as the master's table holds it; nullopt when the table has no such lock.
  std::optional<wire::LockInfo> lock_info(uint32_t node, const std::string& name) {
    auto status = cluster->lock_status(node);
    if (!status) return std::nullopt;
    for (const wire::LockInfo& info : status->locks) {
      if (info.name == name) return info;
    }
    return std::nullopt;
  }
};

// Session events, recorded from the client's background thread.
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

// `palisade demo-holder` in a process of its own; it prints what it holds to its log.
struct Holder {
  cli::HolderProcess holder;
  cli::Process* process;

  Holder(const Fixture& fx, const std::string& name, const std::vector<std::string>& args)
      : holder(PALISADE_BIN, fx.cluster->cluster_file(), fx.cluster->admin_key_file(), args, fx.dir.sub(name + ".log")),
        process(&holder.process()) {}

  // The rest of its output line that starts with `prefix`; fails the test
  // (with the holder's output) when it does not come.
  std::string wait_for(const std::string& prefix, milliseconds timeout) {
    auto l = holder.wait_for(prefix, timeout);
    if (!l) FAIL("the lock holder did not print '" << prefix << "'; its output:\n" << process->log());
    return *l;
  }
  uint64_t token() const { return holder.token(); }
  std::string sequencer() const { return holder.sequencer(); }
};

// ---- a. acquire and release ----

TEST_CASE("lock group: acquire, busy, release, a higher token, sequencers", "[lockgroup]") {
  Fixture fx;
  auto a = fx.client();
  auto b = fx.client();
  REQUIRE(a->session() != 0);
  CHECK(b->session() != a->session());

  auto first = a->acquire("alpha");
  REQUIRE(first.is_ok());
  Lease la = first.value();
  CHECK(la.valid());
  CHECK(la.token() > 0);
  auto seq = parse_sequencer(la.sequencer());
  REQUIRE(seq.is_ok());
  CHECK(seq.value().group == kGroup);
  CHECK(seq.value().lock == "alpha");
  CHECK(seq.value().mode == LockMode::kExclusive);
  CHECK(seq.value().token == la.token());
  // The sequencer is signed with the cluster key of the cluster file, which only its owner reads.
  struct stat key_stat {};
  REQUIRE(stat(fx.cluster->key_file().c_str(), &key_stat) == 0);
  CHECK((key_stat.st_mode & 0777) == 0600);
  auto key = ClusterKey::load(fx.cluster->key_file());
  REQUIRE(key.is_ok());
  CHECK(verify_sequencer(la.sequencer(), key.value(), kGroup).is_ok());
  // Anyone checks it with the public key the cluster file lists, and nothing else.
  auto listed = load_cluster_file(fx.cluster->cluster_file());
  REQUIRE(listed.is_ok());
  auto verifier = SequencerVerifier::create(kGroup, listed.value().sequencer_public_key);
  REQUIRE(verifier.is_ok());
  auto checked = verifier.value().verify(la.sequencer());
  REQUIRE(checked.is_ok());
  CHECK(checked.value() == seq.value());

  CHECK(b->try_acquire("alpha").code() == Code::kBusy);
  auto current = b->check_sequencer(la.sequencer());
  REQUIRE(current.is_ok());
  CHECK(current.value());
  // The master's table agrees.
  auto info = fx.lock_info(fx.master(), "alpha");
  REQUIRE(info);
  CHECK(info->token == la.token());
  CHECK(info->holders == std::vector<uint64_t>{a->session()});

  REQUIRE(a->release(la).is_ok());
  CHECK_FALSE(la.valid());
  auto second = b->try_acquire("alpha");
  REQUIRE(second.is_ok());
  Lease lb = second.value();
  CHECK(lb.token() > la.token());
  CHECK(lb.valid());

  auto first_now = b->check_sequencer(la.sequencer());
  REQUIRE(first_now.is_ok());
  CHECK_FALSE(first_now.value());
  auto second_now = a->check_sequencer(lb.sequencer());
  REQUIRE(second_now.is_ok());
  CHECK(second_now.value());
  CHECK(a->try_acquire("alpha").code() == Code::kBusy);

  // A replica restarts on its port and data dir.
  const pid_t before_restart = fx.cluster->replica(1).pid();
  Status restarted = fx.cluster->replica(1).restart();
  INFO(restarted.to_string());
  REQUIRE(restarted.is_ok());
  CHECK(fx.cluster->replica(1).pid() != before_restart);

  // Every daemon stops cleanly on SIGTERM.
  a.reset();
  b.reset();
  fx.cluster->stop();
  for (uint32_t id : fx.cluster->lockd_ids()) {
    CHECK_FALSE(fx.cluster->lockd(id).running());
    CHECK_THAT(fx.cluster->lockd(id).log(), Catch::Contains("stopped cleanly"));
  }
  for (size_t i = 0; i < fx.cluster->replica_count(); ++i) {
    CHECK_THAT(fx.cluster->replica(i).log(), Catch::Contains("stopped cleanly"));
  }
}

// ---- b. the master dies during acquires and releases ----

TEST_CASE("lock group: SIGKILL of the master during acquires: failover time, tokens, the session survives",
          "[lockgroup]") {
  Fixture fx;
  Events events;
  LockClientOptions o = fx.client_options();
  o.on_event = events.callback();
  auto c = fx.client(o);
  const uint64_t session = c->session();
  const uint64_t epoch = c->epoch();

  struct Op {
    Clock::time_point at;
    uint64_t token = 0;    // 0: the acquire failed
    Code code = Code::kOk;
    bool released = true;  // whether the release after it succeeded
  };
  std::mutex mu;
  std::vector<Op> ops;
  std::atomic<bool> stop{false};
  std::thread loop([&] {
    while (!stop) {
      auto lease = c->acquire("failover", {.wait = 5000ms});
      Op op{.at = Clock::now()};
      if (lease.is_ok()) {
        op.token = lease.value().token();
        Lease l = lease.value();
        op.released = c->release(l).is_ok();
      } else {
        op.code = lease.code();
      }
      {
        std::lock_guard lock(mu);
        ops.push_back(op);
      }
      std::this_thread::sleep_for(10ms);
    }
  });
  auto granted_after = [&](Clock::time_point t) {
    std::lock_guard lock(mu);
    return std::count_if(ops.begin(), ops.end(), [&](const Op& op) { return op.token != 0 && op.at > t; });
  };

  const Clock::time_point started = Clock::now();
  CHECK(eventually([&] { return granted_after(started) >= 10; }, 10s));
  const uint32_t old_master = fx.master();
  const Clock::time_point killed = Clock::now();
  fx.cluster->lockd(old_master).kill();
  auto new_master = fx.cluster->wait_for_master_other_than(old_master, 20s);
  const Clock::time_point elected = Clock::now();
  if (!new_master) {
    stop = true;
    loop.join();
    INFO(fx.logs());
    FAIL("no new master within 20 s");
  }
  const ClusterTiming t = fx.cluster->config().timing;
  const int64_t failover_ms = ms_between(killed, elected);
  const int64_t expected_ms = static_cast<int64_t>(t.master_lease_ms + t.election_timeout_ms);
  std::printf("failover: node %u killed, node %u master after %lld ms (master lease + election timeout = %lld ms)\n",
              old_master, *new_master, static_cast<long long>(failover_ms), static_cast<long long>(expected_ms));
  CHECK(failover_ms <= 3 * expected_ms);

  // The client carries on with the new master.
  CHECK(eventually([&] { return granted_after(elected) >= 10; }, 15s));
  stop = true;
  loop.join();

  std::vector<Op> seen;
  {
    std::lock_guard lock(mu);
    seen = ops;
  }
  uint64_t last = 0;
  bool last_released = true;
  int failed = 0, granted_during = 0;
  Clock::time_point first_after = elected;
  for (const Op& op : seen) {
    if (op.token == 0) {
      ++failed;
      UNSCOPED_INFO("an acquire failed during the failover: " << code_name(op.code));
      continue;
    }
    if (op.at > killed && op.at <= elected) ++granted_during;
    if (op.at > elected && first_after == elected) first_after = op.at;
    // A release that failed leaves the lock held, and the next acquire returns the same grant.
    if (last_released) {
      CHECK(op.token > last);
    } else {
      CHECK(op.token >= last);
    }
    last = op.token;
    last_released = op.released;
  }
  std::printf("failover: %zu acquires, %d failed, %d granted between the kill and the election, "
              "first grant %lld ms after the kill\n",
              seen.size(), failed, granted_during,
              static_cast<long long>(ms_between(killed, first_after)));
  CHECK(failed <= 2);
  CHECK(c->session() == session);
  CHECK(c->epoch() > epoch);
  CHECK(eventually([&] { return c->safe(); }, 5s));
  for (SessionEvent e : events.get()) CHECK(e != SessionEvent::kExpired);
}

// ---- b2. a paused master ----

TEST_CASE("lock group: a SIGSTOPped master is replaced, and once resumed it never acts as master", "[lockgroup]") {
  Fixture fx;
  Events events;
  LockClientOptions o = fx.client_options();
  o.on_event = events.callback();
  auto c = fx.client(o);
  const uint64_t session = c->session();
  auto before = c->acquire("before");
  REQUIRE(before.is_ok());

  const uint32_t old_master = fx.master();
  fx.cluster->lockd(old_master).pause();
  const Clock::time_point paused = Clock::now();
  auto new_master = fx.cluster->wait_for_master_other_than(old_master, 20s);
  if (!new_master) {
    INFO(fx.logs());
    FAIL("no new master while the old one is paused");
  }
  std::printf("paused master: node %u paused, node %u master after %lld ms\n", old_master, *new_master,
              static_cast<long long>(ms_between(paused, Clock::now())));
  auto during = c->acquire("during", {.wait = 5000ms});
  REQUIRE(during.is_ok());
  CHECK(during.value().token() > before.value().token());

  // The old master wakes up with a lease long run out: it must not answer as
  // master (nor grant anything), whatever requests were queued for it.
  fx.cluster->lockd(old_master).resume();
  const Clock::time_point resumed = Clock::now();
  int rounds = 0;
  while (Clock::now() - resumed < 2s) {
    for (const auto& m : fx.cluster->masters(300ms)) {
      CHECK(m.id != old_master);
      CHECK(m.id == *new_master);
    }
    ++rounds;
  }
  INFO(rounds << " rounds of find_master");
  // It follows the new master.
  CHECK(eventually(
      [&] {
        auto s = fx.cluster->call_lockd(old_master, wire::FindMasterRequest{});
        return s && s->status.code() == Code::kNotMaster && s->master == *new_master;
      },
      5s));
  auto after = c->acquire("after", {.wait = 5000ms});
  REQUIRE(after.is_ok());
  CHECK(after.value().token() > during.value().token());
  auto current = c->check_sequencer(before.value().sequencer());
  REQUIRE(current.is_ok());
  CHECK(current.value());
  CHECK(c->session() == session);
  for (SessionEvent e : events.get()) CHECK(e != SessionEvent::kExpired);
}

// ---- c. a paused holder's late write is fenced ----

TEST_CASE("lock group: a SIGSTOPped holder past its lease is superseded, and its late write is fenced",
          "[lockgroup]") {
  Fixture fx;
  Holder holder(fx, "holder", {"--lock", "L", "--store-key", "K", "--value", "late write of the paused holder"});
  holder.wait_for("ready", 20s);
  const uint64_t old_token = holder.token();
  const std::string old_sequencer = holder.sequencer();
  REQUIRE(old_token > 0);

  auto store = fx.store();
  LockClientOptions o = fx.client_options();
  o.store = store.get();
  auto b = fx.client(o);
  CHECK(b->try_acquire("L").code() == Code::kBusy);

  holder.process->signal(SIGSTOP);
  const Clock::time_point paused = Clock::now();
  auto acquired = b->acquire("L", {.wait = 15000ms});
  const Clock::time_point granted = Clock::now();
  if (!acquired.is_ok()) {
    INFO(fx.logs());
    FAIL("acquire after the holder paused: " << acquired.status().to_string());
  }
  Lease lb = acquired.value();
  const uint64_t lease_ms = fx.cluster->config().timing.session_lease_ms;
  std::printf("paused holder: lock L (token %llu) granted again (token %llu) %lld ms after SIGSTOP\n",
              static_cast<unsigned long long>(old_token), static_cast<unsigned long long>(lb.token()),
              static_cast<long long>(ms_between(paused, granted)));
  CHECK(lb.token() > old_token);
  // Not while the paused holder's session lived: its KeepAlives (every third of
  // the lease) were answered until the pause. Half a lease leaves room for a
  // late KeepAlive on a loaded machine.
  CHECK(ms_between(paused, granted) >= static_cast<int64_t>(lease_ms / 2));
  REQUIRE(store->put("K", "written by the new holder", lb).status.is_ok());
  auto stale = b->check_sequencer(old_sequencer);
  REQUIRE(stale.is_ok());
  CHECK_FALSE(stale.value());

  // The holder wakes up, believes it still holds L, and writes under its old token.
  holder.process->signal(SIGCONT);
  holder.process->signal(SIGUSR1);
  const std::string put = holder.wait_for("put", 15s);
  unsigned long long floor = 0;
  char code[32] = {};
  REQUIRE(std::sscanf(put.c_str(), "%31s floor %llu", code, &floor) == 2);
  CHECK(std::string(code) == "fenced");
  CHECK(floor >= lb.token());
  CHECK(holder.process->wait(5000).has_value());

  for (int read_quorum : {2, 3}) {
    ReadResult r = fx.store(read_quorum)->get("K");
    if (!r.status.is_ok()) {
      INFO(fx.replica_view("K"));
      FAIL("read of K at read quorum " << read_quorum << ": " << r.status.to_string());
    }
    CHECK(r.found);
    CHECK(r.value == "written by the new holder");
    CHECK(r.ts.token == lb.token());
    CHECK(r.lock == "L");
  }
}

// ---- d. lock-delay ----

// What kill_holder_and_acquire measured.
struct DelayTimes {
  int64_t from_kill_ms = 0;  // from the holder's SIGKILL to the grant
  // How long the lock stayed free before the grant (an upper bound: from the
  // last status request that found it held); -1 when the master's table never
  // showed it free (the grant came with the expiry).
  int64_t from_free_ms = -1;
  bool saw_delay = false;  // the table showed it free and in lock-delay
  uint64_t token = 0;
};

// Kills a holder of `lock` that acquired it with `delay_ms` of lock-delay, and
// acquires the lock from `client`, waiting, while watching the master's table.
DelayTimes kill_holder_and_acquire(Fixture& fx, LockClient& client, const std::string& lock, uint64_t delay_ms) {
  Holder holder(fx, "holder-" + lock, {"--lock", lock, "--lock-delay", std::to_string(delay_ms) + "ms"});
  holder.wait_for("ready", 20s);
  const uint64_t held_token = holder.token();
  CHECK(client.try_acquire(lock).code() == Code::kBusy);
  const uint32_t master = fx.master();

  holder.process->kill();
  const Clock::time_point killed = Clock::now();
  auto pending = std::async(std::launch::async, [&] {
    auto lease = client.acquire(lock, {.wait = 20000ms});
    return std::make_pair(std::move(lease), Clock::now());
  });
  // Watch the master's table: when does the lock lose its holder, is it in
  // lock-delay? The lock was freed after the master answered the last status
  // that showed it held, so after that status was sent: measured from then, the
  // time it stayed free is never underestimated, however slow the answers.
  Clock::time_point held_asked = killed;
  bool freed = false, saw_delay = false;
  while (pending.wait_for(10ms) != std::future_status::ready) {
    const Clock::time_point asked = Clock::now();
    auto info = fx.lock_info(master, lock);
    const bool held = info && info->token == held_token && !info->holders.empty();
    if (held && !freed) held_asked = asked;
    if (info && info->token == held_token && info->holders.empty()) {
      freed = true;
      saw_delay |= info->delay_ms > 0;
    }
  }
  auto [lease, granted] = pending.get();
  if (!lease.is_ok()) {
    INFO(fx.logs());
    FAIL("acquire of " << lock << " after its holder died: " << lease.status().to_string());
  }
  CHECK(lease.value().token() > held_token);
  DelayTimes times{.from_kill_ms = ms_between(killed, granted),
                   .from_free_ms = freed ? ms_between(held_asked, granted) : -1,
                   .saw_delay = saw_delay,
                   .token = lease.value().token()};
  std::printf("lock-delay %llu ms: granted %lld ms after the holder's SIGKILL, free for at most %lld ms "
              "before%s\n",
              static_cast<unsigned long long>(delay_ms), static_cast<long long>(times.from_kill_ms),
              static_cast<long long>(times.from_free_ms), saw_delay ? " (in lock-delay)" : "");
  Lease l = lease.value();
  CHECK(client.release(l).is_ok());
  return times;
}

TEST_CASE("lock group: lock-delay after an expired holder, none after a clean release, 0 means none",
          "[lockgroup]") {
  Fixture fx;
  auto client = fx.client();
  const int64_t lease_ms = static_cast<int64_t>(fx.cluster->config().timing.session_lease_ms);

  SECTION("a holder that dies with lock-delay 2 s") {
    DelayTimes t = kill_holder_and_acquire(fx, *client, "delayed", 2000);
    // Its session expires 2/3 to 1 lease after the kill (half a lease leaves room for
    // a late KeepAlive on a loaded machine), then the delay runs.
    CHECK(t.from_kill_ms >= lease_ms / 2 + 2000);
    CHECK(t.from_kill_ms <= lease_ms + 2000 + 3000);
    CHECK(t.from_free_ms >= 2000);
    CHECK(t.saw_delay);
  }
  SECTION("a holder that dies with lock-delay 0") {
    DelayTimes t = kill_holder_and_acquire(fx, *client, "undelayed", 0);
    CHECK(t.from_kill_ms >= lease_ms / 2);
    // Granted at the expiry: well before a lock-delay of 2 s could have run.
    CHECK(t.from_kill_ms <= lease_ms + 1500);
    // The waiting acquire is usually granted by the expiry itself, so the
    // table never shows the lock free (from_free_ms -1); if it does, briefly.
    CHECK(t.from_free_ms < 1000);
    CHECK_FALSE(t.saw_delay);
  }
  SECTION("a clean release has no lock-delay, whatever the holder asked for") {
    auto other = fx.client();
    auto held = other->acquire("released", {.lock_delay = 2000ms});
    REQUIRE(held.is_ok());
    Lease l = held.value();
    REQUIRE(other->release(l).is_ok());
    const Clock::time_point released = Clock::now();
    auto next = client->try_acquire("released");  // wait 0: busy if it were in lock-delay
    const int64_t took = ms_between(released, Clock::now());
    REQUIRE(next.is_ok());
    CHECK(next.value().token() > held.value().token());
    CHECK(took < lease_ms / 3);
    // And a client that closes its session releases at once too.
    auto closing = fx.client();
    REQUIRE(closing->acquire("closed", {.lock_delay = 2000ms}).is_ok());
    closing.reset();
    CHECK(client->try_acquire("closed").is_ok());
  }
}

TEST_CASE("lock group: a new master restarts a lock-delay in full", "[lockgroup]") {
  Fixture fx;
  auto client = fx.client();
  Holder holder(fx, "holder", {"--lock", "D", "--lock-delay", "2s"});
  holder.wait_for("ready", 20s);
  const uint64_t held_token = holder.token();
  const uint32_t old_master = fx.master();
  holder.process->kill();
  // Once the master expired the holder's session, the lock is in lock-delay...
  const bool delayed = eventually(
      [&] {
        auto info = fx.lock_info(old_master, "D");
        return info && info->token == held_token && info->holders.empty() && info->delay_ms > 0;
      },
      10s);
  REQUIRE(delayed);
  // ...when the master dies.
  fx.cluster->lockd(old_master).kill();
  const Clock::time_point killed = Clock::now();
  auto lease = client->acquire("D", {.wait = 20000ms});
  const Clock::time_point granted = Clock::now();
  if (!lease.is_ok()) {
    INFO(fx.logs());
    FAIL("acquire of D after the failover: " << lease.status().to_string());
  }
  CHECK(lease.value().token() > held_token);
  const ClusterTiming t = fx.cluster->config().timing;
  std::printf("lock-delay over a failover: granted %lld ms after the master's death\n",
              static_cast<long long>(ms_between(killed, granted)));
  // Had the new master carried on with the old one's timing, the grant would come
  // less than 2 s after the kill; it waits for the election (the master lease,
  // renewed every heartbeat, must run out first) and then the whole delay.
  CHECK(ms_between(killed, granted) >= static_cast<int64_t>(t.master_lease_ms - t.heartbeat_ms) + 2000 - 100);
}

// ---- e. a restarted node catches up ----

TEST_CASE("lock group: a follower restarted after many commands catches up, and the group survives the master's death",
          "[lockgroup]") {
  constexpr int kSnapshotEvery = 20;
  constexpr int kCycles = 60;  // acquire + release: well over kSnapshotEvery slots
  Fixture fx([](cli::LocalClusterOptions& o) {
    o.lockd_args = {"--snapshot-every", std::to_string(kSnapshotEvery)};
  });
  auto a = fx.client();
  auto kept = a->acquire("kept");
  REQUIRE(kept.is_ok());
  const uint32_t master = fx.master();
  uint32_t follower = 0;
  for (uint32_t id : fx.cluster->lockd_ids()) {
    if (id != master) {
      follower = id;
      break;
    }
  }
  REQUIRE(follower != 0);
  auto at_kill = fx.cluster->lock_status(follower);
  REQUIRE(at_kill);
  fx.cluster->lockd(follower).kill();

  auto b = fx.client();
  uint64_t last = kept.value().token();
  for (int i = 0; i < kCycles; ++i) {
    auto l = b->try_acquire("cycle");
    REQUIRE(l.is_ok());
    CHECK(l.value().token() > last);
    last = l.value().token();
    Lease lease = l.value();
    REQUIRE(b->release(lease).is_ok());
  }
  auto before = fx.cluster->lock_status(master);
  REQUIRE(before);
  INFO("the master applied through slot " << before->applied_slot);
  // Enough slots that the master compacted its log past the follower's place:
  // the follower can only catch up from a snapshot.
  CHECK(before->applied_slot >= at_kill->applied_slot + 2 * kSnapshotEvery);

  Status restarted = fx.cluster->lockd(follower).restart();
  INFO(restarted.to_string());
  REQUIRE(restarted.is_ok());
  // It catches up: applies as far as the master had, and its table holds the lock.
  const bool caught_up = eventually(
      [&] {
        auto s = fx.cluster->lock_status(follower);
        return s && s->applied_slot >= before->applied_slot;
      },
      10s);
  if (!caught_up) {
    INFO(fx.logs());
    FAIL("the restarted follower did not catch up");
  }
  auto info = fx.lock_info(follower, "kept");
  REQUIRE(info);
  CHECK(info->token == kept.value().token());
  CHECK(info->holders == std::vector<uint64_t>{a->session()});

  // Now the master dies: the restarted node and the other follower are the
  // only majority left, and must carry on with the whole table.
  fx.cluster->lockd(master).kill();
  auto new_master = fx.cluster->wait_for_master_other_than(master, 20s);
  if (!new_master) {
    INFO(fx.logs());
    FAIL("no new master after the restart and the master's death");
  }
  std::printf("catch-up: node %u killed at slot %llu, restarted when the master was at slot %llu; "
              "node %u killed, node %u master\n",
              follower, static_cast<unsigned long long>(at_kill->applied_slot),
              static_cast<unsigned long long>(before->applied_slot), master, *new_master);
  auto c = fx.client();
  auto current = c->check_sequencer(kept.value().sequencer());
  REQUIRE(current.is_ok());
  CHECK(current.value());
  CHECK(c->try_acquire("kept").code() == Code::kBusy);
  auto next = c->try_acquire("cycle");
  REQUIRE(next.is_ok());
  CHECK(next.value().token() > last);
  auto after = fx.lock_info(*new_master, "kept");
  REQUIRE(after);
  CHECK(after->token == kept.value().token());
  // The holder's session lived through it all.
  CHECK(eventually([&] { return a->safe(); }, 10s));
  CHECK(kept.value().valid());
}

// Acquires and releases `lock`; the token.
uint64_t cycle(LockClient& client, const std::string& lock) {
  auto l = client.try_acquire(lock);
  REQUIRE(l.is_ok());
  Lease lease = l.value();
  REQUIRE(client.release(lease).is_ok());
  return lease.token();
}

// ---- f. malformed requests ----

// A raw DEALER to one lockd node.
struct RawConnection {
  zmq::context_t ctx{1};
  zmq::socket_t socket;
  explicit RawConnection(const std::string& endpoint)
      : socket(transport::make_dealer(ctx, endpoint, {.queue_until_connected = true})) {}

  std::optional<wire::LockReply> call(const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      auto flags = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
      if (!socket.send(zmq::buffer(frames[i]), flags)) return std::nullopt;
    }
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, 3000ms) <= 0) return std::nullopt;
    zmq::message_t msg;
    if (!socket.recv(msg)) return std::nullopt;
    auto reply = wire::decode_lock_reply({static_cast<const char*>(msg.data()), msg.size()}, 16 << 20);
    if (!reply.is_ok()) return std::nullopt;
    return reply.value();
  }
  std::optional<wire::LockReply> call(const std::string& bytes) { return call(std::vector<std::string>{bytes}); }
  // One frame, no reply expected.
  void send(const std::string& bytes) { REQUIRE(socket.send(zmq::buffer(bytes), zmq::send_flags::none)); }
};

// A request map: the envelope, then `fields` as unsigned integers.
std::string request(uint64_t id, const std::string& type, const std::vector<std::pair<std::string, uint64_t>>& fields = {},
                    uint64_t version = wire::kProtocolVersion) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(static_cast<uint32_t>(3 + fields.size()));
  pk.pack(std::string("v"));
  pk.pack(version);
  pk.pack(std::string("id"));
  pk.pack(id);
  pk.pack(std::string("type"));
  pk.pack(type);
  for (const auto& [name, value] : fields) {
    pk.pack(name);
    pk.pack(value);
  }
  return std::string(buf.data(), buf.size());
}

TEST_CASE("lock group: malformed requests get error replies and the daemons keep serving", "[lockgroup]") {
  Fixture fx;
  const uint32_t master = fx.master();
  for (uint32_t node : fx.cluster->lockd_ids()) {
    INFO("node " << node << (node == master ? " (master)" : " (follower)"));
    RawConnection raw(fx.cluster->lockd(node).endpoint());

    auto garbage = raw.call(std::string("\xc1\xc1 this is not MessagePack", 26));
    REQUIRE(garbage);
    CHECK(garbage->status.code() == Code::kMalformed);
    CHECK(garbage->id == 0);

    auto not_a_map = raw.call(std::string("\x93\x01\x02\x03", 4));  // [1, 2, 3]
    REQUIRE(not_a_map);
    CHECK(not_a_map->status.code() == Code::kMalformed);

    auto unknown = raw.call(request(7, "frobnicate"));
    REQUIRE(unknown);
    CHECK(unknown->status.code() == Code::kUnknownType);
    CHECK(unknown->id == 7);

    auto missing = raw.call(request(8, "acquire", {{"epoch", 1}, {"session", 1}}));  // no call, lock, mode
    REQUIRE(missing);
    CHECK(missing->status.code() == Code::kBadRequest);
    CHECK(missing->id == 8);

    auto extra = raw.call(request(9, "find_master", {{"surprise", 1}}));
    REQUIRE(extra);
    CHECK(extra->status.code() == Code::kBadRequest);
    CHECK(extra->id == 9);

    auto version = raw.call(request(10, "find_master", {}, 99));
    REQUIRE(version);
    CHECK(version->status.code() == Code::kUnsupportedVersion);

    auto frames = raw.call(std::vector<std::string>{request(11, "find_master"), "a second frame"});
    REQUIRE(frames);
    CHECK(frames->status.code() == Code::kMalformed);

    // Still serving, on the same connection.
    auto find = raw.call(request(12, "find_master"));
    REQUIRE(find);
    CHECK(find->id == 12);
    CHECK(find->status.code() == (node == master ? Code::kOk : Code::kNotMaster));
    CHECK(find->master == master);
    CHECK(fx.cluster->lockd(node).running());
  }
  // And the group still grants locks.
  auto c = fx.client();
  CHECK(c->try_acquire("after-the-garbage").is_ok());
}

// ---- f2. forged peer messages ----

// Every type of peer message, with what a forger would put in: node `claimed`
// as sender, rounds at the top of the range, slots far ahead, snapshots and
// values that do not decode, and an empty lock table as a snapshot.
std::vector<lockgroup::PeerBody> forged_bodies(lockgroup::NodeId claimed) {
  using namespace lockgroup;
  const Ballot top = make_ballot((uint64_t{1} << 56) - 1, claimed);
  const Ballot high = make_ballot(1000, claimed);
  const std::string junk = "\xc1 not a batch";
  return {
      Prepare{.ballot = top, .from_slot = 1, .seq = 1},
      Prepare{.ballot = high, .from_slot = 1, .seq = 1},
      Promise{.ballot = high, .ok = true, .promised = top, .seq = 1, .snapshot_slot = 1000,
              .accepted = {{1, high, junk}}},
      Accept{.ballot = top, .seq = 1, .chosen_through = 1000},  // issue #23: a crash loop
      Accept{.ballot = high, .seq = 1, .chosen_through = 1000, .entries = {{1, high, junk}, {2, high, junk}}},
      Accepted{.ballot = high, .ok = false, .promised = top, .seq = 1, .slots = {1, 2}},
      CatchUpRequest{.from_slot = 1},
      CatchUp{.snapshot_slot = 1000, .snapshot = LockTable().snapshot()},  // issue #23: tokens from 1 again
      CatchUp{.snapshot_slot = 1000, .snapshot = junk},
      CatchUp{.snapshot_slot = 0, .snapshot = {}, .chosen = {{1, high, junk}}},
  };
}

TEST_CASE("lock group: forged peer messages from a client socket are dropped, and nothing aborts, tokens go on",
          "[lockgroup]") {
  Fixture fx;
  auto a = fx.client();
  uint64_t last = 0;
  for (int i = 0; i < 3; ++i) last = cycle(*a, "before");
  const uint32_t master = fx.master();
  const uint64_t group = hash64(kGroup);
  // Every node applied those grants first: the forged catch-up below must
  // find a grant counter to take back. (A node that started late waits out a
  // lease before it takes the master's accepts.)
  const auto master_status = fx.cluster->lock_status(master);
  REQUIRE(master_status);
  for (uint32_t node : fx.cluster->lockd_ids()) {
    INFO("node " << node);
    REQUIRE(eventually(
        [&] {
          auto status = fx.cluster->lock_status(node);
          return status && status->applied_slot >= master_status->applied_slot;
        },
        20s));
  }

  // From plain client sockets, to every node: every peer type claiming every
  // other node as sender, unsigned and with a made-up MAC.
  size_t forged = 0;
  for (uint32_t node : fx.cluster->lockd_ids()) {
    RawConnection raw(fx.cluster->lockd(node).endpoint());
    for (uint32_t claimed : fx.cluster->lockd_ids()) {
      if (claimed == node) continue;
      for (lockgroup::PeerBody& body : forged_bodies(claimed)) {
        const std::string bytes =
            lockgroup::encode_peer({.from = claimed, .to = node, .group = group, .body = std::move(body)});
        raw.send(bytes);
        raw.send(bytes + std::string(32, '\x5a'));
        forged += 2;
      }
    }
    // One connection's frames are handled in order: once this is answered, so was every forgery.
    auto find = raw.call(request(99, "find_master"));
    REQUIRE(find);
    CHECK(find->master == master);
  }
  INFO("sent " << forged << " forged peer messages");

  // Signed with the cluster key, as by a buggy peer: a catch-up whose empty
  // table would take the grant counter back, and a message addressed to
  // another node (a replay of one node's message to another) are refused.
  auto key = ClusterKey::load(fx.cluster->key_file());
  REQUIRE(key.is_ok());
  lockgroup::PeerAuth auth(key.value(), kGroup);
  for (uint32_t node : fx.cluster->lockd_ids()) {
    const uint32_t other = node == master ? (master % 3) + 1 : master;
    RawConnection raw(fx.cluster->lockd(node).endpoint());
    lockgroup::CatchUp reset{.snapshot_slot = 1000, .snapshot = lockgroup::LockTable().snapshot(), .chosen = {}};
    raw.send(auth.seal({.from = other, .to = node, .group = group, .body = reset}));
    raw.send(auth.seal({.from = other, .to = 6 - node - other, .group = group, .body = reset}));  // the third node
    REQUIRE(raw.call(request(98, "find_master")));
  }

  for (uint32_t node : fx.cluster->lockd_ids()) {
    INFO("node " << node);
    CHECK(fx.cluster->lockd(node).running());
    const std::string log = fx.cluster->lockd(node).log();
    CHECK_THAT(log, Catch::Contains("forged peer messages so far"));
    CHECK_THAT(log, Catch::Contains("below this node's"));  // the grant counter
    CHECK_THAT(log, Catch::Contains("it is addressed to node"));
    CHECK_THAT(log, !Catch::Contains("check failed"));
    auto status = fx.cluster->lock_status(node);
    REQUIRE(status);
    // No node jumped to slot 1000, took a forged ballot, or follows a forged master.
    CHECK(status->applied_slot < 1000);
    CHECK(lockgroup::ballot_round(status->epoch) < 1000);
    CHECK(status->master == master);
  }
  const uint64_t after = cycle(*a, "after");
  CHECK(after > last);

  // The master dies: the followers that were sent the forged accept campaign
  // (before the fix, the first to do so aborted, and again at every restart).
  fx.cluster->lockd(master).kill();
  auto next = fx.cluster->wait_for_master_other_than(master, 20s);
  if (!next) {
    INFO(fx.logs());
    FAIL("no new master after the forgeries and the master's death");
  }
  auto b = fx.client();
  const uint64_t later = cycle(*b, "later");
  CHECK(later > after);
  // The old master comes back on its data dir and rejoins.
  Status restarted = fx.cluster->lockd(master).restart();
  INFO(restarted.to_string());
  REQUIRE(restarted.is_ok());
  CHECK(cycle(*b, "last") > later);
  for (uint32_t node : fx.cluster->lockd_ids()) CHECK(fx.cluster->lockd(node).running());
}

TEST_CASE("lock group: a burst of refused peer messages is logged at powers of two only", "[lockgroup]") {
  // A peer (or anyone replaying one's frames) that sends refused messages
  // without end must not flood the log, as forged ones cannot.
  Fixture fx;
  const uint32_t master = fx.master();
  const uint32_t node = master % 3 + 1;
  const uint32_t third = 6 - master - node;
  auto key = ClusterKey::load(fx.cluster->key_file());
  REQUIRE(key.is_ok());
  lockgroup::PeerAuth auth(key.value(), kGroup);
  RawConnection raw(fx.cluster->lockd(node).endpoint());
  // Addressed to another node: verified, then refused.
  const std::string frame = auth.seal({.from = master, .to = third, .group = hash64(kGroup),
                                       .body = lockgroup::CatchUpRequest{.from_slot = 1}});
  for (int i = 0; i < 100; ++i) raw.send(frame);
  REQUIRE(raw.call(request(99, "find_master")));  // answered after the 100 were handled
  const std::string log = fx.cluster->lockd(node).log();
  size_t lines = 0;
  for (size_t at = log.find("refused a peer message"); at != std::string::npos;
       at = log.find("refused a peer message", at + 1)) {
    ++lines;
  }
  INFO(log);
  CHECK(lines == 7);  // 1, 2, 4, 8, 16, 32, 64
  CHECK_THAT(log, Catch::Contains("64 peer messages refused so far"));
}

TEST_CASE("lock group: a dead master's heartbeat replayed to the followers does not hold off the election",
          "[lockgroup]") {
  // Peer frames are signed, not encrypted: anyone on the path can copy one of
  // the master's heartbeats and send it again and again. Before each message
  // carried (incarnation, serial), every copy renewed the dead master's lease
  // on the followers and restarted their election timers: no election for as
  // long as the replays went on.
  Fixture fx;
  const uint32_t master = fx.master();
  auto status = fx.cluster->lock_status(master);
  REQUIRE(status);
  auto key = ClusterKey::load(fx.cluster->key_file());
  REQUIRE(key.is_ok());
  lockgroup::PeerAuth auth(key.value(), kGroup);
  // One heartbeat to each follower, stamped newer than anything the master
  // sent (as a copy of its next heartbeat would be), so that the first copy is taken.
  std::vector<std::pair<uint32_t, std::string>> frames;
  for (uint32_t node : fx.cluster->lockd_ids()) {
    if (node == master) continue;
    frames.emplace_back(node, auth.seal({.from = master, .to = node, .group = hash64(kGroup),
                                         .incarnation = ~uint64_t{0} - 1, .serial = 1,
                                         .body = lockgroup::Accept{.ballot = status->epoch, .seq = 1}}));
  }
  fx.cluster->lockd(master).kill();
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0};
  std::thread replayer([&] {
    std::vector<std::unique_ptr<RawConnection>> raws;
    for (const auto& [node, frame] : frames) {
      raws.push_back(std::make_unique<RawConnection>(fx.cluster->lockd(node).endpoint()));
    }
    while (!stop) {
      for (size_t i = 0; i < frames.size(); ++i) {
        (void)raws[i]->socket.send(zmq::buffer(frames[i].second), zmq::send_flags::dontwait);
      }
      ++sent;
      std::this_thread::sleep_for(100ms);  // the pace of the replay, not a wait for anything
    }
  });
  auto next = fx.cluster->wait_for_master_other_than(master, 20s);
  stop = true;
  replayer.join();
  INFO("replayed " << sent.load() << " times");
  if (!next) {
    INFO(fx.logs());
    FAIL("no new master while a heartbeat of the dead master was replayed");
  }
  CHECK(sent.load() > 10);  // the replays went on through the election
  auto after = fx.cluster->lock_status(*next);
  REQUIRE(after);
  CHECK(after->epoch > status->epoch);
}

// ---- f2b. a planned restart of the master (issue #24, bug 2) ----

TEST_CASE("lock group: a master stopped by SIGTERM hands over, and the next grant does not wait out its lease",
          "[lockgroup][step_down]") {
  // A master lease of 8 s: without the hand-over no other node may lead until
  // it has run out on the followers, so the next grant would come 8 s or more
  // after the stop (the crash in "SIGKILL of the master" waits it out).
  Fixture fx([](cli::LocalClusterOptions& o) {
    o.timing.master_lease_ms = 8000;
    o.start_timeout = 40s;
  });
  auto c = fx.client();
  auto first = c->acquire("handover");
  REQUIRE(first.is_ok());
  Lease held = first.value();
  REQUIRE(c->release(held).is_ok());
  const uint32_t old = fx.master();
  const uint64_t epoch = c->epoch();

  const Clock::time_point stopped = Clock::now();
  fx.cluster->lockd(old).stop();
  auto next = c->acquire("handover", {.wait = 20000ms});
  const Clock::time_point granted = Clock::now();
  if (!next.is_ok()) {
    INFO(fx.logs());
    FAIL("acquire after the master's SIGTERM: " << next.status().to_string());
  }
  const int64_t took = ms_between(stopped, granted);
  const int64_t lease_ms = static_cast<int64_t>(fx.cluster->config().timing.master_lease_ms);
  std::printf("hand-over: node %u stopped, a lock granted %lld ms later (master lease %lld ms)\n", old,
              static_cast<long long>(took), static_cast<long long>(lease_ms));
  CHECK(next.value().token() > held.token());
  CHECK(c->epoch() > epoch);
  const uint32_t successor = fx.master();
  CHECK(successor != old);
  const std::string old_log = fx.cluster->lockd(old).log();
  const std::string new_log = fx.cluster->lockd(successor).log();
  INFO(old_log << "\n" << new_log);
  CHECK_THAT(old_log, Catch::Contains("stepping down for a planned stop"));
  CHECK_THAT(old_log, Catch::Contains("stopped cleanly"));
  // The successor campaigned on the step-down; it is the deterministic sign,
  // the time is the measure: half the lease is a wide margin on a loaded machine.
  CHECK_THAT(new_log, Catch::Contains("campaigning for master"));
  CHECK(took < lease_ms / 2);
  // The group goes on with the old master back as a follower.
  REQUIRE(fx.cluster->lockd(old).start_and_wait().is_ok());
  auto again = c->try_acquire("other");
  CHECK(again.is_ok());
}

TEST_CASE("lock group: a follower stopped by SIGTERM just exits", "[lockgroup][step_down]") {
  Fixture fx;
  const uint32_t master = fx.master();
  const uint32_t follower = master % 3 + 1;
  auto status = fx.cluster->lock_status(master);
  REQUIRE(status);
  fx.cluster->lockd(follower).stop();
  const std::string log = fx.cluster->lockd(follower).log();
  INFO(log);
  CHECK_THAT(log, !Catch::Contains("stepping down"));
  CHECK_THAT(log, Catch::Contains("stopped cleanly"));
  auto after = fx.cluster->lock_status(master);
  REQUIRE(after);
  CHECK(after->role == "master");
  CHECK(after->epoch == status->epoch);
}

// ---- f2c. what lockd logs (issue #24, bug 9) ----

TEST_CASE("lock group: the master logs elections, grants, releases, closes and expiries at info",
          "[lockgroup][logs]") {
  Fixture fx;
  const uint32_t master = fx.master();
  auto client = fx.client();
  auto lease = client->acquire("logged", {.mode = LockMode::kShared});
  REQUIRE(lease.is_ok());
  Lease held = lease.value();
  REQUIRE(client->release(held).is_ok());
  // A holder that dies: its session expires with the lock.
  Holder holder(fx, "holder-logs", {"--lock", "expiring"});
  holder.wait_for("ready", 20s);
  holder.process->kill();
  auto log = [&] { return fx.cluster->lockd(master).log(); };
  const bool expired = eventually(
      [&] { return log().find("expired, releasing 1 lock: 'expiring' (with their lock-delays)") != std::string::npos; },
      20s);
  INFO(fx.logs());
  REQUIRE(expired);
  const std::string s = std::to_string(client->session());
  const std::string text = log();
  CHECK_THAT(text, Catch::Contains("campaigning for master, epoch"));
  CHECK_THAT(text, Catch::Contains("master now, epoch"));
  CHECK_THAT(text, Catch::Contains("granted lock 'logged' shared to session " + s + ", token " +
                                   std::to_string(held.token())));
  CHECK_THAT(text, Catch::Contains("released lock 'logged' by session " + s));
  CHECK_THAT(text, Catch::Contains("granted lock 'expiring' exclusive to session"));
  // A clean close says what it released.
  client.reset();
  CHECK(eventually([&] { return log().find("session " + s + " closed, releasing 0 locks") != std::string::npos; },
                   10s));
}

// ---- f3. a long log (issue #24) ----

TEST_CASE("lock group: a node restarted ~2000 slots behind catches up, and long peer messages are read as peers",
          "[lockgroup]") {
  // Issue #24: peer messages were decoded with a client request's limits, so
  // a promise listing more than 64 accepted entries was refused ("too_large:
  // array size overflow"): a node behind a long log could not win an election
  // and catching up took up to a minute.
  constexpr int kCycles = 1000;  // acquire + release: 2000 slots, one each
  Fixture fx;
  const uint32_t master = fx.master();
  std::vector<uint32_t> followers;
  for (uint32_t id : fx.cluster->lockd_ids()) {
    if (id != master) followers.push_back(id);
  }
  REQUIRE(followers.size() == 2);
  const uint32_t behind = followers[0], full = followers[1];
  fx.cluster->lockd(behind).kill();
  uint64_t last = 0;
  {
    auto a = fx.client();
    for (int i = 0; i < kCycles; ++i) last = cycle(*a, "cycle");
  }
  auto at_master = fx.cluster->lock_status(master);
  REQUIRE(at_master);
  INFO("the master applied through slot " << at_master->applied_slot);

  // The master dies as the lagging node comes back: it and `full` elect a
  // master between them. Should `behind` campaign, `full`'s promise lists
  // every entry since `behind`'s applied slot, ~2000 of them.
  fx.cluster->lockd(master).kill();
  REQUIRE(fx.cluster->lockd(behind).restart().is_ok());
  auto first = fx.cluster->lock_status(behind);
  REQUIRE(first);
  CHECK(first->applied_slot + 1000 < at_master->applied_slot);
  auto elected = fx.cluster->wait_for_master_other_than(master, 30s);
  if (!elected) {
    INFO(fx.logs());
    FAIL("no master after the restart behind a long log");
  }
  const bool caught_up = eventually(
      [&] {
        auto s = fx.cluster->lock_status(behind);
        return s && s->applied_slot >= at_master->applied_slot;
      },
      30s);
  if (!caught_up) {
    INFO(fx.logs());
    FAIL("the restarted node did not catch up");
  }
  auto b = fx.client();
  CHECK(cycle(*b, "cycle") > last);

  // Whoever won, a promise of 2000 entries, signed as `full`'s, reaches
  // `behind` (not a candidate now: it ignores it) and is read as a peer message.
  auto key = ClusterKey::load(fx.cluster->key_file());
  REQUIRE(key.is_ok());
  lockgroup::Promise promise{.ballot = lockgroup::make_ballot(1, full), .ok = true, .promised = 0, .seq = 1, .snapshot_slot = 0,
                          .accepted = {}};
  for (lockgroup::Slot slot = 1; slot <= 2000; ++slot) promise.accepted.push_back({slot, promise.ballot, ""});
  lockgroup::PeerAuth auth(key.value(), kGroup);
  RawConnection raw(fx.cluster->lockd(behind).endpoint());
  const std::string frame =
      auth.seal({.from = full, .to = behind, .group = hash64(kGroup), .body = std::move(promise)});
  CHECK(frame.size() > 20000);
  raw.send(frame);
  REQUIRE(raw.call(request(99, "find_master")));  // answered after the promise was handled
  for (uint32_t id : {behind, full}) {
    INFO("node " << id);
    const std::string log = fx.cluster->lockd(id).log();
    CHECK_THAT(log, !Catch::Contains("too_large"));
    CHECK_THAT(log, !Catch::Contains("refused"));
  }
  std::printf("long log: node %u restarted %llu slots behind; master after it: node %u\n", behind,
              static_cast<unsigned long long>(at_master->applied_slot - first->applied_slot), *elected);
}

// ---- g. the command line ----

// Runs palisade-lockd with `args` to its end: {exit status, output}.
std::pair<int, std::string> run_lockd(const TempDir& dir, const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), test::lockd_binary());
  cli::Process p(args, dir.sub(name + ".log"));
  auto status = p.wait(10000);
  if (!status) {
    p.kill();
    FAIL("palisade-lockd " << name << " did not exit; its output:\n" << p.log());
  }
  return {WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status), p.log()};
}

TEST_CASE("lock group: palisade-lockd's command line", "[lockgroup]") {
  TempDir dir;
  auto [help_status, help] = run_lockd(dir, "help", {"--help"});
  CHECK(help_status == 0);
  CHECK_THAT(help, Catch::Contains("--cluster"));
  CHECK_THAT(help, Catch::Contains("--id"));
  CHECK_THAT(help, Catch::Contains("--data-dir"));

  // A valid cluster file, with its key.
  const std::string key_file = dir.sub("cluster.key");
  std::ofstream(key_file) << ClusterKey::generate().to_hex() << "\n";
  ClusterConfig config;
  config.group = "cli";
  config.key_file = key_file;
  config.lockd = {{1, "tcp://127.0.0.1:" + std::to_string(cli::free_port())}};
  config.replicas = {"tcp://127.0.0.1:1"};
  const std::string good = dir.sub("good.toml");
  std::ofstream(good) << format_cluster_config(config);

  SECTION("missing required flags") {
    auto [status, out] = run_lockd(dir, "no-flags", {});
    CHECK(status != 0);
    CHECK_THAT(out, Catch::Contains("--id"));
  }
  SECTION("a cluster file that does not exist") {
    auto [status, out] = run_lockd(dir, "no-file", {"--id", "1", "--cluster", dir.sub("nope.toml"), "--data-dir",
                                                    dir.sub("d")});
    CHECK(status != 0);
    CHECK_THAT(out, Catch::Contains("nope.toml"));
  }
  SECTION("a cluster file that is not TOML") {
    const std::string bad = dir.sub("bad.toml");
    std::ofstream(bad) << "group = \"x\"\n[[lockd]\nid = 1\n";
    auto [status, out] = run_lockd(dir, "bad-toml", {"--id", "1", "--cluster", bad, "--data-dir", dir.sub("d")});
    CHECK(status != 0);
    CHECK_THAT(out, Catch::Contains("bad.toml"));
    CHECK_THAT(out, Catch::Contains("not valid TOML"));
  }
  SECTION("a cluster file with an unknown key") {
    const std::string bad = dir.sub("unknown.toml");
    std::ofstream(bad) << format_cluster_config(config) << "colour = \"blue\"\n";
    auto [status, out] = run_lockd(dir, "unknown-key", {"--id", "1", "--cluster", bad, "--data-dir", dir.sub("d")});
    CHECK(status != 0);
    CHECK_THAT(out, Catch::Contains("unknown key 'colour'"));
  }
  SECTION("an id that is not in the cluster file") {
    auto [status, out] = run_lockd(dir, "unknown-id", {"--id", "9", "--cluster", good, "--data-dir", dir.sub("d")});
    CHECK(status != 0);
    CHECK_THAT(out, Catch::Contains("node 9 is not a lockd node"));
  }
  SECTION("an id out of range") {
    auto [status, out] = run_lockd(dir, "bad-id", {"--id", "0", "--cluster", good, "--data-dir", dir.sub("d")});
    CHECK(status != 0);
    CHECK_THAT(out, Catch::Contains("--id"));
  }
  SECTION("a missing key file") {
    config.key_file = dir.sub("missing.key");
    const std::string keyless = dir.sub("keyless.toml");
    std::ofstream(keyless) << format_cluster_config(config);
    auto [status, out] = run_lockd(dir, "no-key", {"--id", "1", "--cluster", keyless, "--data-dir", dir.sub("d")});
    CHECK(status != 0);
    CHECK_THAT(out, Catch::Contains("missing.key"));
    // Log lines carry their time with its zone (ISO 8601).
    CHECK(std::regex_search(out, std::regex(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d palisade-lockd)")));
  }
  SECTION("a sequencer_public_key that is not the cluster key's") {
    config.sequencer_public_key = SequencerSigner(ClusterKey::generate(), config.group).public_key();
    const std::string other = dir.sub("other-public-key.toml");
    std::ofstream(other) << format_cluster_config(config);
    auto [status, out] = run_lockd(dir, "other-key", {"--id", "1", "--cluster", other, "--data-dir", dir.sub("d")});
    CHECK(status != 0);
    CHECK_THAT(out,
               Catch::Contains("sequencer_public_key " + config.sequencer_public_key + " is not the key of group"));
  }
  SECTION("the sequencer_public_key of the cluster key") {
    config.sequencer_public_key = SequencerSigner(ClusterKey::load(key_file).value(), config.group).public_key();
    const std::string listed = dir.sub("listed.toml");
    std::ofstream(listed) << format_cluster_config(config);
    cli::Process lockd(
        {test::lockd_binary(), "--id", "1", "--cluster", listed, "--data-dir", dir.sub("listed"), "--insecure"},
        dir.sub("listed.log"));
    CHECK(eventually([&] { return lockd.log().find("started") != std::string::npos; }, 10s));
    CHECK_THAT(lockd.log(),
               Catch::Contains("sequencers signed with Ed25519, public key " + config.sequencer_public_key));
    CHECK_THAT(lockd.log(), !Catch::Contains("does not list it"));
  }
  SECTION("a cluster file without identities, so plaintext links, needs --insecure") {
    auto [status, out] = run_lockd(dir, "plaintext", {"--id", "1", "--cluster", good, "--data-dir", dir.sub("plain")});
    CHECK(status == 1);
    CHECK_THAT(out, Catch::Contains("lists no identities") && Catch::Contains("--insecure"));
    CHECK_THAT(out, !Catch::Contains("started"));
    CHECK_FALSE(std::filesystem::exists(dir.sub("plain") + "/data.mdb"));  // refused before it opened its state
    cli::Process insecure(
        {test::lockd_binary(), "--id", "1", "--cluster", good, "--data-dir", dir.sub("plain"), "--insecure"},
        dir.sub("insecure.log"));
    CHECK(eventually([&] { return insecure.log().find("started") != std::string::npos; }, 10s));
    CHECK_THAT(insecure.log(), Catch::Contains("INSECURE (--insecure): plaintext links"));
    // The file lists no public key: the node names the one replicas need.
    CHECK_THAT(insecure.log(), Catch::Contains("(the cluster file does not list it as sequencer_public_key)"));
  }
  SECTION("settings from a config file, as the systemd unit gives them; flags win") {
    std::ofstream(dir.sub("lockd.conf")) << "cluster = \"" << good << "\"\nid = 9\ndata-dir = \"" << dir.sub("conf")
                                         << "\"\ninsecure = true\n";
    auto [status, out] = run_lockd(dir, "conf-id-9", {"--config", dir.sub("lockd.conf")});
    CHECK(status != 0);
    CHECK_THAT(out, Catch::Contains("node 9 is not a lockd node"));  // the file's id was read
    cli::Process lockd({test::lockd_binary(), "--config", dir.sub("lockd.conf"), "--id", "1"}, dir.sub("conf.log"));
    CHECK(eventually([&] { return lockd.log().find("started") != std::string::npos; }, 10s));
    CHECK(std::filesystem::exists(dir.sub("conf") + "/data.mdb"));
  }
  SECTION("a data dir another lockd uses") {
    cli::Process first(
        {test::lockd_binary(), "--id", "1", "--cluster", good, "--data-dir", dir.sub("shared"), "--insecure"},
        dir.sub("first.log"));
    REQUIRE(eventually([&] { return first.log().find("started") != std::string::npos; }, 10s));
    auto [status, out] =
        run_lockd(dir, "second", {"--id", "1", "--cluster", good, "--data-dir", dir.sub("shared"), "--insecure"});
    CHECK(status != 0);
    CHECK_THAT(out, Catch::Contains(dir.sub("shared")));
    CHECK(first.running());
  }
}

}  // namespace
}  // namespace palisade
