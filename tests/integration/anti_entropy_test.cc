// Anti-entropy (palisade/anti_entropy.h) against real palisade-replica
// processes: replicas that drifted apart converge by the fence rules, and equal
// replicas cost one root digest each.
#include <catch2/catch.hpp>
#include <csignal>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "client/replica_connection.h"
#include "auth/cluster_key.h"
#include "auth/config_certificate.h"
#include "auth/sequencer_signer.h"
#include "wire/config_certificate.h"
#include "wire/replica_set.h"
#include "tests/support/sequencers.h"
#include "antientropy/anti_entropy.h"
#include "palisade/quorum_store.h"
#include "replica/lmdb_store.h"
#include "tests/support/raw_lmdb.h"
#include "tests/support/replica_process.h"
#include "tests/support/replica_requests.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using client::ReplicaConnection;
using test::ReplicaProcess;
using wire::VersionState;

struct Replicas {
  TempDir dir;
  std::vector<std::unique_ptr<ReplicaProcess>> replicas;

  // `args` go to every replica; `endpoints` (empty: free ports) are theirs.
  explicit Replicas(int n, std::vector<std::string> args = {}, std::vector<std::string> endpoints = {}) {
    endpoints.resize(n);
    for (int i = 0; i < n; ++i) replicas.push_back(std::make_unique<ReplicaProcess>(data_dir(i), args, endpoints[i]));
  }
  std::string data_dir(int i) const { return dir.sub("r" + std::to_string(i)); }
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (const auto& r : replicas) out.push_back(r->endpoint());
    return out;
  }
  std::unique_ptr<QuorumStore> store(int read_quorum = 2) {
    QuorumStoreOptions o;
    o.replicas = endpoints();
    o.read_quorum = read_quorum;
    auto s = QuorumStore::open(o);
    REQUIRE(s.is_ok());
    return std::move(s).value();
  }
  // A store connected to every replica, so that a put reaches all of them: a
  // send to a replica not connected yet is not tried again once the put has
  // its W acknowledgements. A read of all N answers only once every link is up.
  std::unique_ptr<QuorumStore> connected_store() {
    auto s = store(static_cast<int>(replicas.size()));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!s->get("connected?").status.is_ok()) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return s;
  }
  AntiEntropyReport repair(std::optional<std::chrono::milliseconds> gc_grace = std::nullopt) {
    AntiEntropyOptions o;
    o.gc_grace = gc_grace;
    AntiEntropyReport report = repair_with(o);
    INFO("first refusal: " << report.first_refusal);
    CHECK(report.refused == 0);
    return report;
  }
  AntiEntropyReport repair_with(AntiEntropyOptions o) {
    o.replicas = endpoints();
    o.timeout = std::chrono::milliseconds(2000);
    auto report = run_anti_entropy(o);
    INFO(report.status().to_string());
    REQUIRE(report.is_ok());
    return report.value();
  }
  // Everything replica i holds of `key`, newest first.
  std::vector<wire::Version> held(int i, const std::string& key) {
    ReplicaConnection conn(replicas[i]->endpoint());
    auto reply = conn.call(test::read_req(key));
    REQUIRE(reply.is_ok());
    REQUIRE(reply.value().status.is_ok());
    return reply.value().versions;
  }
  // Waits until replica i holds a committed version of `key`: a put returns
  // after W=2 acknowledgements, and the third copy and its commit may still be
  // on their way.
  bool holds(int i, const std::string& key) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      auto versions = held(i, key);
      if (!versions.empty() && versions[0].state == VersionState::kCommitted) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  wire::ReplicaReply call(int i, wire::ReplicaRequest request) {
    ReplicaConnection conn(replicas[i]->endpoint());
    auto reply = conn.call(std::move(request));
    REQUIRE(reply.is_ok());
    return reply.value();
  }
};

TEST_CASE("anti-entropy: replicas that diverged while one was down converge", "[anti_entropy]") {
  Replicas c(3);
  {
    auto store = c.connected_store();
    for (int i = 0; i < 20; ++i) REQUIRE(store->put("k" + std::to_string(i), "first").status.is_ok());
    // A put returns after W=2: wait for replica 2's copies, so that it misses
    // exactly k10..k29 and no more.
    for (int i = 0; i < 20; ++i) REQUIRE(c.holds(2, "k" + std::to_string(i)));
    c.replicas[2]->process().kill();
    for (int i = 10; i < 30; ++i) REQUIRE(store->put("k" + std::to_string(i), "second").status.is_ok());
  }
  // The commits went out as the store closed; wait until they arrived, so that
  // replicas 0 and 1 agree and the repair sends replica 2's 20 versions only.
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 30; ++i) REQUIRE(c.holds(r, "k" + std::to_string(i)));
  }
  c.replicas[2]->restart();
  AntiEntropyReport first = c.repair();
  CHECK_FALSE(first.equal);
  CHECK(first.versions_sent == 20);  // k10..k29: replica 2 missed them all
  CHECK(first.ranges_done == first.ranges_total);
  for (int i = 0; i < 30; ++i) {
    const std::string key = "k" + std::to_string(i);
    INFO(key);
    auto newest = c.held(0, key);
    REQUIRE(newest.size() == 1);
    CHECK(newest[0].state == VersionState::kCommitted);
    for (int r = 1; r < 3; ++r) CHECK(c.held(r, key) == newest);
    ReadResult read = c.store(3)->get(key);
    CHECK(read.value == (i < 10 ? "first" : "second"));
    CHECK(read.ts == newest[0].ts);
  }
  AntiEntropyReport second = c.repair();
  CHECK(second.equal);
  CHECK(second.messages == 3);
}

TEST_CASE("anti-entropy: a deleted key never comes back", "[anti_entropy]") {
  Replicas c(3);
  {
    auto store = c.connected_store();
    REQUIRE(store->put("k", "alive").status.is_ok());
    REQUIRE(c.holds(2, "k"));  // the copy this test wants replica 2 to keep while down
    c.replicas[2]->process().kill();
    REQUIRE(store->del("k").status.is_ok());
  }
  // Replica 2 is down: tombstones stay, whatever gc_grace says.
  {
    AntiEntropyOptions o;
    o.replicas = c.endpoints();
    o.gc_grace = std::chrono::milliseconds(0);
    o.timeout = std::chrono::milliseconds(1000);
    auto report = run_anti_entropy(o);
    REQUIRE(report.is_ok());
    CHECK(report.value().unreachable == std::vector<std::string>{c.replicas[2]->endpoint()});
    CHECK(report.value().tombstones_dropped == 0);
  }
  c.replicas[2]->restart();
  REQUIRE(c.held(2, "k").at(0).value == "alive");
  AntiEntropyReport spread = c.repair(std::chrono::milliseconds(0));
  CHECK(spread.versions_sent == 1);       // the tombstone reaches replica 2...
  CHECK(spread.tombstones_dropped == 0);  // ...which still held the value when this run listed it
  CHECK(c.held(2, "k").at(0).tombstone);
  AntiEntropyReport collected = c.repair(std::chrono::milliseconds(0));
  CHECK(collected.tombstones_dropped == 1);
  for (int r = 0; r < 3; ++r) CHECK(c.held(r, "k").empty());
  CHECK_FALSE(c.store(3)->get("k").found);
  CHECK(c.repair(std::chrono::milliseconds(0)).equal);
}

TEST_CASE("anti-entropy: a superseded holder's pending write on one replica is purged, not spread",
          "[anti_entropy]") {
  Replicas c(3);
  for (int r : {0, 1}) REQUIRE(c.call(r, test::fence_req("L", 2)).floor == 2);
  REQUIRE(c.call(2, test::write_req("k", "late", test::ts_now(1), "L")).status.is_ok());
  AntiEntropyReport report = c.repair();
  CHECK(report.purged == 1);
  CHECK(report.versions_sent == 0);
  CHECK(report.floors_raised == 1);
  for (int r = 0; r < 3; ++r) {
    CHECK(c.held(r, "k").empty());
    CHECK(c.call(r, {0, wire::ReadRequest{"k", "L"}}).floors.at("L") == 2);
  }
  CHECK(c.repair().equal);
}

TEST_CASE("anti-entropy: replicas with the cluster key take copies under a lock only from a repairer",
          "[anti_entropy][sequencer]") {
  TempDir keys;
  const ClusterKey key = ClusterKey::generate();
  const test::KeyedClusterFile file = test::write_keyed_cluster_file(keys.path(), "ae", key, 3);
  Replicas c(3, {"--cluster", file.path}, file.replicas);
  auto grant = [&](uint64_t token) { return sign_sequencer({"ae", "L", LockMode::kExclusive, token}, key); };
  // Token 3 wrote k on replicas 0 and 1 while 2 was away; then token 4 fenced
  // all three, so the copy replica 2 needs is below its floor.
  const auto write = test::with_sequencer(test::write_req("k", "v", test::ts_now(3), "L"), grant(3));
  for (int r : {0, 1}) REQUIRE(c.call(r, write).status.is_ok());
  for (int r = 0; r < 3; ++r) REQUIRE(c.call(r, test::with_sequencer(test::fence_req("L", 4), grant(4))).floor == 4);
  // A plain client cannot commit it there: no receipts, no seal.
  auto repair = write;
  std::get<wire::WriteRequest>(repair.body).committed = true;
  wire::ReplicaReply plain = c.call(2, repair);
  CHECK(plain.status.code() == Code::kBadRequest);
  CHECK_THAT(plain.status.message(), Catch::Contains("receipts"));

  SECTION("without the key, its copies and commits are refused") {
    AntiEntropyReport report = c.repair_with({});
    CHECK(report.refused >= 1);
    CHECK_THAT(report.first_refusal, Catch::Contains("receipts"));
    CHECK(c.held(2, "k").empty());
  }
  SECTION("with the key, replica 2 gets it, committed, below its floor") {
    AntiEntropyOptions o;
    o.key_file = keys.sub("cluster.key");
    o.group = "ae";
    AntiEntropyReport report = c.repair_with(o);
    INFO(report.first_refusal);
    CHECK(report.refused == 0);
    CHECK(report.versions_sent == 1);
    for (int r = 0; r < 3; ++r) {
      auto held = c.held(r, "k");
      REQUIRE(held.size() == 1);
      CHECK(held[0].state == VersionState::kCommitted);
      CHECK(held[0].value == "v");
    }
    CHECK(c.repair_with(o).equal);
  }
  SECTION("a key of another cluster is no repairer's") {
    const std::string other = keys.sub("other.key");
    std::ofstream(other) << ClusterKey::generate().to_hex() << "\n";
    AntiEntropyOptions o;
    o.key_file = other;
    o.group = "ae";
    AntiEntropyReport report = c.repair_with(o);
    CHECK(report.refused >= 1);
    CHECK(c.held(2, "k").empty());
  }
}

TEST_CASE("anti-entropy: a corrupted value on one replica is repaired from the others", "[anti_entropy]") {
  Replicas c(3);
  const FencedTimestamp ts = test::ts_now(0);
  for (int r = 0; r < 3; ++r) {
    auto w = test::write_req("k", "precious", ts);
    std::get<wire::WriteRequest>(w.body).committed = true;
    REQUIRE(c.call(r, w).status.is_ok());
  }
  // A clean stop checkpoints the journal into LMDB, where the byte is flipped.
  c.replicas[1]->process().signal(SIGTERM);
  REQUIRE(c.replicas[1]->process().wait(10'000));
  {
    test::RawLmdb raw(c.data_dir(1));
    std::string rec = raw.get("versions", "k").value();
    rec[rec.size() - 9] ^= 0x01;  // a value byte
    raw.put("versions", "k", rec);
    raw.commit();
  }
  c.replicas[1]->restart();
  REQUIRE(c.call(1, test::read_req("k")).status.code() == Code::kCorrupt);
  AntiEntropyReport report = c.repair();
  CHECK(report.corrupt_replaced == 1);
  CHECK(report.versions_sent == 1);
  auto held = c.held(1, "k");
  REQUIRE(held.size() == 1);
  CHECK(held[0].value == "precious");
  CHECK(held[0].ts == ts);
  CHECK(c.repair().equal);
}

TEST_CASE("anti-entropy: two equal replicas of 100k keys exchange only their root digests", "[anti_entropy]") {
  TempDir dir;
  const FencedTimestamp ts = test::ts_now(0);
  for (int r = 0; r < 2; ++r) {
    // Loaded through the store API before the daemons start: far faster than 100k writes.
    std::filesystem::create_directories(dir.sub("r" + std::to_string(r)));
    auto store = replica::LmdbStore::open(dir.sub("r" + std::to_string(r)), {});
    REQUIRE(store.is_ok());
    for (int i = 0; i < 100'000; ++i) {
      const replica::Versions versions{wire::Version{ts, "", VersionState::kCommitted, false, "v" + std::to_string(i)}};
      const std::string key = "key-" + std::to_string(i);
      REQUIRE(store.value()->apply(replica::Change{.key = key, .put = &versions}).is_ok());
      if (i % 10'000 == 9'999) REQUIRE(store.value()->commit().is_ok());
    }
  }
  ReplicaProcess a(dir.sub("r0")), b(dir.sub("r1"));
  AntiEntropyOptions o;
  o.replicas = {a.endpoint(), b.endpoint()};
  auto report = run_anti_entropy(o);
  REQUIRE(report.is_ok());
  CHECK(report.value().equal);
  CHECK(report.value().messages == 2);  // one tree request to each
  // Two requests and two replies of one 12-byte node each, envelopes included.
  CHECK(report.value().bytes_moved() < 256);
  CHECK(report.value().tree_bytes == report.value().bytes_moved());
  CHECK(report.value().keys_compared == 0);
}

// ---- the replica set version (docs/design.md "The replica set") ----

// A certificate of `set`'s replicas with W 2, R 2; unsigned (for replicas
// that check nothing) unless `group` signs it.
std::string certificate(uint64_t version, const std::vector<std::string>& replicas,
                        const std::optional<SequencerSigner>& group = std::nullopt) {
  wire::ReplicaSet set{.version = version, .replicas = {}, .write_quorum = 2, .read_quorum = 2};
  for (size_t i = 0; i < replicas.size(); ++i) set.replicas.push_back({static_cast<uint32_t>(i + 1), replicas[i]});
  if (group) return sign_config_certificate(*group, set);
  return wire::join_config_certificate(wire::encode_replica_set(set), std::string(64, 's'));
}

void install(const std::string& endpoint, const std::string& certificate) {
  Status installed = test::install_config_on(endpoint, certificate);
  INFO(installed.to_string());
  REQUIRE(installed.is_ok());
}

TEST_CASE("anti-entropy: a run over another replica set than the replicas keep ends, and gives them the newest",
          "[anti_entropy][config]") {
  Replicas r(3);  // they take certificates unchecked (--insecure)
  const std::vector<std::string> endpoints = r.endpoints();
  install(endpoints[0], certificate(1, endpoints));
  AntiEntropyOptions o;
  o.replicas = endpoints;
  o.timeout = std::chrono::milliseconds(2000);
  std::string told;
  o.newer_config = [&told](const std::string& c) { told = c; };
  auto stale = run_anti_entropy(o);
  CHECK(stale.status().code() == Code::kStaleConfig);
  CHECK_THAT(stale.status().message(), Catch::Contains(endpoints[0] + " keeps a newer replica set"));
  CHECK(told == certificate(1, endpoints));
  for (const std::string& e : endpoints) CHECK(test::config_version_of(e) == 1);  // the others got it from the run

  o.config = 1;
  o.config_certificate = certificate(1, endpoints);
  auto run = run_anti_entropy(o);
  INFO(run.status().to_string());
  CHECK(run.is_ok());

  // A run that names a version the replicas have not installed gives it to them.
  o.config = 2;
  o.config_certificate = certificate(2, endpoints);
  CHECK(run_anti_entropy(o).status().code() == Code::kUnknownConfig);
  for (const std::string& e : endpoints) CHECK(test::config_version_of(e) == 2);
  CHECK(run_anti_entropy(o).is_ok());
}

TEST_CASE("anti-entropy: a replica's background runs go over the replica set it keeps, not the cluster file's",
          "[anti_entropy][config]") {
  TempDir dir;
  const ClusterKey key = ClusterKey::generate();
  const test::KeyedClusterFile file = test::write_keyed_cluster_file(dir.path(), "ae", key, 3);
  const std::vector<std::string> cluster_args{"--cluster", file.path};
  std::vector<std::string> repairing = cluster_args;
  repairing.insert(repairing.end(), {"--anti-entropy-interval", "200ms"});
  ReplicaProcess r0(dir.sub("r0"), repairing, file.replicas[0]);
  ReplicaProcess r1(dir.sub("r1"), cluster_args, file.replicas[1]);
  ReplicaProcess r2(dir.sub("r2"), cluster_args, file.replicas[2]);
  ReplicaProcess r3(dir.sub("r3"), cluster_args);  // not in the file: it replaces r2
  {
    ReplicaConnection conn(r0.endpoint());
    wire::ReplicaRequest write = test::write_req("k", "v", test::ts_now(0));
    std::get<wire::WriteRequest>(write.body).committed = true;
    auto put = conn.call(write);
    REQUIRE(put.is_ok());
    REQUIRE(put.value().status.is_ok());
  }
  // r0 alone learns the new set: its runs give it to r1 and r3, then copy.
  const SequencerSigner group(key, "ae");
  const std::string set = certificate(1, {r0.endpoint(), r1.endpoint(), r3.endpoint()}, group);
  install(r0.endpoint(), set);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  auto held_by = [](const std::string& endpoint, uint64_t config = 1) {
    ReplicaConnection conn(endpoint);
    wire::ReplicaRequest read = test::read_req("k");
    read.config = config;
    auto reply = conn.call(read);
    return reply.is_ok() && reply.value().status.is_ok() && reply.value().newest() != nullptr;
  };
  while (!held_by(r3.endpoint()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(held_by(r3.endpoint()));
  CHECK(held_by(r1.endpoint()));
  CHECK(test::config_version_of(r3.endpoint()) == 1);
  // Left out: no run copies to it any more. (A run under way over the old set
  // when the new one was installed may still have handed r2 the new set: its
  // version is not checked.)
  CHECK_FALSE(held_by(r2.endpoint(), 0));
}

}  // namespace
}  // namespace palisade
