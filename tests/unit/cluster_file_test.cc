// ClusterFile (palisade/cluster_file.h): a client's options from a cluster file
// on disk, as a program linking palisade::config reads it. The installed
// library is run against a real cluster by the install test.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "base/temp_dir.h"
#include "palisade/cluster_file.h"
#include "transport/curve_keys.h"

namespace palisade {
namespace {

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.sub(name);
  std::ofstream(path) << text;
  return path;
}

// The file loaded, or the test stops saying why not.
ClusterFile loaded(const std::string& path, const std::string& key_path = {}) {
  auto file = ClusterFile::load(path, key_path);
  INFO(file.status().to_string());
  REQUIRE(file.is_ok());
  return std::move(file).value();
}

const std::string kPlaintext = R"(group = "test"
cluster_id = "0123456789abcdef0123456789abcdef"
[[lockd]]
id = 1
endpoint = "tcp://127.0.0.1:7100"
[[lockd]]
id = 2
endpoint = "tcp://127.0.0.1:7101"
[[replica]]
endpoint = "tcp://127.0.0.1:7200"
[[replica]]
endpoint = "tcp://127.0.0.1:7201"
[[replica]]
endpoint = "tcp://127.0.0.1:7202"
[timing]
client_grace_ms = 30000
max_clock_drift_ppm = 200
)";

TEST_CASE("cluster file: a plaintext cluster's endpoints, id, majorities and timing", "[config]") {
  TempDir dir;
  const ClusterFile c = loaded(write(dir, "cluster.toml", kPlaintext));
  CHECK(c.lock_group == std::vector<std::string>{"tcp://127.0.0.1:7100", "tcp://127.0.0.1:7101"});
  CHECK(c.replicas.size() == 3);
  CHECK(c.read_quorum == 2);
  CHECK(c.write_quorum == 2);
  CHECK_FALSE(c.credentials.has_value());

  const QuorumStoreOptions store = c.store_options();
  CHECK(store.replicas == c.replicas);
  CHECK(store.cluster_id == "0123456789abcdef0123456789abcdef");
  CHECK(store.read_quorum == 2);
  CHECK(store.write_quorum == 2);
  const LockClientOptions locks = c.lock_client_options();
  CHECK(locks.nodes == c.lock_group);
  CHECK(locks.cluster_id == store.cluster_id);
  CHECK(locks.grace == std::chrono::milliseconds(30000));
  CHECK(locks.max_clock_drift_ppm == 200);
}

TEST_CASE("cluster file: quorums as the file sets them", "[config]") {
  TempDir dir;
  const ClusterFile c = loaded(write(dir, "cluster.toml", kPlaintext + "[quorum]\nread = 1\nwrite = 3\n"));
  CHECK(c.store_options().read_quorum == 1);
  CHECK(c.store_options().write_quorum == 3);
}

TEST_CASE("cluster file: a secure cluster needs a listed key, and gives credentials", "[config]") {
  TempDir dir;
  const transport::KeyFile app{"app", transport::generate_curve_keys()};
  const transport::KeyFile lockd{"lockd-1", transport::generate_curve_keys()};
  const transport::KeyFile replica{"replica-0", transport::generate_curve_keys()};
  const std::string secure = R"(group = "test"
[[identity]]
name = "app"
keys = [")" + app.keys.public_key +
                             R"("]
[[identity]]
name = "lockd-1"
keys = [")" + lockd.keys.public_key +
                             R"("]
roles = ["lockd"]
[[lockd]]
id = 1
endpoint = "tcp://127.0.0.1:7100"
identity = "lockd-1"
[[identity]]
name = "replica-0"
keys = [")" + replica.keys.public_key +
                             R"("]
roles = ["replica"]
[[replica]]
endpoint = "tcp://127.0.0.1:7200"
identity = "replica-0"
)";
  const std::string path = write(dir, "cluster.toml", secure);
  REQUIRE(transport::write_key_file(dir.sub("app.key"), app).is_ok());

  const ClusterFile c = loaded(path, dir.sub("app.key"));
  REQUIRE(c.credentials.has_value());
  CHECK(c.credentials->identity == "app");
  CHECK(c.credentials->server_keys.at("tcp://127.0.0.1:7100") == lockd.keys.public_key);
  CHECK(c.store_options().credentials.has_value());
  CHECK(c.lock_client_options().credentials.has_value());

  auto keyless = ClusterFile::load(path);
  REQUIRE_FALSE(keyless.is_ok());
  CHECK(keyless.status().code() == Code::kBadRequest);
  CHECK(keyless.status().message().find("lists identities") != std::string::npos);
}

TEST_CASE("cluster file: a missing or malformed file is refused, naming the file", "[config]") {
  TempDir dir;
  auto missing = ClusterFile::load(dir.sub("none.toml"));
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == Code::kStorageError);
  CHECK(missing.status().message().find("none.toml") != std::string::npos);
  auto malformed = ClusterFile::load(write(dir, "bad.toml", "[[lockd]\n"));
  REQUIRE_FALSE(malformed.is_ok());
  CHECK(malformed.status().code() == Code::kBadRequest);
  CHECK(malformed.status().message().find("bad.toml") != std::string::npos);
}

}  // namespace
}  // namespace palisade
