// The cluster the recipes' tests run on (election, conditional writes,
// watches): a local cluster of this build's daemons with short leases
// (session lease 3 s), stores and lock clients of it, and `palisade`
// processes (PALISADE_BIN) on it. Should a test end by a failed REQUIRE, the
// end of every daemon's log goes to stderr.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <exception>
#include <iostream>
#include <memory>

#include <sys/wait.h>

#include <string>
#include <vector>

#include "base/temp_dir.h"
#include "cli/process.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "tests/support/local_cluster.h"

namespace palisade::test {

struct CliRun {
  int code = -1;  // 128+N when signal N ended it
  std::string out;  // stdout and stderr
};

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
  // `palisade --cluster FILE ARGS...`, its output in DIR/LOG; with
  // `own_group`, in a process group of its own (as a shell's job).
  std::unique_ptr<cli::Process> start(const std::string& log, const std::vector<std::string>& args,
                                      bool own_group = false) {
    std::vector<std::string> argv = {PALISADE_BIN, "--cluster", cluster->cluster_file()};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<cli::Process>(argv, dir.sub(log), cli::ProcessOptions{.own_process_group = own_group});
  }
  // The same to its end (at most 60 s).
  CliRun run(const std::vector<std::string>& args, bool own_group = false) {
    static int n = 0;
    auto p = start("run-" + std::to_string(++n) + ".log", args, own_group);
    auto status = p->wait(60000);
    REQUIRE(status);
    return {WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status), p->log()};
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
