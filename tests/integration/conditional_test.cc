// Conditional writes (palisade/conditional.h, `put --if-absent`,
// `--if-version`) on real processes: the library's answers, and a concurrent
// compare-and-set workload of `palisade` processes, some killed mid-call,
// with the lock group's master and a replica killed and restarted, judged by
// the linearizability checker (tests/support/register_history.h).
// docs/consistency.md, "Conditional writes".
#include "palisade/conditional.h"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/temp_dir.h"
#include "cli/process.h"
#include "tests/support/recipe_cluster.h"
#include "tests/support/register_history.h"
#include "tests/support/waiting.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;
using test::RegisterOp;

using Fixture = test::RecipeCluster;

TEST_CASE("conditional: put-if-absent and compare-and-set write once per version", "[conditional][recipes]") {
  Fixture fx;
  auto store = fx.store();
  auto a = fx.client(store.get());
  auto b = fx.client(nullptr);  // the conditional write fences the store itself
  ConditionalStore ca(*a, *store);
  ConditionalStore cb(*b, *store);

  ConditionalResult first = ca.put("config", "v1", Expect::absent());
  REQUIRE(first.status.is_ok());
  CHECK_FALSE(first.current.found);
  // Absent no more: the second put-if-absent writes nothing and says what is there.
  ConditionalResult second = cb.put("config", "other", Expect::absent());
  CHECK(second.status.code() == Code::kStale);
  CHECK(second.current.found);
  CHECK(second.current.value == "v1");
  CHECK(second.current.ts == first.ts);
  // The write is under the key's own lock, token first.
  ReadResult now = store->get("config");
  CHECK(now.lock == ConditionalStore::lock_for("config"));
  CHECK(now.ts == first.ts);

  // Two compare-and-sets from one version: the first wins, the second is stale.
  ConditionalResult swapped = cb.put("config", "v2", Expect::at(first.ts));
  REQUIRE(swapped.status.is_ok());
  CHECK(swapped.ts > first.ts);
  CHECK(ca.put("config", "v2'", Expect::at(first.ts)).status.code() == Code::kStale);
  CHECK(store->get("config").value == "v2");
  // A plain write over it is refused (written under a lock); a delete at the right version works.
  CHECK(store->put("config", "plain").status.code() == Code::kFenced);
  CHECK(ca.del("config", Expect::at(first.ts)).status.code() == Code::kStale);
  REQUIRE(ca.del("config", Expect::at(swapped.ts)).status.is_ok());
  CHECK_FALSE(store->get("config").found);
  CHECK(ca.put("config", "v3", Expect::absent()).status.is_ok());

  // A key too long for a lock name gets a lock named by its hash.
  const std::string long_key(400, 'k');
  const std::string lock = ConditionalStore::lock_for(long_key);
  CHECK(lock.rfind(ConditionalStore::kLockPrefix, 0) == 0);
  CHECK(lock.size() <= 256);
  CHECK(lock != ConditionalStore::lock_for(std::string(399, 'k') + "j"));
  CHECK(ca.put(long_key, "x", Expect::absent()).status.is_ok());

  // The key's lock held elsewhere: busy within the wait, nothing written.
  auto held = b->acquire(ConditionalStore::lock_for("busy"));
  REQUIRE(held.is_ok());
  ConditionalStore impatient(*a, *store, {.wait = 300ms});
  CHECK(impatient.put("busy", "x", Expect::absent()).status.code() == Code::kTimeout);
  CHECK_FALSE(store->get("busy").found);
}

// Its client not given the store, the conditional write fences the key's
// lock itself (its fenced read): even one that writes nothing, because the
// key is not as expected, leaves a stalled earlier holder's write refused.
TEST_CASE("conditional: a compare-and-set fences the key's lock when its client does not", "[conditional][recipes]") {
  Fixture fx;
  auto store = fx.store();
  auto earlier = fx.client(nullptr);
  auto client = fx.client(nullptr);
  ConditionalStore conditional(*client, *store);
  auto grant = earlier->acquire(ConditionalStore::lock_for("guarded"));
  REQUIRE(grant.is_ok());
  const Fence stalled{grant.value().name(), grant.value().token(), grant.value().sequencer()};
  REQUIRE(earlier->release(grant.value()).is_ok());

  ConditionalResult missed = conditional.put("guarded", "x", Expect::at(FencedTimestamp{1, 1}));
  CHECK(missed.status.code() == Code::kStale);
  CHECK(store->put("guarded", "late", stalled).status.code() == Code::kFenced);
  CHECK_FALSE(store->get("guarded").found);
}

// QuorumStore::get under a lease: the read ConditionalStore makes. The
// replicas that answer it take the fence first, so a write of an earlier
// holder made after it is refused.
TEST_CASE("conditional: a read under a lease fences the lock on the replicas that answer", "[conditional][recipes]") {
  Fixture fx;
  auto store = fx.store();
  auto earlier = fx.client(nullptr);
  auto later = fx.client(nullptr);  // neither fences on acquire
  auto first = earlier->acquire("job");
  REQUIRE(first.is_ok());
  const Fence stalled{first.value().name(), first.value().token(), first.value().sequencer()};
  REQUIRE(store->put("job/out", "first", stalled).status.is_ok());
  REQUIRE(earlier->release(first.value()).is_ok());
  auto second = later->acquire("job");
  REQUIRE(second.is_ok());
  // Before the read, the earlier holder could still write: nobody fenced.
  REQUIRE(store->put("job/out", "stalled", stalled).status.is_ok());
  ReadResult read = store->get("job/out", second.value());
  REQUIRE(read.status.is_ok());
  CHECK(read.value == "stalled");
  CHECK(store->put("job/out", "late", stalled).status.code() == Code::kFenced);
  CHECK(store->get("job/out").value == "stalled");
  // A released lease reads nothing: its fence is no longer the holder's.
  REQUIRE(later->release(second.value()).is_ok());
  CHECK(store->get("job/out", second.value()).status.code() == Code::kNoSession);
}

using Run = test::CliRun;

TEST_CASE("conditional: put and del --if-absent and --if-version as a person types them", "[conditional][recipes]") {
  Fixture fx;
  Run first = fx.run({"-o", "json", "put", "config", "v1", "--if-absent"});
  INFO(first.out);
  REQUIRE(first.code == 0);
  const std::string ts = nlohmann::json::parse(first.out).at("timestamp").get<std::string>();
  CHECK(nlohmann::json::parse(first.out).at("lock") == "palisade.cas/config");
  Run again = fx.run({"put", "config", "v1'", "--if-absent"});
  CHECK(again.code == 10);
  CHECK(again.out.find("is at version " + ts) != std::string::npos);
  Run swapped = fx.run({"put", "config", "v2", "--if-version", ts});
  CHECK(swapped.code == 0);
  CHECK(swapped.out == "OK\n");
  CHECK(fx.run({"put", "config", "v2'", "--if-version", ts}).code == 10);
  CHECK(fx.run({"get", "config"}).out == "v2\n");
  CHECK(fx.run({"del", "config", "--if-version", ts}).code == 10);
  // Usage errors, named, exit 2: nothing is written.
  Run bad = fx.run({"put", "config", "x", "--if-version", "yesterday"});
  CHECK(bad.code == 2);
  CHECK(bad.out.find("is not a version") != std::string::npos);
  CHECK(fx.run({"put", "config", "x", "--if-absent", "--if-version", ts}).code == 2);
  CHECK(fx.run({"put", "config", "x", "--if-absent", "--sequencer", "ps2.a.b"}).code == 2);
  CHECK(fx.run({"del", "config", "--if-absent"}).code == 2);  // no such flag for del
  CHECK(fx.run({"get", "config"}).out == "v2\n");
}

// ---- The workload ----

uint64_t now_us(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
}

struct Workload {
  explicit Workload(Fixture& fixture) : fx(fixture) {}
  Fixture& fx;
  const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::mutex mu;
  std::vector<RegisterOp> history;
  std::atomic<int> running{0};
  int kills = 0;

  struct Ended {
    int code = -1;  // -1: killed
    std::string out;
  };
  // Runs `palisade ARGS` as a process; with `kill_after`, SIGKILLs it then
  // if it has not ended.
  Ended run(const std::vector<std::string>& args, const std::string& log,
            std::optional<std::chrono::milliseconds> kill_after) {
    std::vector<std::string> argv = {PALISADE_BIN, "--cluster", fx.cluster->cluster_file()};
    argv.insert(argv.end(), args.begin(), args.end());
    cli::Process p(argv, log);
    auto status = p.wait(kill_after ? static_cast<int>(kill_after->count()) : 60000);
    if (!status) {
      p.kill();
      std::lock_guard lock(mu);
      ++kills;
      return {-1, p.log()};
    }
    return {WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, p.log()};
  }

  void record(const RegisterOp& op) {
    std::lock_guard lock(mu);
    history.push_back(op);
  }

  // One process's loop: read the counter, compare-and-set it to a value of
  // its own; one call in five is killed after a random moment.
  void worker(int p, std::chrono::steady_clock::time_point until) {
    std::mt19937_64 rng(1000 + p);
    for (int n = 0; std::chrono::steady_clock::now() < until; ++n) {
      const std::string log = fx.dir.sub("p" + std::to_string(p) + "-" + std::to_string(n) + ".log");
      RegisterOp read{.kind = RegisterOp::Kind::kRead, .call = now_us(start), .process = p};
      Ended got = run({"-o", "json", "get", "counter"}, log + ".get", std::nullopt);
      read.ret = now_us(start);
      std::optional<std::string> seen;
      if (got.code == 0) {
        const nlohmann::json j = nlohmann::json::parse(got.out);
        seen = j.at("value").get<std::string>();
        read.value = seen;
        read.ts = FencedTimestamp::parse(j.at("timestamp").get<std::string>());
        read.outcome = RegisterOp::Outcome::kOk;
      } else if (got.code != 5) {  // 5: not found, a read of nothing
        read.outcome = RegisterOp::Outcome::kUnknown;
      }
      record(read);
      if (read.outcome != RegisterOp::Outcome::kOk) continue;

      const std::string value = "p" + std::to_string(p) + "-" + std::to_string(n);
      RegisterOp cas{.kind = RegisterOp::Kind::kCas,
                     .call = now_us(start),
                     .process = p,
                     .expect = seen,
                     .value = value};
      std::vector<std::string> args = {"-o", "json", "put", "counter", value, "--timeout", "20s"};
      if (seen) {
        args.insert(args.end(), {"--if-version", read.ts->to_string()});
      } else {
        args.push_back("--if-absent");
      }
      const bool kill = rng() % 5 == 0;
      Ended put =
          run(args, log + ".put", kill ? std::optional<std::chrono::milliseconds>(50 + rng() % 400) : std::nullopt);
      cas.ret = now_us(start);
      if (put.code == 0) {
        cas.outcome = RegisterOp::Outcome::kOk;
        cas.ts = FencedTimestamp::parse(nlohmann::json::parse(put.out).at("timestamp").get<std::string>());
      } else if (put.code == 10) {
        cas.outcome = RegisterOp::Outcome::kFailed;
      } else {
        cas.outcome = RegisterOp::Outcome::kUnknown;  // killed, timed out, unavailable: it may have taken effect
      }
      record(cas);
    }
  }
};

TEST_CASE("conditional: concurrent compare-and-sets of palisade processes, with kills, are linearizable",
          "[conditional][recipes]") {
  Fixture fx;
  Workload w(fx);
  const auto until = std::chrono::steady_clock::now() + 25s;
  std::vector<std::thread> workers;
  for (int p = 0; p < 4; ++p) workers.emplace_back([&w, p, until] { w.worker(p, until); });
  // Faults meanwhile: the lock group's master killed and restarted, then a replica.
  std::this_thread::sleep_for(6s);
  const std::optional<uint32_t> master = fx.cluster->wait_for_master(10s);
  REQUIRE(master);
  fx.cluster->lockd(*master).kill();
  std::this_thread::sleep_for(4s);
  fx.cluster->lockd(*master).start();
  std::this_thread::sleep_for(3s);
  fx.cluster->replica(1).kill();
  std::this_thread::sleep_for(4s);
  fx.cluster->replica(1).start();
  for (std::thread& t : workers) t.join();

  size_t ok = 0, failed = 0, unknown = 0;
  for (const RegisterOp& op : w.history) {
    if (op.kind != RegisterOp::Kind::kCas) continue;
    (op.outcome == RegisterOp::Outcome::kOk ? ok : op.outcome == RegisterOp::Outcome::kFailed ? failed : unknown)++;
  }
  std::printf("conditional workload: %zu operations, compare-and-sets %zu ok, %zu stale, %zu unknown (%d killed)\n",
              w.history.size(), ok, failed, unknown, w.kills);
  // The workload did what it is for: writes won, compares lost, calls were killed.
  CHECK(ok >= 10);
  CHECK(failed >= 1);
  CHECK(w.kills >= 1);
  const test::RegisterVerdict verdict = test::check_register(w.history);
  INFO(verdict.why);
  CHECK(verdict.linearizable);
}

}  // namespace
}  // namespace palisade
