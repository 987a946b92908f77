// Cluster identity (issue #24), on real processes: two local clusters, A and
// B, each with the id `cluster up` gave it. A client of A pointed at B's
// daemons is refused with wrong_cluster, which names the endpoint and both
// ids, ends the call at once and changes nothing on B. Requests that name no
// cluster (clients from before cluster ids) are still answered.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "client/replica_connection.h"
#include "base/cluster_id.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "tests/support/local_cluster.h"
#include "tests/support/replica_process.h"
#include "tests/support/replica_requests.h"
#include "cli/process.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<cli::LocalCluster> start_cluster(const TempDir& dir, const std::string& name) {
  cli::LocalClusterOptions o = test::local_cluster_options(dir.sub(name));
  o.timing = cli::short_lease_timing();
  return test::start_local_cluster(o);
}

std::string id_of(const cli::LocalCluster& c) { return cluster_id_hex(c.config().cluster_id); }

// A store of its own over `replicas`, naming cluster `id`. Its timeout is long:
// a refusal that were retried would show as unavailable after it.
std::unique_ptr<QuorumStore> open_store(const std::vector<std::string>& replicas, const std::string& id) {
  QuorumStoreOptions o;
  o.replicas = replicas;
  o.cluster_id = id;
  o.timeout = 30s;
  o.share_connections = false;
  auto store = QuorumStore::open(o);
  REQUIRE(store.is_ok());
  return std::move(store).value();
}

// `s` is wrong_cluster and names one of `endpoints` and both ids.
void check_refusal(const Status& s, const std::vector<std::string>& endpoints, const std::string& own,
                   const std::string& expected) {
  INFO(s.to_string());
  CHECK(s.code() == Code::kWrongCluster);
  CHECK(std::any_of(endpoints.begin(), endpoints.end(),
                    [&](const std::string& e) { return s.message().find(e + " is not a") == 0; }));
  CHECK(s.message().find("belongs to cluster " + own) != std::string::npos);
  CHECK(s.message().find("is for cluster " + expected) != std::string::npos);
}

TEST_CASE("identity: clients of cluster A pointed at cluster B are refused and change nothing there",
          "[identity]") {
  TempDir dir;
  auto a = start_cluster(dir, "a");
  auto b = start_cluster(dir, "b");
  REQUIRE(a->config().cluster_id.size() == kClusterIdBytes);
  REQUIRE(b->config().cluster_id.size() == kClusterIdBytes);
  REQUIRE(a->config().cluster_id != b->config().cluster_id);

  SECTION("a QuorumStore: put, fence and get end at once with wrong_cluster") {
    auto wrong = open_store(b->replica_endpoints(), id_of(*a));
    check_refusal(wrong->put("k", "from A").status, b->replica_endpoints(), id_of(*b), id_of(*a));
    check_refusal(wrong->fence({.lock = "L", .token = 7}).status, b->replica_endpoints(), id_of(*b), id_of(*a));
    check_refusal(wrong->get("k").status, b->replica_endpoints(), id_of(*b), id_of(*a));

    auto own = open_store(b->replica_endpoints(), id_of(*b));
    auto read = own->get("k");
    REQUIRE(read.status.is_ok());
    CHECK_FALSE(read.found);
    for (size_t i = 0; i < b->replica_count(); ++i) {
      client::ReplicaConnection conn(b->replica(i).endpoint());
      auto stats = conn.call({.id = 0, .body = wire::StatsRequest{}, .cluster = b->config().cluster_id});
      REQUIRE(stats.is_ok());
      REQUIRE(stats.value().stats.has_value());
      CHECK(stats.value().stats->keys == 0);
      CHECK(stats.value().stats->floor_count == 0);
    }
    // B's own clients, and clients that name no cluster, are answered.
    CHECK(own->put("k", "from B").status.is_ok());
    CHECK(open_store(b->replica_endpoints(), "")->get("k").value == "from B");
  }

  SECTION("a LockClient: connect fails with wrong_cluster and opens no session") {
    LockClientOptions o;
    o.nodes = b->lockd_endpoints();
    o.cluster_id = id_of(*a);
    auto client = LockClient::connect(o, 30s);
    REQUIRE_FALSE(client.is_ok());
    check_refusal(client.status(), b->lockd_endpoints(), id_of(*b), id_of(*a));

    auto master = b->wait_for_master(10s);
    REQUIRE(master.has_value());
    auto status = b->lock_status(*master);
    REQUIRE(status.has_value());
    CHECK(status->sessions == 0);

    o.cluster_id = id_of(*b);
    CHECK(LockClient::connect(o, 30s).is_ok());
  }

  SECTION("a replica refuses a request for another cluster before applying it") {
    client::ReplicaConnection conn(b->replica(0).endpoint());
    wire::ReplicaRequest write = test::write_req("raw", "from A", test::ts_now(0));
    write.cluster = a->config().cluster_id;
    auto refused = conn.call(write);
    REQUIRE(refused.is_ok());
    CHECK(refused.value().status.code() == Code::kWrongCluster);
    CHECK(refused.value().status.message() ==
          "this daemon belongs to cluster " + id_of(*b) + ", the request is for cluster " + id_of(*a));
    auto read = conn.call(test::read_req("raw"));
    REQUIRE(read.is_ok());
    CHECK(read.value().versions.empty());
  }
}

TEST_CASE("identity: a replica started without a cluster file takes its id from --cluster-id", "[identity]") {
  TempDir dir;
  const std::string mine = cluster_id_hex(new_cluster_id());
  const std::string other = new_cluster_id();
  test::ReplicaProcess replica(dir.sub("replica"), {"--insecure", "--cluster-id", mine});
  client::ReplicaConnection conn(replica.endpoint());

  auto refused = conn.call({.id = 0, .body = wire::PingRequest{}, .cluster = other});
  REQUIRE(refused.is_ok());
  CHECK(refused.value().status.code() == Code::kWrongCluster);
  auto answered = conn.call({.id = 0, .body = wire::PingRequest{}, .cluster = *cluster_id_from_hex(mine)});
  REQUIRE(answered.is_ok());
  CHECK(answered.value().status.is_ok());

  SECTION("a replica without an id answers no request that names one") {
    test::ReplicaProcess plain(dir.sub("plain"), {"--insecure"});
    client::ReplicaConnection plain_conn(plain.endpoint());
    auto none = plain_conn.call({.id = 0, .body = wire::PingRequest{}, .cluster = other});
    REQUIRE(none.is_ok());
    CHECK(none.value().status.code() == Code::kWrongCluster);
    CHECK(none.value().status.message().find("belongs to cluster none") != std::string::npos);
  }
  SECTION("--help says where each daemon takes its id from; --cluster-id and --cluster exclude each other") {
    cli::Process help({test::replica_binary(), "--help"}, dir.sub("help.log"));
    REQUIRE(help.wait(10000).has_value());
    CHECK_THAT(help.log(), Catch::Contains("--cluster-id") && Catch::Contains("wrong_cluster"));
    cli::Process lockd_help({test::lockd_binary(), "--help"}, dir.sub("lockd-help.log"));
    REQUIRE(lockd_help.wait(10000).has_value());
    CHECK_THAT(lockd_help.log(), Catch::Contains("cluster_id") && Catch::Contains("wrong_cluster"));
    cli::Process both({test::replica_binary(), "--data-dir", dir.sub("both"), "--cluster", dir.sub("c.toml"),
                         "--cluster-id", mine},
                        dir.sub("both.log"));
    auto ended = both.wait(10000);
    REQUIRE(ended.has_value());
    CHECK(*ended != 0);
    CHECK_THAT(both.log(), Catch::Contains("--cluster-id"));
  }
  SECTION("an --cluster-id that is not 32 hex digits is refused at start") {
    cli::Process bad({test::replica_binary(), "--data-dir", dir.sub("bad"), "--insecure", "--cluster-id", "12ab"},
                       dir.sub("bad.log"));
    auto ended = bad.wait(10000);
    REQUIRE(ended.has_value());
    CHECK(*ended != 0);
    CHECK(bad.log().find("--cluster-id") != std::string::npos);
  }
}

}  // namespace
}  // namespace palisade
