// The cluster the recipes' tests run on (election, conditional writes): a
// local cluster of this build's daemons with short leases (session lease
// 3 s), and stores and lock clients of it. Should a test end by a failed
// REQUIRE, the end of every daemon's log goes to stderr.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <exception>
#include <iostream>
#include <memory>

#include "base/temp_dir.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "tests/support/local_cluster.h"

namespace palisade::test {

struct RecipeCluster {
  TempDir dir;
  std::unique_ptr<cli::LocalCluster> cluster;

  RecipeCluster() {
    cli::LocalClusterOptions o = local_cluster_options(dir.sub("cluster"));
    o.timing = cli::short_lease_timing();
    cluster = start_local_cluster(std::move(o));
  }
  ~RecipeCluster() {
    if (std::uncaught_exceptions() > 0 && cluster) std::cerr << "daemon logs:\n" << cluster->logs(60) << "\n";
  }

  std::unique_ptr<QuorumStore> store() {
    QuorumStoreOptions o;
    o.replicas = cluster->replica_endpoints();
    o.timeout = std::chrono::milliseconds(5000);  // room for slow syncs on a busy machine
    auto s = QuorumStore::open(o);
    REQUIRE(s.is_ok());
    return std::move(s).value();
  }
  // A session; with `store`, its acquires fence it.
  std::unique_ptr<LockClient> client(QuorumStore* store) {
    LockClientOptions o;
    o.nodes = cluster->lockd_endpoints();
    o.request_timeout = std::chrono::milliseconds(300);
    o.call_timeout = std::chrono::milliseconds(8000);
    o.store = store;
    auto c = LockClient::connect(std::move(o), std::chrono::seconds(10));
    REQUIRE(c.is_ok());
    return std::move(c).value();
  }
};

}  // namespace palisade::test
