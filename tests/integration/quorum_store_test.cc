// QuorumStore against three real palisade-replica processes (N=3, W=2, R=2):
// docs/design.md "Client" and "Fence safety" on real sockets and disks.
#include <catch2/catch.hpp>

#include <atomic>
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include <pthread.h>

#include "palisade/quorum_store.h"
#include "client/replica_connection.h"
#include "auth/cluster_key.h"
#include "auth/config_certificate.h"
#include "auth/sequencer_signer.h"
#include "palisade/sequencer.h"
#include "wire/replica_set.h"
#include "tests/support/sequencers.h"
#include "tests/support/replica_requests.h"
#include "tests/support/replica_process.h"
#include "base/temp_dir.h"
#include "cli/process.h"

namespace palisade {
namespace {

using client::ReplicaConnection;
using test::ReplicaProcess;

struct Cluster {
  TempDir dir;
  std::vector<std::unique_ptr<ReplicaProcess>> replicas;

  // `replica_args` go to every replica; `endpoints` (empty: free ports) are theirs.
  explicit Cluster(std::vector<std::string> replica_args = {}, std::vector<std::string> endpoints = {}) {
    endpoints.resize(3);
    for (int i = 0; i < 3; ++i) {
      replicas.push_back(
          std::make_unique<ReplicaProcess>(dir.sub("r" + std::to_string(i)), replica_args, endpoints[i]));
    }
  }

  // A client; read_quorum 3 makes every read ask all replicas (and repair them all).
  // A successful read at R=3 also proves the client is connected to every replica.
  std::unique_ptr<QuorumStore> store(int read_quorum = 2, int timeout_ms = 1500) {
    QuorumStoreOptions o;
    for (auto& r : replicas) o.replicas.push_back(r->endpoint());
    o.read_quorum = read_quorum;
    o.timeout = std::chrono::milliseconds(timeout_ms);
    auto s = QuorumStore::open(o);
    REQUIRE(s.is_ok());
    return std::move(s).value();
  }

  void stop(int i) { replicas[i]->process().kill(); }
  void start(int i) { replicas[i]->restart(); }

  // The newest version replica i stores for `key`, read directly.
  std::optional<wire::Version> stored(int i, const std::string& key) {
    ReplicaConnection conn(replicas[i]->endpoint());
    auto reply = conn.call(test::read_req(key));
    REQUIRE(reply.is_ok());
    REQUIRE(reply.value().status.is_ok());
    const wire::Version* newest = reply.value().newest();
    return newest != nullptr ? std::optional(*newest) : std::nullopt;
  }
};

size_t threads_of_this_process() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST_CASE("quorum store: stores with equal options share one engine, others share the ZeroMQ context",
          "[quorum_store]") {
  QuorumStoreOptions o;
  o.replicas = {"tcp://127.0.0.1:1", "tcp://127.0.0.1:2", "tcp://127.0.0.1:3"};  // never reached
  auto first = QuorumStore::open(o);
  REQUIRE(first.is_ok());
  const size_t with_one = threads_of_this_process();
  std::vector<std::unique_ptr<QuorumStore>> more;
  auto open = [&](const QuorumStoreOptions& options) {
    auto store = QuorumStore::open(options);
    REQUIRE(store.is_ok());
    more.push_back(std::move(store).value());
  };
  for (int i = 0; i < 3; ++i) open(o);
  CHECK(threads_of_this_process() == with_one);  // the same engine: no thread of their own
  QuorumStoreOptions other = o;
  other.timeout = std::chrono::milliseconds(999);
  open(other);
  open(other);
  CHECK(threads_of_this_process() == with_one + 1);
  // Stores that do not share an engine each add their own I/O thread only,
  // not a context's I/O and reaper threads as well.
  QuorumStoreOptions own = o;
  own.share_connections = false;
  open(own);
  open(own);
  CHECK(threads_of_this_process() == with_one + 3);
  more.clear();
  first.value().reset();
  CHECK(threads_of_this_process() < with_one);  // the last store of an engine stops it
}

TEST_CASE("quorum store: a store sharing an engine works on after the others close", "[quorum_store]") {
  Cluster c;
  auto closing = c.store();
  auto staying = c.store();
  Fence f{"L", 1};
  REQUIRE(closing->fence(f).status.is_ok());
  REQUIRE(closing->put("k", "v1", f).status.is_ok());
  closing.reset();
  REQUIRE(staying->put("k", "v2", f).status.is_ok());
  ReadResult r = staying->get("k");
  REQUIRE(r.status.is_ok());
  CHECK(r.value == "v2");
}

TEST_CASE("quorum store: closing a store that shares its engine waits for its asynchronous calls", "[quorum_store]") {
  Cluster c;
  auto closing = c.store(2, 800);
  auto staying = c.store(2, 800);
  Fence f{"L", 1};
  REQUIRE(closing->fence(f).status.is_ok());
  c.stop(1);
  c.stop(2);
  // One replica up: the put can only end at its timeout, 800 ms on.
  std::future<WriteResult> put = closing->put_async("k", "v", f);
  REQUIRE(put.wait_for(std::chrono::seconds(0)) != std::future_status::ready);
  closing.reset();
  REQUIRE(put.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
  CHECK(put.get().status.code() == Code::kUnavailable);  // fewer than W answered by the timeout
  CHECK(staying->get("k").status.code() != Code::kOk);  // the engine still serves the other store
}

TEST_CASE("quorum store: put, get, delete with all replicas up", "[quorum_store]") {
  Cluster c;
  auto store = c.store();
  Fence f{"L", 1};
  REQUIRE(store->fence(f).status.is_ok());
  WriteResult w = store->put("k", "v1", f);
  REQUIRE(w.status.is_ok());
  CHECK(w.ts.token == 1);
  ReadResult r = store->get("k");
  REQUIRE(r.status.is_ok());
  CHECK(r.found);
  CHECK(r.value == "v1");
  CHECK(r.lock == "L");
  CHECK(r.ts == w.ts);
  REQUIRE(store->put("k", "v2", f).status.is_ok());
  CHECK(store->get("k").value == "v2");
  REQUIRE(store->del("k", f).status.is_ok());
  ReadResult gone = store->get("k");
  REQUIRE(gone.status.is_ok());
  CHECK_FALSE(gone.found);
  CHECK_FALSE(store->get("never-written").found);
}

TEST_CASE("quorum store: refuses quorums that cannot meet", "[quorum_store]") {
  QuorumStoreOptions o;
  o.replicas = {"tcp://127.0.0.1:1", "tcp://127.0.0.1:2", "tcp://127.0.0.1:3"};
  o.read_quorum = 1;
  o.write_quorum = 2;
  CHECK(QuorumStore::open(o).code() == Code::kBadRequest);  // R + W <= N
  o.read_quorum = 3;
  o.write_quorum = 1;
  CHECK(QuorumStore::open(o).code() == Code::kBadRequest);  // W <= N / 2
  o.write_quorum = 4;
  CHECK(QuorumStore::open(o).code() == Code::kBadRequest);  // W > N
  o.write_quorum = 2;
  o.timeout = std::chrono::milliseconds(-1);
  CHECK(QuorumStore::open(o).code() == Code::kBadRequest);
  o.timeout = std::chrono::milliseconds(100);
  o.hedge_after = std::chrono::milliseconds(-5);
  CHECK(QuorumStore::open(o).code() == Code::kBadRequest);
}

TEST_CASE("quorum store: with no replicas, it needs a lock group that records a set", "[quorum_store]") {
  QuorumStoreOptions o;
  auto none = QuorumStore::open(o);
  CHECK(none.code() == Code::kBadRequest);
  CHECK_THAT(none.status().message(), Catch::Contains("needs its replicas, or the lock group that records them"));
  // Nothing listens at the lock group's endpoint: nothing to send to, said at once.
  o.lock_group = {"tcp://127.0.0.1:" + std::to_string(cli::free_port())};
  o.timeout = std::chrono::milliseconds(200);
  auto silent = QuorumStore::open(o);
  CHECK(silent.code() == Code::kUnavailable);
  CHECK_THAT(silent.status().message(), Catch::Contains("no lock group node answered get_replicas (1 asked)"));
}

TEST_CASE("quorum store: one replica down, writes and reads succeed", "[quorum_store]") {
  Cluster c;
  auto store = c.store();
  c.stop(2);
  for (int i = 0; i < 5; ++i) {
    std::string key = "k" + std::to_string(i);
    REQUIRE(store->put(key, "v" + std::to_string(i)).status.is_ok());
    ReadResult r = store->get(key);
    REQUIRE(r.status.is_ok());
    CHECK(r.value == "v" + std::to_string(i));
  }
}

TEST_CASE("quorum store: two replicas down, Unavailable, and the failed write never appears", "[quorum_store]") {
  Cluster c;
  auto store = c.store(2, 500);
  REQUIRE(store->put("k", "old").status.is_ok());
  c.stop(1);
  c.stop(2);
  WriteResult w = store->put("k", "failed");
  CHECK(w.status.code() == Code::kUnavailable);
  CHECK(store->get("k").status.code() == Code::kUnavailable);
  c.start(1);
  c.start(2);
  for (int i = 0; i < 3; ++i) {  // every read, whichever replicas it asks first
    ReadResult r = store->get("k");
    REQUIRE(r.status.is_ok());
    CHECK(r.value == "old");
  }
}

TEST_CASE("quorum store: DDIA figure 9-7, the older holder's late write reaches only replica 3", "[quorum_store]") {
  Cluster c;
  auto a = c.store(3);
  auto b = c.store();
  Fence old_fence{"L", 1}, new_fence{"L", 2};
  REQUIRE(a->fence(old_fence).status.is_ok());
  REQUIRE(a->put("k", "from A", old_fence).status.is_ok());
  c.stop(2);  // replica 3 is down while B takes over and writes
  REQUIRE(b->fence(new_fence).status.is_ok());
  REQUIRE(b->put("k", "from B", new_fence).status.is_ok());
  c.start(2);
  REQUIRE(a->get("probe").status.is_ok());  // A has reconnected to replica 3 (R=3)
  // A's late write: replicas 1 and 2 refuse it by their fence floor, replica 3 takes it.
  WriteResult late = a->put("k", "late from A", old_fence);
  CHECK(late.status.code() == Code::kFenced);
  CHECK(late.floor == 2);
  REQUIRE(c.stored(2, "k"));
  CHECK(c.stored(2, "k")->value == "late from A");
  ReadResult r = c.store(3)->get("k");
  REQUIRE(r.status.is_ok());
  CHECK(r.value == "from B");
  CHECK(r.ts.token == 2);
  for (int i = 0; i < 3; ++i) CHECK(c.stored(i, "k")->value == "from B");  // replica 3 repaired
}

TEST_CASE("quorum store: a superseded holder's write of a key the new holder never wrote is never visible",
          "[quorum_store]") {
  Cluster c;
  auto a = c.store(3);
  auto b = c.store();
  Fence old_fence{"L", 1}, new_fence{"L", 2};
  REQUIRE(a->fence(old_fence).status.is_ok());
  c.stop(2);
  REQUIRE(b->fence(new_fence).status.is_ok());
  c.start(2);
  REQUIRE(a->get("fresh").status.is_ok());  // A has reconnected to replica 3 (R=3)
  WriteResult late = a->put("fresh", "late from A", old_fence);
  CHECK(late.status.code() == Code::kFenced);
  // Fenced is answered once two refusals make W impossible; replica 3 may still
  // be storing the write as pending.
  auto stored_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!c.stored(2, "fresh") && std::chrono::steady_clock::now() < stored_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(c.stored(2, "fresh"));  // replica 3 took it as pending
  for (int reads = 0; reads < 3; ++reads) {
    ReadResult r = c.store(reads == 0 ? 3 : 2)->get("fresh");
    REQUIRE(r.status.is_ok());
    CHECK_FALSE(r.found);
  }
  // The first read, which asked every replica, purged it (purges are not awaited).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (c.stored(2, "fresh") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK_FALSE(c.stored(2, "fresh"));
}

TEST_CASE("quorum store: a read repairs replicas that answered older", "[quorum_store]") {
  Cluster c;
  auto store = c.store();
  c.stop(0);
  REQUIRE(store->put("k", "v").status.is_ok());
  c.start(0);
  CHECK_FALSE(c.stored(0, "k"));
  REQUIRE(c.store(3)->get("k").value == "v");
  REQUIRE(c.stored(0, "k"));
  CHECK(c.stored(0, "k")->value == "v");
  CHECK(c.stored(0, "k")->state == wire::VersionState::kCommitted);
}

// What gets of every key under `prefix` among `keys` return: key -> value.
std::map<std::string, std::string> by_gets(QuorumStore& store, const std::set<std::string>& keys,
                                           const std::string& prefix) {
  std::map<std::string, std::string> out;
  for (const std::string& key : keys) {
    if (!key.starts_with(prefix)) continue;
    ReadResult r = store.get(key);
    REQUIRE(r.status.is_ok());
    if (r.found) out[key] = r.value;
  }
  return out;
}

// Every page of a prefix read of `limit` keys: key -> value, in the order returned.
std::vector<std::pair<std::string, std::string>> scan_all(QuorumStore& store, const std::string& prefix, size_t limit) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string after;
  for (;;) {
    ScanResult page = store.scan(prefix, after, limit);
    INFO(page.status.to_string());
    REQUIRE(page.status.is_ok());
    REQUIRE(page.entries.size() <= limit);
    for (KeyValue& e : page.entries) out.emplace_back(e.key, e.value);
    if (page.next.empty()) return out;
    REQUIRE(page.next > after);
    after = page.next;
  }
}

TEST_CASE("quorum store: prefix reads return what gets of the same keys return", "[quorum_store][scan]") {
  Cluster c;
  // Pages of 1,500 keys and 1.2 MB of values: under TSan on two busy cores a
  // page can take longer than the default 1.5 s to list.
  auto store = c.store(2, 15000);
  std::set<std::string> keys;
  auto put_many = [&](const std::string& prefix, int count, const std::string& value) {
    std::vector<std::future<WriteResult>> puts;
    for (int i = 0; i < count; ++i) {
      keys.insert(prefix + std::to_string(i));
      puts.push_back(store->put_async(prefix + std::to_string(i), value + std::to_string(i)));
    }
    for (auto& p : puts) REQUIRE(p.get().status.is_ok());
  };
  put_many("jobs/", 1500, "v");  // more than a replica lists at once
  put_many("jobsx/", 20, "other prefix ");
  put_many("jobs/big/", 3, std::string(400 << 10, 'b'));  // past one reply's budget together
  // Replica 0 misses some writes and deletes: replicas differ, and reads repair.
  c.stop(0);
  put_many("jobs/late/", 30, "late ");
  for (int i = 0; i < 100; i += 3) REQUIRE(store->del("jobs/" + std::to_string(i)).status.is_ok());
  c.start(0);
  // A superseded holder's write is refused, and no read returns it.
  REQUIRE(store->fence({"L", 2}).status.is_ok());
  REQUIRE(store->put("jobs/fenced", "mine", {"L", 2}).status.is_ok());
  CHECK(store->put("jobs/fenced", "late", {"L", 1}).status.code() == Code::kFenced);
  keys.insert("jobs/fenced");

  const auto expected = by_gets(*store, keys, "jobs/");
  REQUIRE(expected.size() == 1500 + 3 + 30 + 1 - 34);
  for (size_t limit : {size_t{1000}, size_t{7}, size_t{5000}}) {
    INFO("limit " << limit);
    const auto pages = scan_all(*store, "jobs/", limit);
    CHECK(std::map<std::string, std::string>(pages.begin(), pages.end()) == expected);
    CHECK(std::is_sorted(pages.begin(), pages.end()));
    CHECK(pages.size() == expected.size());  // each key once
  }
  CHECK(scan_all(*store, "jobs/big/", 1).size() == 3);
  CHECK(store->scan_async("jobsx/").get().entries.size() == 20);
  CHECK(store->scan("nothing/").entries.empty());
  CHECK(store->scan("jobs/", "", 0).status.code() == Code::kBadRequest);
  CHECK(store->scan(std::string(600, 'k')).status.code() == Code::kTooLarge);
  CHECK(store->scan("jobs/", std::string(600, 'k')).status.code() == Code::kTooLarge);
  // One replica down: two still list.
  c.stop(1);
  const auto one_down = scan_all(*store, "jobs/late/", 1000);
  CHECK(one_down.size() == 30);
  CHECK(store->counters().scans[Code::kOk] >= 5);
  CHECK(store->counters().scans[Code::kBadRequest] == 1);
  CHECK(store->counters().scans[Code::kTooLarge] == 2);
}

TEST_CASE("quorum store: a blocking put's held-back commit reaches every replica that stored it, with no further call",
          "[quorum_store]") {
  Cluster c;
  auto store = c.store();
  REQUIRE(store->put("k", "v").status.is_ok());
  // The store stays open and idle: the process's SendSweeper sends the commit once due.
  // The put returned after W = 2 acknowledgements; on a loaded machine the
  // third replica's write may not have been sent yet, and that replica learns
  // the version from a later read or anti-entropy. Every replica that stored
  // it as pending must see it committed, and at least W must hold it.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto all_committed = [&] {
    int holding = 0;
    for (int i = 0; i < 3; ++i) {
      auto v = c.stored(i, "k");
      if (!v) continue;
      if (v->state != wire::VersionState::kCommitted) return false;
      ++holding;
    }
    return holding >= 2;
  };
  while (!all_committed() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(all_committed());
}

TEST_CASE("quorum store: many asynchronous operations in flight from one thread", "[quorum_store]") {
  Cluster c;
  auto store = c.store();
  std::vector<std::future<WriteResult>> puts;
  for (int i = 0; i < 200; ++i) puts.push_back(store->put_async("k" + std::to_string(i), std::to_string(i)));
  for (auto& f : puts) REQUIRE(f.get().status.is_ok());
  std::vector<std::future<ReadResult>> gets;
  for (int i = 0; i < 200; ++i) gets.push_back(store->get_async("k" + std::to_string(i)));
  for (int i = 0; i < 200; ++i) CHECK(gets[i].get().value == std::to_string(i));
}

TEST_CASE("quorum store: blocking calls from many threads at once", "[quorum_store]") {
  Cluster c;
  auto store = c.store();
  for (int i = 0; i < 20; ++i) REQUIRE(store->put("k" + std::to_string(i), std::to_string(i)).status.is_ok());
  // One caller at a time runs its call on its own thread; the others go through the I/O thread.
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        right += store->get("k" + std::to_string(i)).value == std::to_string(i);
        const std::string mine = "t" + std::to_string(t) + "-" + std::to_string(i);
        right += store->put(mine, mine).status.is_ok();
        right += store->get(mine).value == mine;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(right == 240);
}

extern "C" void ignore_usr1(int /*signal*/) {}

TEST_CASE("quorum store: blocking calls go on while their thread catches signals", "[quorum_store]") {
  // An application's handler (SIGTERM, SIGCHLD) interrupts poll(2), which is
  // never restarted, and ZeroMQ's send and recv even without waiting (EINTR):
  // the call must go on, not end `internal` with its write sent and no
  // timestamp to tell it by. Signals every 50 us over 300 calls: without
  // transport::recv one fails in most runs.
  Cluster c;
  auto store = c.store();
  struct sigaction action = {};
  action.sa_handler = ignore_usr1;  // no SA_RESTART
  struct sigaction before = {};
  REQUIRE(sigaction(SIGUSR1, &action, &before) == 0);
  std::atomic<bool> done{false};
  std::atomic<int> sent{0};
  const pthread_t caller = pthread_self();
  std::thread signaller([&] {
    while (!done) {
      pthread_kill(caller, SIGUSR1);
      ++sent;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::vector<std::string> wrong;
  try {
    for (int i = 0; i < 300; ++i) {
      const std::string key = "k" + std::to_string(i);
      const WriteResult put = store->put(key, key);
      if (!put.status.is_ok()) wrong.push_back("put " + key + ": " + put.status.to_string());
      const ReadResult got = store->get(key);
      if (!got.status.is_ok() || got.value != key) {
        wrong.push_back("get " + key + ": " + got.status.to_string() + " '" + got.value + "'");
      }
    }
  } catch (const std::exception& e) {
    wrong.push_back(std::string("threw: ") + e.what());
  }
  done = true;
  signaller.join();
  sigaction(SIGUSR1, &before, nullptr);
  CHECK(wrong == std::vector<std::string>{});
  CHECK(sent > 100);
}

TEST_CASE("quorum store: oversize keys and values are refused before sending", "[quorum_store]") {
  Cluster c;
  auto store = c.store();
  CHECK(store->put(std::string(2000, 'k'), "v").status.code() == Code::kTooLarge);
  CHECK(store->put("k", std::string((1 << 20) + 1, 'v')).status.code() == Code::kTooLarge);
  CHECK(store->put("", "v").status.code() == Code::kBadRequest);
  CHECK(store->put("k", "v", Fence{"", 3}).status.code() == Code::kBadRequest);
}

TEST_CASE("quorum store: a fenced get, blocking or not, fences the lock on the replicas it reads", "[quorum_store]") {
  Cluster c;
  auto store = c.store();
  const Fence first{"L", 1}, second{"L", 2};
  REQUIRE(store->fence(first).status.is_ok());
  REQUIRE(store->put("k", "v", first).status.is_ok());
  SECTION("async") {
    ReadResult read = store->get_async("k", second).get();
    REQUIRE(read.status.is_ok());
    CHECK(read.value == "v");
  }
  SECTION("blocking") {
    ReadResult read = store->get("k", second);
    REQUIRE(read.status.is_ok());
    CHECK(read.value == "v");
  }
  // R replicas (a majority) now hold floor 2: the first grant's writes can never reach W.
  WriteResult late = store->put("k", "late", first);
  CHECK(late.status.code() == Code::kFenced);
  CHECK(late.floor == 2);
  CHECK(store->get("k").value == "v");
  CHECK(store->get_async("k", Fence{"L", 0}).get().status.code() == Code::kBadRequest);  // half a fence
}

TEST_CASE("quorum store: counters count each store's calls by kind and outcome", "[quorum_store]") {
  Cluster c;
  auto store = c.store();
  auto other = c.store();  // shares the engine, not the counters
  Fence old_fence{"L", 1}, new_fence{"L", 2};
  REQUIRE(store->put("k", "v").status.is_ok());
  REQUIRE(store->get("k").status.is_ok());
  REQUIRE(store->get_async("missing").get().status.is_ok());
  REQUIRE(store->fence(new_fence).status.is_ok());
  CHECK(store->put("k", "late", old_fence).status.code() == Code::kFenced);
  CHECK(store->put_async("k", std::string((1 << 20) + 1, 'v')).get().status.code() == Code::kTooLarge);
  REQUIRE(store->del_async("k", new_fence).get().status.is_ok());
  REQUIRE(other->put("elsewhere", "v").status.is_ok());

  const StoreCounters n = store->counters();
  CHECK(n.puts[Code::kOk] == 1);
  CHECK(n.puts[Code::kFenced] == 1);
  CHECK(n.puts[Code::kTooLarge] == 1);
  CHECK(n.puts.total() == 3);
  CHECK(n.gets[Code::kOk] == 2);
  CHECK(n.gets.total() == 2);
  CHECK(n.fences[Code::kOk] == 1);
  CHECK(n.deletes[Code::kOk] == 1);
  CHECK(other->counters().puts.total() == 1);
}

TEST_CASE("quorum store: replicas with the cluster key take signed sequencers only", "[quorum_store][sequencer]") {
  TempDir keys;
  const ClusterKey key = ClusterKey::generate();
  const test::KeyedClusterFile file = test::write_keyed_cluster_file(keys.path(), "qs", key, 3);
  Cluster c({"--cluster", file.path}, file.replicas);
  auto store = c.store();
  auto good = Fence::from_sequencer(sign_sequencer({"qs", "L", LockMode::kExclusive, 4}, key));
  REQUIRE(good.is_ok());
  CHECK(good.value().lock == "L");
  CHECK(good.value().token == 4);
  REQUIRE(store->fence(good.value()).status.is_ok());
  REQUIRE(store->put("k", "v", good.value()).status.is_ok());

  auto forged =
      Fence::from_sequencer(sign_sequencer({"qs", "L", LockMode::kExclusive, 1ull << 62}, ClusterKey::generate()));
  REQUIRE(forged.is_ok());
  for (const Fence& bad : {forged.value(), Fence{"L", 5}}) {
    CHECK(store->fence(bad).status.code() == Code::kBadSequencer);
    WriteResult w = store->put("k", "evil", bad);
    CHECK(w.status.code() == Code::kBadSequencer);
    CHECK(store->del("k", bad).status.code() == Code::kBadSequencer);
  }
  CHECK(store->put("plain", "v").status.is_ok());  // unfenced: no sequencer
  ReadResult r = store->get("k");
  REQUIRE(r.status.is_ok());
  CHECK(r.value == "v");
  CHECK(r.ts.token == 4);
  // The holder of the next grant fences and writes.
  auto next = Fence::from_sequencer(sign_sequencer({"qs", "L", LockMode::kExclusive, 5}, key));
  REQUIRE(store->fence(next.value()).status.is_ok());
  REQUIRE(store->put("k", "v2", next.value()).status.is_ok());
  CHECK(store->put("k", "late", good.value()).status.code() == Code::kFenced);
  CHECK(Fence::from_sequencer("garbage").code() == Code::kBadSequencer);
  CHECK(store->put("k", "x", Fence{"L", 5, std::string(1025, 's')}).status.code() == Code::kTooLarge);
}

// A store whose replicas check sequencers and config certificates with
// `key`'s group "qs", and whose options name replicas 0..2 of `file`.
std::unique_ptr<QuorumStore> following_store(const test::KeyedClusterFile& file, const ClusterKey& checked_with) {
  QuorumStoreOptions o;
  o.replicas = {file.replicas[0], file.replicas[1], file.replicas[2]};
  o.timeout = std::chrono::milliseconds(3000);
  SequencerSigner signer(checked_with, "qs");
  auto verifier = SequencerVerifier::create("qs", signer.public_key());
  REQUIRE(verifier.is_ok());
  o.config_check = ConfigCheck{signer.public_key(), [v = verifier.value()](std::string_view m, std::string_view sig) {
                                 return v.signature_verifies(m, sig);
                               }};
  auto s = QuorumStore::open(o);
  REQUIRE(s.is_ok());
  return std::move(s).value();
}

// The newest version of `key` replica `endpoint` keeps, asked as a client of
// replica set `config`.
std::optional<wire::Version> kept_by(const std::string& endpoint, const std::string& key, uint64_t config) {
  ReplicaConnection conn(endpoint);
  wire::ReplicaRequest read = test::read_req(key);
  read.config = config;
  auto reply = conn.call(read);
  REQUIRE(reply.is_ok());
  INFO(reply.value().status.to_string());
  REQUIRE(reply.value().status.is_ok());
  const wire::Version* newest = reply.value().newest();
  return newest != nullptr ? std::optional(*newest) : std::nullopt;
}

TEST_CASE("quorum store: it follows the replica set the replicas hand back, and installs it on the new replicas",
          "[quorum_store][config]") {
  TempDir dir;
  const ClusterKey key = ClusterKey::generate();
  const test::KeyedClusterFile file = test::write_keyed_cluster_file(dir.path(), "qs", key, 4);
  std::vector<std::unique_ptr<ReplicaProcess>> replicas;
  for (int i = 0; i < 4; ++i) {
    replicas.push_back(std::make_unique<ReplicaProcess>(
        dir.sub("r" + std::to_string(i)), std::vector<std::string>{"--cluster", file.path}, file.replicas[i]));
  }
  auto store = following_store(file, key);
  auto impostor = following_store(file, ClusterKey::generate());  // checks with another group's key
  REQUIRE(store->put("before", "v").status.is_ok());
  // The new set below is installed without the fill a replacement makes:
  // "before" must be on both replicas that stay, not only on W of the old
  // set (the write answered once replicas 1 and 2 had it, say).
  const auto stored_by_0_and_1 = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((!kept_by(file.replicas[0], "before", 0) || !kept_by(file.replicas[1], "before", 0)) &&
         std::chrono::steady_clock::now() < stored_by_0_and_1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(kept_by(file.replicas[0], "before", 0));
  REQUIRE(kept_by(file.replicas[1], "before", 0));
  CHECK(store->replica_set().version == 0);
  CHECK(store->replica_set().replicas == std::vector<std::string>(file.replicas.begin(), file.replicas.begin() + 3));

  // The lock group moves the set (replica 3 replaces replica 2), and two of
  // the old replicas install it: a write to the old set can no longer reach W.
  const SequencerSigner signer(key, "qs");
  auto set_of = [&](uint64_t version, uint32_t w) {
    return wire::ReplicaSet{.version = version,
                            .replicas = {{1, file.replicas[0]}, {2, file.replicas[1]}, {4, file.replicas[3]}},
                            .write_quorum = w,
                            .read_quorum = 2};
  };
  auto install = [&](int i, const wire::ReplicaSet& set) {
    REQUIRE(test::install_config_on(file.replicas[i], sign_config_certificate(signer, set)).is_ok());
  };
  for (int i : {0, 1}) install(i, set_of(1, 2));

  // The I/O thread's lane meets the change first, with this call in flight.
  WriteResult moved = store->put_async("k", "after").get();
  INFO(moved.status.to_string());
  REQUIRE(moved.status.is_ok());
  ReadResult read = store->get("k");  // the direct lane starts on the new set
  REQUIRE(read.status.is_ok());
  CHECK(read.value == "after");
  const ReplicaSetInUse now = store->replica_set();
  CHECK(now.version == 1);
  CHECK(now.replicas == std::vector<std::string>{file.replicas[0], file.replicas[1], file.replicas[3]});
  CHECK(now.write_quorum == 2);
  ReadResult before = store->get("before");
  REQUIRE(before.status.is_ok());
  CHECK(before.value == "v");

  // Replica 3 got the certificate from the store (and the write again, unless
  // W had acknowledged it first: then anti-entropy brings it). Replica 2,
  // left out, got the first try on the old set only, which never committed.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (test::config_version_of(file.replicas[3]) != 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(test::config_version_of(file.replicas[3]) == 1);
  CHECK(test::config_version_of(file.replicas[2]) == 0);
  auto left = kept_by(file.replicas[2], "k", 0);
  CHECK((!left || left->state == wire::VersionState::kPending));

  // A store that cannot check the certificate does not follow it.
  WriteResult refused = impostor->put("k", "impostor's");
  CHECK(refused.status.code() == Code::kUnavailable);
  CHECK_THAT(refused.status.message(), Catch::Contains("stale_config"));

  // A blocking call meets the next change (W 3 of 3) itself.
  for (int i : {0, 1, 3}) install(i, set_of(2, 3));
  REQUIRE(store->put("k", "third").status.is_ok());
  for (int i : {0, 1, 3}) {
    CAPTURE(i);
    CHECK(kept_by(file.replicas[i], "k", 2).has_value());  // W = 3: all of them acknowledged it
  }
  ReadResult third = store->get_async("k").get();
  REQUIRE(third.status.is_ok());
  CHECK(third.value == "third");
}

}  // namespace
}  // namespace palisade
