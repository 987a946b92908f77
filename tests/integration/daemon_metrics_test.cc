// The daemons' --metrics-listen endpoint on real processes (docs/metrics.md):
// counters move with what the cluster does (a zombie write is counted fenced
// under its lock, a failover counts a master change), promtool accepts the
// text, and /readyz follows what a daemon can do (a replica whose disk failed
// a commit is not ready until it restarts).
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include <httplib.h>

#include "auth/config_certificate.h"
#include "base/temp_dir.h"
#include "cli/process.h"
#include "client/replica_connection.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "tests/support/local_cluster.h"
#include "tests/support/replica_process.h"
#include "tests/support/replica_requests.h"
#include "tests/support/sequencers.h"
#include "wire/replica_set.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

template <class F>
bool eventually(F&& f, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return f();
}

struct Answer {
  int status = 0;  // 0: no answer
  std::string body;
};

// GET http://`address``path` (address: HOST:PORT).
Answer get(const std::string& address, const std::string& path) {
  const size_t colon = address.rfind(':');
  httplib::Client client(address.substr(0, colon), std::stoi(address.substr(colon + 1)));
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  auto r = client.Get(path);
  return r ? Answer{r->status, r->body} : Answer{};
}

// The value of `series` (name and labels, as rendered) in `text`; 0 when absent.
double value(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
  }
  return 0;
}

// The sum of the series in `text` whose name and labels begin with `prefix`.
double sum(const std::string& text, const std::string& prefix) {
  double total = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(prefix)) total += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return total;
}

double scraped(const std::string& address, const std::string& series) {
  return value(get(address, "/metrics").body, series);
}

// promtool (Debian's prometheus package, which scripts/setup.sh installs).
bool promtool_installed() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }

// Whether `promtool check metrics` accepts `text`; prints what it objects to.
bool promtool_accepts(const std::string& text, const std::string& dir) {
  const std::string file = dir + "/scraped.prom";
  std::ofstream(file) << text;
  const std::string command = "promtool check metrics < " + file + " > " + dir + "/promtool.out 2>&1";
  const bool ok = std::system(command.c_str()) == 0;
  if (!ok) {
    std::ifstream out(dir + "/promtool.out");
    std::cerr << "promtool check metrics:\n" << out.rdbuf() << "\n";
  }
  return ok;
}

// Checks `text` with promtool, or says why it cannot.
void check_with_promtool(const std::string& text, const std::string& dir) {
  if (!promtool_installed()) {
    WARN("promtool is not installed (scripts/setup.sh installs it): the text was not checked");
    return;
  }
  CHECK(promtool_accepts(text, dir));
}

TEST_CASE("daemon metrics: a zombie write counts fenced under its lock, a failover a master change, promtool "
          "accepts both daemons' text",
          "[metrics]") {
  TempDir dir;
  cli::LocalClusterOptions o = test::local_cluster_options(dir.sub("cluster"));
  o.timing = cli::short_lease_timing();
  o.metrics = true;
  auto cluster = test::start_local_cluster(std::move(o));
  for (uint32_t id : cluster->lockd_ids()) {
    const std::string address = cluster->lockd(id).metrics_address();
    REQUIRE_FALSE(address.empty());
    CHECK(get(address, "/healthz").status == 200);
    CHECK(eventually([&] { return get(address, "/readyz").status == 200; }, 10s));
  }
  for (size_t i = 0; i < cluster->replica_count(); ++i) {
    const std::string address = cluster->replica(i).metrics_address();
    CHECK(get(address, "/healthz").status == 200);
    CHECK(get(address, "/readyz").status == 200);
  }

  QuorumStoreOptions so;
  so.replicas = cluster->replica_endpoints();
  so.timeout = 5000ms;
  auto store = QuorumStore::open(so);
  REQUIRE(store.is_ok());
  LockClientOptions lo;
  lo.nodes = cluster->lockd_endpoints();
  lo.store = store.value().get();
  lo.call_timeout = 8000ms;
  auto first = LockClient::connect(lo, 10s);
  auto second = LockClient::connect(lo, 10s);
  REQUIRE(first.is_ok());
  REQUIRE(second.is_ok());

  // The first holder's grant, kept after the lock went to the second holder:
  // what a holder paused past its lease still has.
  auto old = first.value()->acquire("orders", {.wait = 10000ms});
  REQUIRE(old.is_ok());
  const Lease zombie = old.value();
  REQUIRE(first.value()->release(old.value()).is_ok());
  auto current = second.value()->acquire("orders", {.wait = 10000ms});  // fences "orders" on a write quorum
  REQUIRE(current.is_ok());
  REQUIRE(current.value().token() > zombie.token());
  REQUIRE(store.value()->put("k", "by the current holder", current.value()).status.is_ok());

  const std::string replica = cluster->replica(0).metrics_address();
  const std::string fenced = "palisade_replica_fenced_total{lock=\"orders\"}";
  const std::string fenced_writes = "palisade_replica_requests_total{type=\"write\",outcome=\"fenced\"}";
  const double fenced_before = scraped(replica, fenced);
  const double writes_before = scraped(replica, fenced_writes);
  client::ReplicaConnection conn(cluster->replica(0).endpoint());
  auto late = conn.call(
      test::with_sequencer(test::write_req("k", "late", test::ts_now(zombie.token()), "orders"), zombie.sequencer()));
  REQUIRE(late.is_ok());
  CHECK(late.value().status.code() == Code::kFenced);
  const std::string text = get(replica, "/metrics").body;
  CHECK(value(text, fenced) == fenced_before + 1);
  CHECK(value(text, fenced_writes) == writes_before + 1);
  CHECK(value(text, "palisade_replica_requests_total{type=\"write\",outcome=\"ok\"}") >= 1);
  CHECK(value(text, "palisade_replica_fenced_token_gap_count") >= 1);
  CHECK(value(text, "palisade_replica_batch_seconds_count") >= 1);
  // Every write answered has its latency, whatever its outcome.
  CHECK(value(text, "palisade_replica_request_seconds_count{type=\"write\"}") ==
        sum(text, "palisade_replica_requests_total{type=\"write\","));
  CHECK(value(text, "palisade_storage_file_bytes{file=\"data.mdb\"}") > 0);
  check_with_promtool(text, dir.path());

  // The master dies; a survivor counts the change to the new one.
  const uint32_t master = *cluster->wait_for_master(10s);
  const uint32_t survivor = master == 1 ? 2 : 1;
  const std::string lockd = cluster->lockd(survivor).metrics_address();
  const std::string lockd_text = get(lockd, "/metrics").body;
  CHECK(value(lockd_text, "palisade_lockd_requests_total{type=\"acquire\",outcome=\"ok\"}") +
            value(get(cluster->lockd(master).metrics_address(), "/metrics").body,
                  "palisade_lockd_requests_total{type=\"acquire\",outcome=\"ok\"}") >=
        2);
  CHECK_THAT(lockd_text, Catch::Contains("# TYPE palisade_lockd_proposals_pending gauge\n"));
  CHECK_THAT(lockd_text, Catch::Contains("# TYPE palisade_storage_checkpoint_seconds histogram\n"));
  CHECK_THAT(lockd_text, Catch::Contains("\npalisade_lockd_proposals_pending "));
  CHECK(value(lockd_text, "palisade_lockd_peer_bytes_taken_total") > 0);  // the master's heartbeats at least
  const double changes_before = value(lockd_text, "palisade_lockd_master_changes_total");
  CHECK(changes_before >= 1);  // it found the first master
  cluster->lockd(master).kill();
  REQUIRE(cluster->wait_for_master_other_than(master, 15s));
  CHECK(eventually([&] { return scraped(lockd, "palisade_lockd_master_changes_total") >= changes_before + 1; }, 5s));
  CHECK(eventually([&] { return get(lockd, "/readyz").status == 200; }, 5s));
  const std::string after = get(lockd, "/metrics").body;
  CHECK(value(after, "palisade_lockd_epoch") > 0);
  const uint32_t new_master = *cluster->wait_for_master(10s);
  CHECK(scraped(cluster->lockd(new_master).metrics_address(), "palisade_lockd_elections_total") >= 1);
  CHECK(scraped(cluster->lockd(new_master).metrics_address(), "palisade_lockd_is_master") == 1);
  check_with_promtool(after, dir.path());
}

TEST_CASE("daemon metrics: a replica whose disk failed a commit is not ready until it restarts", "[metrics]") {
  TempDir dir;
  const std::string failing = dir.path() + "/disk-fails";
  const std::string address = "127.0.0.1:" + std::to_string(cli::free_port());
  const std::string endpoint = cli::free_endpoints(1).front();
  // The preloaded library fails every sync while `failing` exists.
  const std::vector<std::string> argv = {"/usr/bin/env",
                                         "LD_PRELOAD=" PALISADE_FAILING_SYNC_LIB,
                                         "PALISADE_FAIL_SYNCS_WHILE=" + failing,
                                         "ASAN_OPTIONS=verify_asan_link_order=0",
                                         test::replica_binary(),
                                         "--data-dir",
                                         dir.path() + "/data",
                                         "--listen",
                                         endpoint,
                                         "--insecure",
                                         "--metrics-listen",
                                         address};
  auto replica = std::make_unique<cli::Process>(argv, dir.path() + "/replica.log");
  auto ready = [&] { return get(address, "/readyz"); };
  auto write = [&](const std::string& key) {
    client::ReplicaConnection conn(endpoint);
    auto reply = conn.call(test::write_req(key, "v", test::ts_now(0)));
    return reply.is_ok() ? reply.value().status.code() : reply.status().code();
  };
  REQUIRE(eventually([&] { return ready().status == 200; }, 10s));
  CHECK(write("a") == Code::kOk);
  CHECK(ready().status == 200);

  std::ofstream(failing).put('x');
  CHECK(write("b") == Code::kStorageError);
  Answer not_ready;
  CHECK(eventually([&] { return (not_ready = ready()).status == 503; }, 5s));
  CHECK_THAT(not_ready.body, Catch::Contains("refuses writes until restarted"));
  CHECK(get(address, "/healthz").status == 200);  // up and turning, only not to be trusted
  CHECK(scraped(address, "palisade_replica_requests_total{type=\"write\",outcome=\"storage_error\"}") == 1);

  std::filesystem::remove(failing);
  CHECK(write("c") == Code::kStorageError);  // the replica refuses writes until restarted
  CHECK(ready().status == 503);
  replica->kill();
  replica = std::make_unique<cli::Process>(argv, dir.path() + "/replica.log");
  CHECK(eventually([&] { return ready().status == 200; }, 10s));
  CHECK(write("d") == Code::kOk);
}

TEST_CASE("daemon metrics: a replica times each write it answers, and its checkpoints once the journal passes "
          "its checkpoint size",
          "[metrics]") {
  TempDir dir;
  const std::string address = "127.0.0.1:" + std::to_string(cli::free_port());
  test::ReplicaProcess replica(dir.sub("replica"), {"--metrics-listen", address});
  client::ReplicaConnection conn(replica.endpoint());
  const std::string count = "palisade_storage_checkpoint_seconds_count";
  const std::string write_seconds = "palisade_replica_request_seconds_count{type=\"write\"}";
  const double before = scraped(address, count);
  const double writes_before = scraped(address, write_seconds);
  // A checkpoint every 2 MiB of journal (docs/storage.md): a few values of 1 MB pass it.
  const std::string value(1'000'000, 'v');
  int writes = 0;
  while (scraped(address, count) == before) {
    REQUIRE(writes < 10);
    auto reply = conn.call(test::write_req("big" + std::to_string(writes++), value, test::ts_now(0)));
    REQUIRE(reply.is_ok());
    REQUIRE(reply.value().status.is_ok());
  }
  CHECK(writes >= 3);
  CHECK(scraped(address, count) == before + 1);
  CHECK(scraped(address, "palisade_storage_checkpoint_seconds_sum") > 0);
  CHECK(scraped(address, write_seconds) == writes_before + writes);
}

TEST_CASE("daemon metrics: a fence or write that raises a lock's floor counts once under its lock, one at the "
          "floor not at all",
          "[metrics]") {
  TempDir dir;
  const std::string address = "127.0.0.1:" + std::to_string(cli::free_port());
  test::ReplicaProcess replica(dir.sub("replica"), {"--metrics-listen", address});  // --insecure: no sequencers
  client::ReplicaConnection conn(replica.endpoint());
  const std::string raises = "palisade_replica_floor_raises_total{lock=\"orders\"}";
  CHECK_THAT(get(address, "/metrics").body, Catch::Contains("# TYPE palisade_replica_floor_raises_total counter"));
  auto fence = [&](uint64_t token) {
    auto reply = conn.call(test::fence_req("orders", token));
    REQUIRE(reply.is_ok());
    REQUIRE(reply.value().status.is_ok());
  };
  fence(5);
  CHECK(scraped(address, raises) == 1);
  fence(5);
  CHECK(scraped(address, raises) == 1);
  fence(4);
  CHECK(scraped(address, raises) == 1);
  auto write = conn.call(test::write_req("k", "v", test::ts_now(6), "orders"));
  REQUIRE(write.is_ok());
  REQUIRE(write.value().status.is_ok());
  CHECK(scraped(address, raises) == 2);
  CHECK(scraped(address, "palisade_replica_floor_raises_total{lock=\"other\"}") == 0);
}

TEST_CASE("daemon metrics: background anti-entropy counts its runs by result and what they repaired", "[metrics]") {
  TempDir dir;
  const ClusterKey key = ClusterKey::generate();
  const test::KeyedClusterFile file = test::write_keyed_cluster_file(dir.path(), "ae", key, 2);
  const std::string address = "127.0.0.1:" + std::to_string(cli::free_port());
  test::ReplicaProcess repairer(
      dir.sub("r0"), {"--cluster", file.path, "--anti-entropy-interval", "200ms", "--metrics-listen", address},
      file.replicas[0]);
  auto other = std::make_unique<test::ReplicaProcess>(dir.sub("r1"), std::vector<std::string>{"--cluster", file.path},
                                                      file.replicas[1]);
  // The other replica holds a committed version and a fence floor the repairer lacks.
  client::ReplicaConnection conn(other->endpoint());
  auto write = test::write_req("k", "v", test::ts_now(0));
  std::get<wire::WriteRequest>(write.body).committed = true;
  const auto fence =
      test::with_sequencer(test::fence_req("L", 4), sign_sequencer({"ae", "L", LockMode::kExclusive, 4}, key));
  for (const auto& request : {write, fence}) {
    auto reply = conn.call(request);
    REQUIRE(reply.is_ok());
    REQUIRE(reply.value().status.is_ok());
  }

  auto metric = [&](const std::string& series) { return scraped(address, series); };
  const std::string repaired = "palisade_anti_entropy_runs_total{result=\"repaired\"}";
  const std::string equal = "palisade_anti_entropy_runs_total{result=\"equal\"}";
  const std::string failed = "palisade_anti_entropy_runs_total{result=\"failed\"}";
  // In one run or two (one may have started between the write and the fence).
  REQUIRE(eventually(
      [&] {
        return metric("palisade_anti_entropy_versions_copied_total") >= 1 &&
               metric("palisade_anti_entropy_floors_raised_total") >= 1;
      },
      30s));
  const std::string text = get(address, "/metrics").body;
  CHECK(value(text, repaired) >= 1);
  CHECK(value(text, "palisade_anti_entropy_keys_compared_total") >= 2);
  CHECK(value(text, "palisade_anti_entropy_keys_differing_total") >= 2);
  CHECK(value(text, "palisade_anti_entropy_bytes_total") > 0);
  CHECK(value(text, "palisade_anti_entropy_run_seconds_count") >= 1);
  CHECK(value(text, "palisade_anti_entropy_unreachable_replicas") == 0);
  CHECK(value(text, failed) == 0);
  // The repair raised the repairer's own floor, which it counts as any raise.
  CHECK(value(text, "palisade_replica_floor_raises_total{lock=\"L\"}") == 1);
  // Once repaired, the replicas are alike.
  const double equal_before = value(text, equal);
  CHECK(eventually([&] { return metric(equal) > equal_before; }, 30s));
  CHECK(metric(repaired) == value(text, repaired));

  // With the other replica gone, a run cannot compare anything: failed, one unreachable.
  other.reset();
  CHECK(eventually([&] { return metric(failed) >= 1; }, 30s));
  CHECK(metric("palisade_anti_entropy_unreachable_replicas") == 1);
  check_with_promtool(get(address, "/metrics").body, dir.path());
}

TEST_CASE("daemon metrics: the replica set version and pause the replica keeps, also after a restart",
          "[metrics][config]") {
  TempDir dir;
  const ClusterKey key = ClusterKey::generate();
  const test::KeyedClusterFile file = test::write_keyed_cluster_file(dir.path(), "rs", key, 3);
  const std::string address = "127.0.0.1:" + std::to_string(cli::free_port());
  test::ReplicaProcess replica(dir.sub("r0"), {"--cluster", file.path, "--metrics-listen", address}, file.replicas[0]);
  auto metric = [&](const std::string& series) { return scraped(address, series); };
  CHECK(metric("palisade_replica_set_version") == 0);
  CHECK(metric("palisade_replica_set_paused") == 0);
  auto certificate = [&](uint64_t version, wire::ReplicaPhase phase) {
    wire::ReplicaSet set{.version = version, .phase = phase, .replicas = {}, .write_quorum = 2, .read_quorum = 2};
    for (uint32_t i = 0; i < 3; ++i) set.replicas.push_back({i + 1, file.replicas[i]});
    return sign_config_certificate(SequencerSigner(key, "rs"), set);
  };
  REQUIRE(test::install_config_on(replica.endpoint(), certificate(1, wire::ReplicaPhase::kServing)).is_ok());
  CHECK(metric("palisade_replica_set_version") == 1);
  CHECK(metric("palisade_replica_set_paused") == 0);
  REQUIRE(test::install_config_on(replica.endpoint(), certificate(2, wire::ReplicaPhase::kPaused)).is_ok());
  CHECK(metric("palisade_replica_set_version") == 2);
  CHECK(metric("palisade_replica_set_paused") == 1);
  replica.process().kill();
  replica.restart();  // the kept certificate is loaded at start
  CHECK(eventually([&] { return metric("palisade_replica_set_version") == 2; }, 10s));
  CHECK(metric("palisade_replica_set_paused") == 1);
}

TEST_CASE("daemon metrics: --metrics-listen refuses a bad address, and a taken port stops the start", "[metrics]") {
  TempDir dir;
  auto run = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {test::replica_binary(), "--data-dir", dir.path() + "/data",
                                     "--insecure",           "--listen",   cli::free_endpoints(1).front()};
    argv.insert(argv.end(), args.begin(), args.end());
    cli::Process p(argv, dir.path() + "/out.log");
    auto status = p.wait(10000);
    REQUIRE(status.has_value());
    return std::pair(WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, p.log());
  };
  auto [code, log] = run({"--metrics-listen", "localhost"});
  CHECK(code != 0);
  CHECK_THAT(log, Catch::Contains("has no port"));
  // A port something listens on already.
  httplib::Server taken;
  const int port = taken.bind_to_any_port("127.0.0.1");
  REQUIRE(port > 0);
  std::tie(code, log) = run({"--metrics-listen", "127.0.0.1:" + std::to_string(port)});
  CHECK(code == 1);
  CHECK_THAT(log, Catch::Contains("cannot listen for metrics on 127.0.0.1:" + std::to_string(port)));
}

}  // namespace
}  // namespace palisade
