// Watches (palisade/watch.h, `palisade watch`) on real processes: what a
// round tells of a prefix, a key and a lock; resuming; a fenced write never
// told; and `palisade watch` processes that see every change of a prefix and
// every grant of a lock, in order, while a replica and the lock group's
// master are killed and restarted. docs/consistency.md, "Watches".
#include "palisade/watch.h"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/process.h"
#include "tests/support/recipe_cluster.h"
#include "tests/support/waiting.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;
using Fixture = test::RecipeCluster;
using Kind = WatchEvent::Kind;

std::vector<WatchEvent> round_of(Watcher& watcher) {
  auto events = watcher.poll();
  REQUIRE(events.is_ok());
  return events.value();
}

TEST_CASE("watch: a prefix's puts and deletes, every version, in order", "[watch][recipes]") {
  Fixture fx;
  auto store = fx.store();
  const WriteResult a1 = store->put("svc/a", "1");
  REQUIRE(a1.status.is_ok());
  REQUIRE(store->put("other", "x").status.is_ok());
  Watcher watcher(*store, {.key = "svc/", .prefix = true});

  // The first round tells what is there now; a round with no change tells nothing.
  auto first = round_of(watcher);
  REQUIRE(first.size() == 1);
  CHECK(first[0].kind == Kind::kPut);
  CHECK(first[0].key == "svc/a");
  CHECK(first[0].value == "1");
  CHECK(first[0].ts == a1.ts);
  CHECK(round_of(watcher).empty());

  const WriteResult b2 = store->put("svc/b", "2");
  REQUIRE(b2.status.is_ok());
  auto second = round_of(watcher);
  REQUIRE(second.size() == 1);
  CHECK(second[0].key == "svc/b");
  CHECK(second[0].ts == b2.ts);

  // Overwritten between two polls: every version, from the replicas' change
  // feeds. Deleted: told with the delete's version.
  const WriteResult a3 = store->put("svc/a", "3");
  REQUIRE(a3.status.is_ok());
  const WriteResult a4 = store->put("svc/a", "4");
  const WriteResult b_gone = store->del("svc/b");
  REQUIRE(a4.status.is_ok());
  REQUIRE(b_gone.status.is_ok());
  REQUIRE(store->put("other", "y").status.is_ok());  // outside the prefix
  REQUIRE(store->put("svc/c", "short-lived").status.is_ok());
  const WriteResult c_gone = store->del("svc/c");
  REQUIRE(c_gone.status.is_ok());
  auto third = round_of(watcher);
  REQUIRE(third.size() == 5);
  CHECK(third[0].kind == Kind::kPut);
  CHECK(third[0].key == "svc/a");
  CHECK(third[0].value == "3");
  CHECK(third[0].ts == a3.ts);
  CHECK(third[1].value == "4");
  CHECK(third[1].ts == a4.ts);
  CHECK(third[2].kind == Kind::kDelete);
  CHECK(third[2].key == "svc/b");
  CHECK(third[2].ts == b_gone.ts);
  CHECK(third[3].kind == Kind::kPut);
  CHECK(third[3].key == "svc/c");
  CHECK(third[3].value == "short-lived");
  CHECK(third[4].kind == Kind::kDelete);
  CHECK(third[4].key == "svc/c");
  CHECK(third[4].ts == c_gone.ts);

  // Written again after its delete: a put, newer than the delete.
  const WriteResult b5 = store->put("svc/b", "5");
  REQUIRE(b5.status.is_ok());
  auto fourth = round_of(watcher);
  REQUIRE(fourth.size() == 1);
  CHECK(fourth[0].kind == Kind::kPut);
  CHECK(fourth[0].ts > b_gone.ts);

  // Another watcher resumed from what this one saw tells only what is newer.
  Watcher resumed(*store, {.key = "svc/", .prefix = true});
  resumed.resume(watcher.seen());
  CHECK(round_of(resumed).empty());
  const WriteResult a6 = store->put("svc/a", "6");
  REQUIRE(a6.status.is_ok());
  auto fifth = round_of(resumed);
  REQUIRE(fifth.size() == 1);
  CHECK(fifth[0].ts == a6.ts);

  // initial = false: the first round only learns.
  Watcher changes_only(*store, {.key = "svc/", .prefix = true, .initial = false});
  CHECK(round_of(changes_only).empty());
  REQUIRE(store->del("svc/a").status.is_ok());
  auto sixth = round_of(changes_only);
  REQUIRE(sixth.size() == 1);
  CHECK(sixth[0].kind == Kind::kDelete);
  CHECK(sixth[0].key == "svc/a");
}

TEST_CASE("watch: rounds without feeds tell each key's newest version", "[watch][recipes]") {
  Fixture fx;
  auto store = fx.store();
  Watcher watcher(*store, {.key = "svc/", .prefix = true, .every_version = false});
  CHECK(round_of(watcher).empty());
  REQUIRE(store->put("svc/a", "1").status.is_ok());
  const WriteResult a2 = store->put("svc/a", "2");
  REQUIRE(a2.status.is_ok());
  REQUIRE(store->put("svc/c", "short-lived").status.is_ok());
  const WriteResult c_gone = store->del("svc/c");  // never seen with its value: told deleted
  REQUIRE(c_gone.status.is_ok());
  auto events = round_of(watcher);
  REQUIRE(events.size() == 2);
  CHECK(events[0].value == "2");
  CHECK(events[0].ts == a2.ts);
  CHECK(events[1].kind == Kind::kDelete);
  CHECK(events[1].ts == c_gone.ts);
}

TEST_CASE("watch: one key, and a fenced write is never told", "[watch][recipes]") {
  Fixture fx;
  auto store = fx.store();
  auto old_client = fx.client(store.get());
  auto new_client = fx.client(store.get());
  Watcher watcher(*store, {.key = "leader"});
  CHECK(round_of(watcher).empty());  // never written

  auto old_lease = old_client->acquire("leadership");
  REQUIRE(old_lease.is_ok());
  REQUIRE(store->put("leader", "old", old_lease.value()).status.is_ok());
  REQUIRE(store->put("leader2", "not watched").status.is_ok());  // the key, not a prefix
  auto first = round_of(watcher);
  REQUIRE(first.size() == 1);
  CHECK(first[0].value == "old");
  CHECK(first[0].lock == "leadership");

  // A holder that stalled: its grant superseded, its late write refused and never told.
  const Fence stalled{old_lease.value().name(), old_lease.value().token(), old_lease.value().sequencer()};
  REQUIRE(old_client->release(old_lease.value()).is_ok());
  auto new_lease = new_client->acquire("leadership");
  REQUIRE(new_lease.is_ok());
  CHECK(store->put("leader", "zombie", stalled).status.code() == Code::kFenced);
  CHECK(round_of(watcher).empty());
  const WriteResult now = store->put("leader", "new", new_lease.value());
  REQUIRE(now.status.is_ok());
  auto second = round_of(watcher);
  REQUIRE(second.size() == 1);
  CHECK(second[0].value == "new");
  CHECK(second[0].ts == now.ts);
  CHECK(second[0].ts.token == new_lease.value().token());
}

TEST_CASE("watch: a lock's holder, by token", "[watch][recipes]") {
  Fixture fx;
  auto store = fx.store();
  auto client = fx.client(store.get());
  LockWatcher watcher(*client, "jobs");
  auto free = watcher.poll();
  REQUIRE(free.is_ok());
  REQUIRE(free.value());
  CHECK_FALSE(free.value()->grant);
  CHECK_FALSE(watcher.poll().value());  // unchanged: nothing told

  auto first = client->acquire("jobs");
  REQUIRE(first.is_ok());
  auto held = watcher.poll();
  REQUIRE(held.is_ok());
  REQUIRE(held.value());
  REQUIRE(held.value()->grant);
  CHECK(held.value()->grant->token == first.value().token());
  CHECK(held.value()->grant->mode == LockMode::kExclusive);
  REQUIRE(client->release(first.value()).is_ok());
  auto released = watcher.poll();
  REQUIRE(released.value());
  CHECK_FALSE(released.value()->grant);

  auto second = client->acquire("jobs");
  REQUIRE(second.is_ok());
  auto again = watcher.poll();
  REQUIRE(again.value());
  REQUIRE(again.value()->grant);
  CHECK(again.value()->grant->token == second.value().token());
  CHECK(second.value().token() > first.value().token());
}

TEST_CASE("watch: palisade watch as a person types it", "[watch][recipes]") {
  Fixture fx;
  auto store = fx.store();
  const WriteResult one = store->put("app/one", "x");
  REQUIRE(one.status.is_ok());
  REQUIRE(store->put("app/two", "y").status.is_ok());
  REQUIRE(store->del("app/two").status.is_ok());  // deleted before the watch: not printed

  // The state now, then --count ends it.
  test::CliRun now = fx.run({"watch", "--prefix", "app/", "--count", "1"});
  CHECK(now.code == 0);
  CHECK(now.out == "put\tapp/one\t" + one.ts.to_string() + "\tx\n");
  test::CliRun key = fx.run({"watch", "app/one", "--count", "1", "-o", "json"});
  CHECK(key.code == 0);
  auto json = nlohmann::json::parse(key.out);
  CHECK(json.at("event") == "put");
  CHECK(json.at("value") == "x");
  CHECK(json.at("timestamp") == one.ts.to_string());
  CHECK(json.at("lock").is_null());
  CHECK(fx.run({"watch", "--lock", "nobody-holds-it", "--count", "1"}).out == "free\n");

  // --only-changes: the value now is not printed; the writer writes until the watcher printed one change.
  auto changes = fx.start("changes.log", {"watch", "app/one", "--only-changes", "--every", "50ms", "--count", "1"});
  int n = 0;
  test::wait_until(
      "the watcher to print a change and exit",
      [&] {
        REQUIRE(store->put("app/one", "v" + std::to_string(++n)).status.is_ok());
        return !changes->running();
      },
      30s);
  auto exited = changes->wait(0);
  REQUIRE(exited);
  CHECK(WEXITSTATUS(*exited) == 0);
  CHECK(changes->log().rfind("put\tapp/one\t", 0) == 0);
  CHECK(changes->log().find("\tx\n") == std::string::npos);

  // Usage errors: nothing to watch, two things, too fast.
  CHECK(fx.run({"watch"}).code == 2);
  CHECK(fx.run({"watch", "app/one", "--prefix", "app/"}).code == 2);
  CHECK(fx.run({"watch", "app/one", "--lock", "l"}).code == 2);
  test::CliRun fast = fx.run({"watch", "app/one", "--every", "1ms"});
  CHECK(fast.code == 2);
  CHECK(fast.out.find("--every must be at least 10ms") != std::string::npos);
}

// The JSON lines a `palisade watch -o json` process printed so far.
std::vector<nlohmann::json> printed(const cli::Process& p) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(p.log());
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.front() == '{') out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

bool printed_value(const cli::Process& p, const std::string& value) {
  for (const auto& e : printed(p)) {
    if (e.value("value", nlohmann::json()) == value) return true;
  }
  return false;
}

bool printed_grant(const cli::Process& p, uint64_t token) {
  for (const auto& e : printed(p)) {
    if (e.at("event") == "held" && e.at("token") == token) return true;
  }
  return false;
}

// Writes of jobs/0..2 under lock "jobs", two at a time, while a replica and
// then the lock group's master are killed and restarted. The writer does not
// wait for the key watcher: it must print every acknowledged version, in
// order, the first of each pair overwritten within milliseconds (a watcher
// on the replicas' change feeds tells every version). After each grant the
// writer waits for the lock watcher to print it (a LockWatcher tells the
// holder a round finds).
TEST_CASE("watch: palisade watch sees every change and grant, in order, across a replica restart and a failover",
          "[watch][recipes]") {
  Fixture fx;
  auto store = fx.store();
  auto client = fx.client(store.get());
  REQUIRE(store->put("jobs/start", "begun").status.is_ok());
  auto keys_process = fx.start("watch-keys.log", {"watch", "--prefix", "jobs/", "--every", "100ms", "-o", "json"});
  auto lock_process = fx.start("watch-lock.log", {"watch", "--lock", "jobs", "--every", "100ms", "-o", "json"});
  cli::Process& keys = *keys_process;
  cli::Process& lock = *lock_process;
  test::wait_until(
      "the lock watcher's first round", [&] { return !printed(lock).empty(); }, 30s);
  test::wait_until(
      "the key watcher's first round", [&] { return printed_value(keys, "begun"); }, 30s);

  std::map<std::string, std::vector<std::string>> acknowledged;  // key -> values written ok, in order
  std::set<std::string> written;  // every value sent, whatever its outcome
  std::vector<uint64_t> tokens;
  std::optional<uint32_t> master;
  std::optional<Fence> zombie;  // step 4's grant, superseded by the next
  for (int step = 0; step < 24; ++step) {
    if (step == 6) fx.cluster->replica(1).kill();
    if (step == 10) REQUIRE(fx.cluster->replica(1).restart().is_ok());
    if (step == 14) {
      master = fx.cluster->wait_for_master(10s);
      REQUIRE(master);
      fx.cluster->lockd(*master).kill();
    }
    if (step == 18) fx.cluster->lockd(*master).start();
    auto lease = client->acquire("jobs", {.wait = 30s});
    REQUIRE(lease.is_ok());
    tokens.push_back(lease.value().token());
    test::wait_until(
        "the lock watcher to print token " + std::to_string(tokens.back()),
        [&] { return printed_grant(lock, tokens.back()); }, 30s);
    const std::string key = "jobs/" + std::to_string(step % 3);
    for (const std::string& value : {"v" + std::to_string(step) + "a", "v" + std::to_string(step)}) {
      written.insert(value);
      if (store->put(key, value, lease.value()).status.is_ok()) acknowledged[key].push_back(value);
    }
    if (step == 4) {
      zombie = Fence{lease.value().name(), lease.value().token(), lease.value().sequencer()};
    }
    (void)client->release(lease.value());
  }
  // The holder of step 4, woken late: refused, and never printed.
  REQUIRE(zombie);
  CHECK(store->put("jobs/0", "zombie", *zombie).status.code() == Code::kFenced);
  const WriteResult last = store->put("jobs/last", "end");
  REQUIRE(last.status.is_ok());
  test::wait_until(
      "the key watcher to print the last write", [&] { return printed_value(keys, "end"); }, 30s);
  keys.signal(SIGINT);
  lock.signal(SIGINT);
  auto keys_exit = keys.wait(10000);
  auto lock_exit = lock.wait(10000);
  REQUIRE(keys_exit);
  REQUIRE(lock_exit);
  CHECK(WIFEXITED(*keys_exit));
  CHECK(WEXITSTATUS(*keys_exit) == 0);
  CHECK(WEXITSTATUS(*lock_exit) == 0);

  // Per key: timestamps strictly increase; every acknowledged value printed,
  // in its order; nothing printed that was not written.
  std::map<std::string, std::vector<std::string>> seen;
  std::map<std::string, std::string> last_ts;
  for (const auto& e : printed(keys)) {
    INFO(e.dump());
    REQUIRE(e.at("event") == "put");
    const std::string key = e.at("key");
    const std::string ts = e.at("timestamp");
    if (last_ts.contains(key)) {
      CHECK(FencedTimestamp::parse(ts).value() > FencedTimestamp::parse(last_ts[key]).value());
    }
    last_ts[key] = ts;
    const std::string value = e.at("value");
    CHECK((written.contains(value) || value == "end" || value == "begun"));
    seen[key].push_back(value);
  }
  for (const auto& [key, values] : acknowledged) {
    INFO(key);
    std::vector<std::string> in_order;
    for (const auto& v : seen[key]) {
      if (std::find(values.begin(), values.end(), v) != values.end()) in_order.push_back(v);
    }
    CHECK(in_order == values);
  }
  // Every grant printed, tokens increasing, none twice.
  std::vector<uint64_t> grants;
  for (const auto& e : printed(lock)) {
    if (e.at("event") == "held") grants.push_back(e.at("token"));
  }
  CHECK(std::is_sorted(grants.begin(), grants.end()));
  CHECK(std::adjacent_find(grants.begin(), grants.end()) == grants.end());
  for (uint64_t t : tokens) CHECK(std::find(grants.begin(), grants.end(), t) != grants.end());
  size_t acked = 0;
  for (const auto& [key, values] : acknowledged) acked += values.size();
  CHECK(acked >= 40);  // the faults left most writes acknowledged
}

}  // namespace
}  // namespace palisade
