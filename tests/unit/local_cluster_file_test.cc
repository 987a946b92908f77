// What `palisade cluster add`, `remove` and `replace` change in a local
// cluster's directory (cli/local_cluster_file.h): the id and port a new lockd
// node gets, a new replica's name, their entries and identities in the
// cluster file and out again, and the file written back as `cluster up`
// writes it. tests/scripts/cluster_nodes_test.py
// runs the commands on a real cluster.
#include "cli/local_cluster_file.h"

#include <catch2/catch.hpp>

#include "cli/local_cluster.h"

#include <filesystem>
#include <string>
#include <vector>

#include "auth/cluster_key.h"
#include "auth/sequencer_signer.h"
#include "base/temp_dir.h"
#include "transport/curve_keys.h"

namespace palisade::cli {
namespace {

const std::string kPath = "/srv/palisade/local/cluster.toml";

// A secure cluster as `cluster up --lockd 2 --replicas 1` writes it, with keys of its own.
std::string secure_cluster() {
  auto identity = [](const std::string& name, const std::string& role) {
    return "[[identity]]\nname = \"" + name + "\"\nkeys = [\"" + transport::generate_curve_keys().public_key +
           "\"]\nroles = [\"" + role + "\"]\n\n";
  };
  return "cluster_id = \"0123456789abcdef0123456789abcdef\"\ngroup = \"local\"\nkey_file = \"cluster.key\"\n"
         "replica_key_file = \"replica.key\"\nsequencer_public_key = \"" +
         SequencerSigner(ClusterKey::generate(), "local").public_key() + "\"\n\n" + identity("lockd-1", "lockd") +
         identity("lockd-2", "lockd") + identity("replica-0", "replica") + identity("admin", "admin") +
         R"([[lockd]]
id = 1
endpoint = "tcp://127.0.0.1:7100"
identity = "lockd-1"

[[lockd]]
id = 2
endpoint = "tcp://127.0.0.1:7101"
identity = "lockd-2"

[[replica]]
endpoint = "tcp://127.0.0.1:7102"
identity = "replica-0"
)";
}

ClusterConfig parsed(const std::string& text) {
  auto config = parse_cluster_config(text, kPath);
  INFO(config.status().to_string());
  REQUIRE(config.is_ok());
  return std::move(config).value();
}

TEST_CASE("local cluster file: lockd-ID names", "[cli]") {
  CHECK(lockd_id_of("lockd-1") == 1u);
  CHECK(lockd_id_of("lockd-255") == 255u);
  for (const char* name :
       {"lockd-0", "lockd-256", "lockd-", "lockd-01", "lockd-2x", "lockd--2", "replica-0", "Lockd-1", "lockd-1.log"}) {
    INFO(name);
    CHECK_FALSE(lockd_id_of(name).has_value());
  }
}

TEST_CASE("local cluster file: a new node's id is above every id used, removed ones too", "[cli]") {
  const ClusterConfig config = parsed(secure_cluster());
  CHECK(next_lockd_id(config, {}) == 3u);
  // lockd-5 was removed: its data directory and log stay, and 5 is not given again.
  CHECK(next_lockd_id(config, {"cluster.toml", "keys", "lockd-1", "lockd-5", "lockd-5.log", "replica-0"}) == 6u);
  CHECK(next_lockd_id(config, {"lockd-7.log"}) == 8u);
  CHECK(next_lockd_id(config, {"lockd-254"}) == 255u);
  CHECK_FALSE(next_lockd_id(config, {"lockd-255"}).has_value());
}

TEST_CASE("local cluster file: a new node's endpoint is none the cluster uses", "[cli]") {
  const ClusterConfig config = parsed(secure_cluster());
  CHECK(unused_endpoint(config, {"tcp://127.0.0.1:7101", "tcp://127.0.0.1:7102", "tcp://127.0.0.1:7103"}) ==
        "tcp://127.0.0.1:7103");
  CHECK_FALSE(unused_endpoint(config, {"tcp://127.0.0.1:7100"}).has_value());
}

TEST_CASE("local cluster file: a node added, then removed, with its identity", "[cli]") {
  ClusterConfig config = parsed(secure_cluster());
  const ClusterConfig before = config;
  const Identity lockd3{.name = "lockd-3", .keys = {transport::generate_curve_keys().public_key}, .roles = {"lockd"}};
  add_lockd_node(config, {3, "tcp://127.0.0.1:7200"}, lockd3);

  // Written and read back, as a daemon reloading it would.
  const ClusterConfig again = parsed(cluster_file_text(config));
  REQUIRE(again.lockd_node(3) != nullptr);
  CHECK(again.lockd_node(3)->endpoint == "tcp://127.0.0.1:7200");
  REQUIRE(again.identity("lockd-3") != nullptr);
  CHECK(*again.identity("lockd-3") == lockd3);
  CHECK(again.daemon_identity.at("tcp://127.0.0.1:7200") == "lockd-3");
  CHECK(again.identities.size() == before.identities.size() + 1);

  // Out again: the file is what it was.
  ClusterConfig removed = again;
  CHECK(remove_lockd_node(removed, 3));
  CHECK(removed.lockd_node(3) == nullptr);
  CHECK(removed.identity("lockd-3") == nullptr);
  CHECK(removed.daemon_identity.count("tcp://127.0.0.1:7200") == 0);
  CHECK(removed == before);
  CHECK_FALSE(remove_lockd_node(removed, 3));

  // One of the first nodes goes the same way; the others and the admin stay.
  CHECK(remove_lockd_node(removed, 1));
  CHECK(removed.lockd.size() == 1);
  CHECK(removed.identity("lockd-1") == nullptr);
  CHECK(removed.identity("lockd-2") != nullptr);
  CHECK(removed.identity("admin") != nullptr);
  CHECK(parsed(cluster_file_text(removed)) == removed);
}

TEST_CASE("local cluster file: replica-N names, and a new replica's is above every one used", "[cli]") {
  CHECK(replica_number_of("replica-0") == 0u);
  CHECK(replica_number_of("replica-12") == 12u);
  for (const char* name : {"replica-", "replica-01", "replica-1x", "lockd-1", "replica-1.log"}) {
    INFO(name);
    CHECK_FALSE(replica_number_of(name).has_value());
  }
  const ClusterConfig config = parsed(secure_cluster());
  CHECK(next_replica_name(config, {}) == "replica-1");
  // replica-4 was replaced: its data directory and log stay, and its name is not given again.
  CHECK(next_replica_name(config, {"replica-0", "replica-4", "replica-4.log", "lockd-9"}) == "replica-5");
  CHECK(local_replica_name(config, "tcp://127.0.0.1:7102", 7) == "replica-0");  // its identity, not its place
}

TEST_CASE("local cluster file: a spare replica takes a replica's place, and the old one's identity goes", "[cli]") {
  ClusterConfig config = parsed(secure_cluster());
  const ClusterConfig before = config;
  const Identity replica1{.name = "replica-1",
                          .keys = {transport::generate_curve_keys().public_key},
                          .roles = {"replica"}};
  add_spare_replica(config, "tcp://127.0.0.1:7300", replica1);
  ClusterConfig again = parsed(cluster_file_text(config));
  CHECK(again.spare_replicas == std::vector<std::string>{"tcp://127.0.0.1:7300"});
  CHECK(again.replicas == before.replicas);
  CHECK(again.daemon_identity.at("tcp://127.0.0.1:7300") == "replica-1");
  CHECK_FALSE(unused_endpoint(again, {"tcp://127.0.0.1:7300"}).has_value());  // a spare's port is used too

  // Taken out again (a replacement that did not happen): as it was.
  ClusterConfig undone = again;
  CHECK(remove_replica(undone, "tcp://127.0.0.1:7300"));
  CHECK(undone == before);
  CHECK_FALSE(remove_replica(undone, "tcp://127.0.0.1:7300"));

  // The replacement done: the spare in the old one's place.
  CHECK_FALSE(swap_replica(again, "tcp://127.0.0.1:7999", "tcp://127.0.0.1:7300"));
  CHECK_FALSE(swap_replica(again, "tcp://127.0.0.1:7102", "tcp://127.0.0.1:7999"));
  REQUIRE(swap_replica(again, "tcp://127.0.0.1:7102", "tcp://127.0.0.1:7300"));
  const ClusterConfig swapped = parsed(cluster_file_text(again));
  CHECK(swapped.replicas == std::vector<std::string>{"tcp://127.0.0.1:7300"});
  CHECK(swapped.spare_replicas.empty());
  CHECK(swapped.identity("replica-0") == nullptr);
  CHECK(swapped.daemon_identity.count("tcp://127.0.0.1:7102") == 0);
  CHECK(local_replica_name(swapped, "tcp://127.0.0.1:7300", 0) == "replica-1");
}

TEST_CASE("local cluster file: a plaintext cluster's node has no identity", "[cli]") {
  ClusterConfig config = parsed(R"(group = "local"
key_file = "cluster.key"
[[lockd]]
id = 1
endpoint = "tcp://127.0.0.1:7100"
[[replica]]
endpoint = "tcp://127.0.0.1:7102"
)");
  add_lockd_node(config, {2, "tcp://127.0.0.1:7101"}, std::nullopt);
  const ClusterConfig again = parsed(cluster_file_text(config));
  CHECK(again.lockd.size() == 2);
  CHECK(again.identities.empty());
  CHECK(again.daemon_identity.empty());
}

TEST_CASE("local cluster file: key files beside the cluster file stay named relative to it", "[cli]") {
  const ClusterConfig config = parsed(secure_cluster());
  REQUIRE(config.key_file == "/srv/palisade/local/cluster.key");  // absolute once read
  const std::string text = cluster_file_text(config);
  CHECK_THAT(text, Catch::Contains("key_file = 'cluster.key'"));
  CHECK_THAT(text, Catch::Contains("replica_key_file = 'replica.key'"));
  // A key elsewhere keeps its absolute path.
  ClusterConfig elsewhere = config;
  elsewhere.key_file = "/etc/palisade/cluster.key";
  CHECK_THAT(cluster_file_text(elsewhere), Catch::Contains("key_file = '/etc/palisade/cluster.key'"));
}

TEST_CASE("local cluster file: a daemon's key file, and the identity to list", "[cli]") {
  TempDir dir;
  std::filesystem::create_directories(dir.sub("keys"));
  auto identity = write_daemon_key(dir.path(), "lockd-4", "lockd");
  INFO(identity.status().to_string());
  REQUIRE(identity.is_ok());
  CHECK(identity.value().name == "lockd-4");
  CHECK(identity.value().roles == std::vector<std::string>{"lockd"});
  auto file = transport::read_key_file(dir.sub("keys/lockd-4.key"));
  REQUIRE(file.is_ok());
  CHECK(file.value().identity == "lockd-4");
  CHECK(identity.value().keys == std::vector<std::string>{file.value().keys.public_key});
  // Never over another's key.
  CHECK_FALSE(write_daemon_key(dir.path(), "lockd-4", "lockd").is_ok());
}

}  // namespace
}  // namespace palisade::cli
