// The CurveZMQ keys a cluster file implies (config/cluster_keys.h): the
// allow-list, each daemon's key, and the checks on a daemon's or a client's
// key file. The daemons' refusals are also run as processes (security_test).
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <string>

#include "base/temp_dir.h"
#include "config/cluster_keys.h"

namespace palisade {
namespace {

const std::string kLockd = "tcp://127.0.0.1:7100";
const std::string kReplica = "tcp://127.0.0.1:7200";

// A cluster of one lockd node and one replica; lockd-1 has a second key (being
// rotated in), and a client identity "app".
struct Keys {
  TempDir dir;
  transport::KeyFile lockd{"lockd-1", transport::generate_curve_keys()};
  transport::KeyFile lockd_second{"lockd-1", transport::generate_curve_keys()};
  transport::KeyFile replica{"replica-0", transport::generate_curve_keys()};
  transport::KeyFile app{"app", transport::generate_curve_keys()};
  ClusterConfig config;

  Keys() {
    config.path = dir.sub("cluster.toml");
    config.lockd = {{1, kLockd}};
    config.replicas = {kReplica};
    config.identities = {
        {.name = "lockd-1", .keys = {lockd.keys.public_key, lockd_second.keys.public_key}, .roles = {"lockd"}},
        {.name = "replica-0", .keys = {replica.keys.public_key}, .roles = {"replica"}},
        {.name = "app", .keys = {app.keys.public_key}, .roles = {}}};
    config.daemon_identity = {{kLockd, "lockd-1"}, {kReplica, "replica-0"}};
  }
  std::string file(const transport::KeyFile& key, const std::string& name) {
    const std::string path = dir.sub(name);
    REQUIRE(transport::write_key_file(path, key).is_ok());
    return path;
  }
};

void check_refused(const Result<std::optional<DaemonKeys>>& r, const std::string& says) {
  INFO(says);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == Code::kBadRequest);
  CHECK(r.status().message().find(says) != std::string::npos);
}

TEST_CASE("cluster keys: every listed key may connect, and a daemon is known by its first key", "[config]") {
  Keys k;
  const transport::AllowList allowed = allowed_keys(k.config);
  CHECK(allowed.size() == 4);
  CHECK(allowed.at(k.lockd_second.keys.public_key) == "lockd-1");
  CHECK(allowed.at(k.app.keys.public_key) == "app");
  CHECK(server_keys(k.config) ==
        std::map<std::string, std::string>{{kLockd, k.lockd.keys.public_key}, {kReplica, k.replica.keys.public_key}});
}

TEST_CASE("cluster keys: a daemon serves with its identity's first key, and nothing else", "[config]") {
  Keys k;
  auto served = load_daemon_keys(k.config, kLockd, k.file(k.lockd, "lockd.key"));
  REQUIRE(served.is_ok());
  REQUIRE(served.value().has_value());
  CHECK(served.value()->key.keys.public_key == k.lockd.keys.public_key);
  CHECK(served.value()->allowed == allowed_keys(k.config));

  check_refused(load_daemon_keys(k.config, kLockd, ""), "give --key FILE");
  check_refused(load_daemon_keys(k.config, kLockd, k.file(k.replica, "replica.key")), "serves as 'lockd-1'");
  check_refused(load_daemon_keys(k.config, kLockd, k.file(k.lockd_second, "second.key")), "second key");
  const transport::KeyFile unlisted{"lockd-1", transport::generate_curve_keys()};
  check_refused(load_daemon_keys(k.config, kLockd, k.file(unlisted, "unlisted.key")), "does not list");
  const transport::KeyFile stranger{"stranger", transport::generate_curve_keys()};
  check_refused(load_daemon_keys(k.config, kLockd, k.file(stranger, "stranger.key")), "'stranger'");
  check_refused(load_daemon_keys(k.config, "tcp://127.0.0.1:9999", k.file(k.app, "app.key")), "names no identity");
}

TEST_CASE("cluster keys: a replica its file does not list serves as its key's identity, if a replica's", "[config]") {
  Keys k;
  k.config.replicas.clear();  // a file that names only the lock group
  k.config.daemon_identity.erase(kReplica);
  const std::string unlisted = "tcp://127.0.0.1:7201";
  auto served = load_daemon_keys(k.config, unlisted, k.file(k.replica, "replica.key"));
  INFO(served.status().to_string());
  REQUIRE(served.is_ok());
  REQUIRE(served.value().has_value());
  CHECK(served.value()->key.identity == "replica-0");
  check_refused(load_daemon_keys(k.config, unlisted, k.file(k.app, "app.key")), "which has no replica role");
  check_refused(load_daemon_keys(k.config, unlisted, ""), "give --key FILE");
  // A file that lists replicas names each one's identity: an unlisted endpoint has none.
  k.config.replicas = {kReplica};
  check_refused(load_daemon_keys(k.config, unlisted, k.file(k.replica, "listed.key")), "names no identity");
}

TEST_CASE("cluster keys: a reload reads the file again and refuses one that turned plaintext", "[config]") {
  Keys k;
  const std::string key = k.file(k.replica, "replica.key");
  auto write = [&](const std::string& text) { std::ofstream(k.config.path) << text; };
  k.config.group = std::string(3, 'g');  // not = "g": GCC 12 warns falsely (-Wrestrict)
  write(format_cluster_config(k.config));
  auto reloaded = reload_daemon_keys(k.config.path, kReplica, key);
  INFO(reloaded.status().to_string());
  REQUIRE(reloaded.is_ok());
  CHECK(reloaded.value().allowed == allowed_keys(k.config));
  CHECK(reloaded.value().permissions == k.config.permissions());
  CHECK(reloaded.value().permissions.may_repair("replica-0"));
  CHECK_FALSE(reloaded.value().permissions.may_repair("app"));

  ClusterConfig plain = k.config;
  plain.identities.clear();
  plain.daemon_identity.clear();
  write(format_cluster_config(plain));
  auto refused = reload_daemon_keys(k.config.path, kReplica, key);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("lists no identities now") != std::string::npos);
  write("not a cluster file [");
  CHECK_FALSE(reload_daemon_keys(k.config.path, kReplica, key).is_ok());
}

TEST_CASE("cluster keys: without identities the links are plaintext, and a key given is refused", "[config]") {
  Keys k;
  k.config.identities.clear();
  k.config.daemon_identity.clear();
  auto plain = load_daemon_keys(k.config, kLockd, "");
  REQUIRE(plain.is_ok());
  CHECK_FALSE(plain.value().has_value());
  check_refused(load_daemon_keys(k.config, kLockd, k.file(k.lockd, "lockd.key")), "lists no identities");
  auto client = load_client_credentials(k.config, "");
  REQUIRE(client.is_ok());
  CHECK_FALSE(client.value().has_value());
  CHECK_FALSE(load_client_credentials(k.config, k.file(k.app, "app.key")).is_ok());
}

TEST_CASE("cluster keys: a client's credentials know every daemon's key", "[config]") {
  Keys k;
  auto c = load_client_credentials(k.config, k.file(k.app, "app.key"));
  REQUIRE(c.is_ok());
  REQUIRE(c.value().has_value());
  CHECK(c.value()->identity == "app");
  CHECK(c.value()->secret_key == k.app.keys.secret_key);
  CHECK(c.value()->server_keys == server_keys(k.config));
  CHECK(load_client_credentials(k.config, "").status().code() == Code::kBadRequest);
  const transport::KeyFile unlisted{"app", transport::generate_curve_keys()};
  CHECK(load_client_credentials(k.config, k.file(unlisted, "unlisted.key")).status().code() == Code::kBadRequest);
}

}  // namespace
}  // namespace palisade
