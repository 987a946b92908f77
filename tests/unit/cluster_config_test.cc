// The cluster file (config/cluster_config.h): a good file, every kind of bad file
// refused with a message naming the file, format/parse round trip, a missing file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/cluster_config.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

const std::string kPath = "/etc/palisade/cluster.toml";

const std::string kGood = R"(# a three-node cluster
cluster_id = "00112233445566778899AABBCCDDEEFF"
group = "local-1"
key_file = "cluster.key"

[[lockd]]
id = 1
endpoint = "tcp://127.0.0.1:7100"
[[lockd]]
id = 2
endpoint = "tcp://127.0.0.1:7101"
[[lockd]]
id = 3
endpoint = "tcp://127.0.0.1:7102"

[[replica]]
endpoint = "tcp://127.0.0.1:7200"
[[replica]]
endpoint = "tcp://127.0.0.1:7201"
[[replica]]
endpoint = "tcp://127.0.0.1:7202"

[quorum]
read = 2
write = 2

[timing]
session_lease_ms = 12000
client_grace_ms = 45000
master_lease_ms = 4000
heartbeat_ms = 500
election_timeout_ms = 1000
max_clock_drift_ppm = 1000
)";

// The minimal file: one lockd node, one replica, defaults for the rest.
const std::string kMinimal = R"(
group = "g"
[[lockd]]
id = 7
endpoint = "tcp://a:1"
[[replica]]
endpoint = "tcp://b:1"
)";

// kGood with the first occurrence of `from` replaced by `to`.
std::string edit(const std::string& from, const std::string& to, std::string text = kGood) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// A cluster file that must be refused, and part of what the refusal says.
struct Case {
  const char* name;
  std::string text;
  std::string says;
};

// Each case is refused as a bad request naming the file and the problem.
void check_refused(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      auto parsed = parse_cluster_config(c.text, kPath);
      REQUIRE_FALSE(parsed.is_ok());
      const std::string message = parsed.status().message();
      INFO(message);
      CHECK(parsed.code() == Code::kBadRequest);
      CHECK(message.starts_with(kPath + ":"));
      CHECK(message.find(c.says) != std::string::npos);
    }
  }
}

TEST_CASE("cluster file: a good file", "[config]") {
  auto parsed = parse_cluster_config(kGood, kPath);
  INFO(parsed.status().to_string());
  REQUIRE(parsed.is_ok());
  const ClusterConfig& c = parsed.value();
  CHECK(c.path == kPath);
  CHECK(cluster_id_hex(c.cluster_id) == "00112233445566778899aabbccddeeff");
  CHECK(c.group == "local-1");
  CHECK(c.key_file == "/etc/palisade/cluster.key");
  REQUIRE(c.lockd.size() == 3);
  CHECK(c.lockd[0] == LockdNode{1, "tcp://127.0.0.1:7100"});
  CHECK(c.lockd[2] == LockdNode{3, "tcp://127.0.0.1:7102"});
  CHECK(c.replicas == std::vector<std::string>{"tcp://127.0.0.1:7200", "tcp://127.0.0.1:7201", "tcp://127.0.0.1:7202"});
  CHECK(c.read_quorum == 2);
  CHECK(c.write_quorum == 2);
  CHECK(c.timing == ClusterTiming{});
  REQUIRE(c.lockd_node(2) != nullptr);
  CHECK(c.lockd_node(2)->endpoint == "tcp://127.0.0.1:7101");
  CHECK(c.lockd_node(4) == nullptr);
}

TEST_CASE("cluster file: defaults and optional parts", "[config]") {
  auto parsed = parse_cluster_config(kMinimal, kPath);
  INFO(parsed.status().to_string());
  REQUIRE(parsed.is_ok());
  const ClusterConfig& c = parsed.value();
  CHECK(c.cluster_id.empty());  // a file from before cluster ids: nothing is checked
  CHECK(c.key_file.empty());
  CHECK(c.read_quorum == 0);
  CHECK(c.write_quorum == 0);
  CHECK(c.timing == ClusterTiming{});
  CHECK(c.lockd.size() == 1);
  CHECK(c.replicas.size() == 1);

  SECTION("timing values given replace only their defaults") {
    auto t = parse_cluster_config(kMinimal + "[timing]\nheartbeat_ms = 250\n", kPath);
    REQUIRE(t.is_ok());
    ClusterTiming expected;
    expected.heartbeat_ms = 250;
    CHECK(t.value().timing == expected);
  }
  SECTION("one quorum given, the other a majority") {
    auto q = parse_cluster_config(edit("read = 2\nwrite = 2\n", "write = 3\n"), kPath);
    INFO(q.status().to_string());
    REQUIRE(q.is_ok());
    CHECK(q.value().read_quorum == 0);
    CHECK(q.value().write_quorum == 3);
  }
  SECTION("a spare replica is known, but not in the set the file starts with") {
    auto s = parse_cluster_config(kGood + "[[replica]]\nendpoint = \"tcp://127.0.0.1:7203\"\nspare = true\n", kPath);
    INFO(s.status().to_string());
    REQUIRE(s.is_ok());
    CHECK(s.value().replicas.size() == 3);  // N and the quorums count the set only
    CHECK(s.value().spare_replicas == std::vector<std::string>{"tcp://127.0.0.1:7203"});
  }
  SECTION("a client's file may name only the lock group: its record gives the replicas") {
    auto l = parse_cluster_config(kMinimal.substr(0, kMinimal.find("[[replica]]")), kPath);
    INFO(l.status().to_string());
    REQUIRE(l.is_ok());
    CHECK(l.value().replicas.empty());
    CHECK(l.value().lockd.size() == 1);
    // and reads back as the same file
    CHECK(parse_cluster_config(format_cluster_config(l.value()), kPath).value() == l.value());
  }
  SECTION("seven lockd nodes") {
    std::string text = "group = \"g\"\n[[replica]]\nendpoint = \"tcp://h:1\"\n";
    for (int i = 1; i <= 7; ++i) text += "[[lockd]]\nid = " + std::to_string(i * 30) + "\nendpoint = \"tcp://l:" + std::to_string(i) + "\"\n";
    CHECK(parse_cluster_config(text, kPath).is_ok());
  }
}

TEST_CASE("cluster file: key_file is resolved against the cluster file's directory", "[config]") {
  CHECK(parse_cluster_config(kGood, "/a/b/cluster.toml").value().key_file == "/a/b/cluster.key");
  CHECK(parse_cluster_config(edit("\"cluster.key\"", "\"../keys/k\""), "/a/b/cluster.toml").value().key_file ==
        "/a/keys/k");
  CHECK(parse_cluster_config(edit("\"cluster.key\"", "\"/secret/k\""), "/a/b/cluster.toml").value().key_file ==
        "/secret/k");
  // A cluster file named relative to the working directory gives an absolute path too.
  const std::string relative = parse_cluster_config(kGood, "conf/cluster.toml").value().key_file;
  CHECK(relative == (std::filesystem::current_path() / "conf/cluster.key").lexically_normal().string());
}

TEST_CASE("cluster file: replica_key_file keeps the cluster key from the replicas", "[config]") {
  const std::string pk = "sequencer_public_key = \"psk1.4kjbmWEQ_NW1yQFY8nD7b_qDMZZ6OEfeKv9N1-nQyv8\"\n";
  auto both =
      parse_cluster_config(edit("group =", pk + "replica_key_file = \"r/replica.key\"\ngroup ="), "/a/b/cluster.toml");
  REQUIRE(both.is_ok());
  CHECK(both.value().replica_key_file == "/a/b/r/replica.key");
  CHECK(both.value().replicas_key_file() == "/a/b/r/replica.key");
  CHECK(both.value().key_file == "/a/b/cluster.key");
  // An older file: the replicas use the cluster key.
  CHECK(parse_cluster_config(kGood, "/a/b/cluster.toml").value().replicas_key_file() == "/a/b/cluster.key");
  // Replicas without the cluster key need the public key to check sequencers.
  auto alone = parse_cluster_config(edit("group =", "replica_key_file = \"replica.key\"\ngroup ="), kPath);
  CHECK(alone.code() == Code::kBadRequest);
  CHECK_THAT(alone.status().message(), Catch::Contains("'replica_key_file' needs 'sequencer_public_key'"));
  CHECK(parse_cluster_config(edit("group =", pk + "replica_key_file = \"\"\ngroup ="), kPath)
            .status()
            .message()
            .find("'replica_key_file' must not be empty") != std::string::npos);
}

TEST_CASE("cluster file: bad files are refused with the file, line and problem", "[config]") {
  const std::vector<Case> cases = {
      {"not TOML", "group = \n", "not valid TOML"},
      {"duplicate key", edit("group = \"local-1\"", "group = \"a\"\ngroup = \"b\""), "not valid TOML"},
      {"cluster_id too short", edit("EEFF\"", "EE\""),
       "'cluster_id' must be 32 hex digits, not '00112233445566778899AABBCCDDEE'"},
      {"cluster_id not hex", edit("00112233", "0011223g"), "'cluster_id' must be 32 hex digits"},
      {"cluster_id empty", edit("\"00112233445566778899AABBCCDDEEFF\"", "\"\""),
       "'cluster_id' must be 32 hex digits, not ''"},
      {"cluster_id not a string", edit("\"00112233445566778899AABBCCDDEEFF\"", "7"), "'cluster_id' must be a string"},
      {"group missing", edit("group = \"local-1\"\n", ""), "missing key 'group'"},
      {"group empty", edit("\"local-1\"", "\"\""), "'group' must be"},
      {"group too long", edit("\"local-1\"", "\"" + std::string(129, 'g') + "\""), "'group' must be"},
      {"group not a string", edit("\"local-1\"", "1"), "'group' must be a string"},
      {"key_file empty", edit("\"cluster.key\"", "\"\""), "'key_file' must not be empty"},
      {"sequencer_public_key without its prefix",
       edit("group =", "sequencer_public_key = \"" + std::string(43, 'A') + "\"\ngroup ="),
       "'sequencer_public_key' must be \"psk1.\" and 43 base64url characters"},
      {"sequencer_public_key short",
       edit("group =", "sequencer_public_key = \"psk1." + std::string(42, 'A') + "\"\ngroup ="),
       "'sequencer_public_key' must be"},
      {"sequencer_public_key not base64url",
       edit("group =", "sequencer_public_key = \"psk1." + std::string(42, 'A') + "+\"\ngroup ="),
       "'sequencer_public_key' must be"},
      {"sequencer_public_key the cluster key",
       edit("group =", "sequencer_public_key = \"" + std::string(64, 'a') + "\"\ngroup ="),
       "'sequencer_public_key' must be"},
      {"unknown top-level key", edit("group =", "groups = 1\ngroup ="), "unknown key 'groups'"},
      {"unknown table", kGood + "[extra]\nx = 1\n", "unknown key 'extra'"},
      {"unknown key in [[lockd]]", edit("id = 2\n", "id = 2\nport = 1\n"), "unknown key 'port' of [[lockd]] node 2"},
      {"unknown key in [[replica]]",
       edit("endpoint = \"tcp://127.0.0.1:7201\"", "endpoint = \"tcp://127.0.0.1:7201\"\ndir = \"x\""),
       "unknown key 'dir' of [[replica]] 2"},
      {"unknown key in [quorum]", edit("read = 2", "read = 2\nquorum = 2"), "unknown key 'quorum' in [quorum]"},
      {"unknown key in [timing]", edit("heartbeat_ms = 500", "heartbeat_ms = 500\nheartbeat = 5"),
       "unknown key 'heartbeat' in [timing]"},
      {"no lockd", kMinimal.substr(0, kMinimal.find("[[lockd]]")) + "[[replica]]\nendpoint = \"tcp://h:1\"\n",
       "1..7 [[lockd]]"},
      {"eight lockd",
       [] {
         std::string text = "group = \"g\"\n[[replica]]\nendpoint = \"tcp://h:1\"\n";
         for (int i = 1; i <= 8; ++i)
           text += "[[lockd]]\nid = " + std::to_string(i) + "\nendpoint = \"tcp://l:" + std::to_string(i) + "\"\n";
         return text;
       }(),
       "it has 8"},
      {"lockd not a list of tables", "group = \"g\"\nlockd = 3\n[[replica]]\nendpoint = \"tcp://h:1\"\n",
       "'lockd' must be a list of tables"},
      {"lockd id missing", edit("id = 2\n", ""), "missing key 'id' of [[lockd]] node 2"},
      {"lockd id 0", edit("id = 2", "id = 0"), "'id' of [[lockd]] node 2 is 0, must be 1..255"},
      {"lockd id 256", edit("id = 2", "id = 256"), "is 256, must be 1..255"},
      {"lockd id negative", edit("id = 2", "id = -1"), "is -1"},
      {"lockd id a string", edit("id = 2", "id = \"2\""), "'id' of [[lockd]] node 2 must be an integer"},
      {"lockd id twice", edit("id = 2", "id = 1"), "lockd id 1 is used twice"},
      {"lockd endpoint missing", edit("endpoint = \"tcp://127.0.0.1:7101\"\n", ""),
       "missing key 'endpoint' of [[lockd]] node 2"},
      {"lockd endpoint empty", edit("\"tcp://127.0.0.1:7101\"", "\"\""),
       "'endpoint' of [[lockd]] node 2 must not be empty"},
      {"lockd endpoints twice", edit("\"tcp://127.0.0.1:7101\"", "\"tcp://127.0.0.1:7100\""),
       "is used by another node"},
      {"replica endpoint without a transport", edit("\"tcp://127.0.0.1:7201\"", "\"garbage\""),
       "'endpoint' of [[replica]] 2: 'garbage' is not an endpoint"},
      {"lockd endpoint without a port", edit("\"tcp://127.0.0.1:7101\"", "\"tcp://127.0.0.1\""),
       "'endpoint' of [[lockd]] node 2: endpoint 'tcp://127.0.0.1' is not valid: it has no port"},
      {"endpoint port out of range", edit("\"tcp://127.0.0.1:7201\"", "\"tcp://h:70000\""), "its port '70000'"},
      {"endpoint of every interface", edit("\"tcp://127.0.0.1:7201\"", "\"tcp://*:7201\""), "'*' is for listening"},
      {"endpoint of an unknown transport", edit("\"tcp://127.0.0.1:7201\"", "\"udp://h:1\""),
       "'udp' is not a transport"},
      {"quorums without replicas to count",
       edit("endpoint = \"tcp://b:1\"", "endpoint = \"tcp://b:1\"\nspare = true", kMinimal + "[quorum]\nread = 1\n"),
       "[quorum] needs the [[replica]] entries it counts"},
      {"spare not a boolean",
       edit("endpoint = \"tcp://127.0.0.1:7201\"", "endpoint = \"tcp://127.0.0.1:7201\"\nspare = 1"),
       "'spare' of [[replica]] 2 must be true or false"},
      {"replica endpoint empty", edit("\"tcp://127.0.0.1:7201\"", "\"\""),
       "'endpoint' of [[replica]] 2 must not be empty"},
      {"replica endpoint twice", edit("\"tcp://127.0.0.1:7201\"", "\"tcp://127.0.0.1:7200\""),
       "is used by another node"},
      {"replica and lockd share an endpoint", edit("\"tcp://127.0.0.1:7201\"", "\"tcp://127.0.0.1:7100\""),
       "is used by another node"},
      {"quorum 0", edit("read = 2", "read = 0"), "'read' in [quorum] is 0, must be 1..3"},
      {"quorum over N", edit("write = 2", "write = 4"), "'write' in [quorum] is 4, must be 1..3"},
      {"quorums that do not meet", edit("read = 2", "read = 1"), "must exceed the 3 replicas"},
      {"write quorum not a majority", edit("read = 2\nwrite = 2", "read = 3\nwrite = 1"), "must be a majority"},
      {"quorum not a table", edit("group =", "quorum = 2\ngroup =", edit("[quorum]\nread = 2\nwrite = 2\n", "")),
       "'quorum' must be a table"},
      {"timing 0", edit("session_lease_ms = 12000", "session_lease_ms = 0"), "'session_lease_ms' in [timing] is 0"},
      {"timing negative", edit("master_lease_ms = 4000", "master_lease_ms = -4000"),
       "'master_lease_ms' in [timing] is -4000"},
      {"timing a float", edit("heartbeat_ms = 500", "heartbeat_ms = 0.5"),
       "'heartbeat_ms' in [timing] must be an integer"},
      {"heartbeat not below the master lease", edit("heartbeat_ms = 500", "heartbeat_ms = 4000"),
       "heartbeat_ms (4000) must be below master_lease_ms (4000)"},
      {"election timeout below the heartbeat", edit("election_timeout_ms = 1000", "election_timeout_ms = 400"),
       "election_timeout_ms (400) must be at least heartbeat_ms (500)"},
      {"drift ppm 0", edit("max_clock_drift_ppm = 1000", "max_clock_drift_ppm = 0"),
       "'max_clock_drift_ppm' in [timing] is 0"},
  };
  check_refused(cases);
}

// kMinimal with identities: every daemon serves as one, with its role.
const std::string kKeyA = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
const std::string kKeyB = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
const std::string kKeyC = std::string(40, '0');
const std::string kSecure = R"(
group = "g"
[[identity]]
name = "lockd-7"
keys = [")" + kKeyA + R"("]
roles = ["lockd"]
[[identity]]
name = "replica-b"
keys = [")" + kKeyB + R"(", ")" +
                            kKeyC + R"("]
roles = ["replica", "admin"]
[[identity]]
name = "ops"
keys = ["1111111111111111111111111111111111111111"]
[[lockd]]
id = 7
endpoint = "tcp://a:1"
identity = "lockd-7"
[[replica]]
endpoint = "tcp://b:1"
identity = "replica-b"
)";

TEST_CASE("cluster file: identities, their keys and roles, and the daemons' own", "[config]") {
  auto parsed = parse_cluster_config(kSecure, kPath);
  INFO(parsed.status().to_string());
  REQUIRE(parsed.is_ok());
  const ClusterConfig& c = parsed.value();
  REQUIRE(c.identities.size() == 3);
  CHECK(c.identities[1] == Identity{"replica-b", {kKeyB, kKeyC}, {"replica", "admin"}});
  CHECK(c.identities[2].roles.empty());  // an identity with no role: a plain client
  CHECK(c.identity("ops") == &c.identities[2]);
  CHECK(c.identity("nobody") == nullptr);
  CHECK(c.identities[1].has_role("admin"));
  CHECK_FALSE(c.identities[2].has_role("admin"));
  CHECK(c.daemon_identity == std::map<std::string, std::string>{{"tcp://a:1", "lockd-7"}, {"tcp://b:1", "replica-b"}});
  auto again = parse_cluster_config(format_cluster_config(c), kPath);
  REQUIRE(again.is_ok());
  CHECK(again.value() == c);

  // A cluster without identities has no daemon identities either.
  CHECK(parse_cluster_config(kMinimal, kPath).value().identities.empty());
}

TEST_CASE("cluster file: bad identities are refused by line", "[config]") {
  auto secure = [](const std::string& from, const std::string& to) { return edit(from, to, kSecure); };
  const std::vector<Case> cases = {
      {"unknown key", secure("name = \"ops\"", "name = \"ops\"\ncolour = 1"), "unknown key 'colour' of [[identity]] 3"},
      {"no name", secure("name = \"ops\"\n", ""), "missing key 'name' of [[identity]] 3"},
      {"bad name", secure("name = \"ops\"", "name = \"-ops\""), "'-ops' of [[identity]] 3 is not an identity name"},
      {"name twice", secure("name = \"ops\"", "name = \"lockd-7\""), "identity 'lockd-7' is defined twice"},
      {"no keys", secure("keys = [\"1111111111111111111111111111111111111111\"]\n", ""),
       "missing key 'keys' of [[identity]] 3"},
      {"keys not strings", secure("keys = [\"1111111111111111111111111111111111111111\"]", "keys = [1]"),
       "'keys' of [[identity]] 3 must be a list of strings"},
      {"keys empty", secure("keys = [\"1111111111111111111111111111111111111111\"]", "keys = []"), "needs 1 or 2 keys"},
      {"three keys",
       secure("keys = [\"1111111111111111111111111111111111111111\"]",
              "keys = [\"1111111111111111111111111111111111111111\", \"2222222222222222222222222222222222222222\", "
              "\"3333333333333333333333333333333333333333\"]"),
       "it has 3"},
      {"not a key", secure("1111111111111111111111111111111111111111", "11111"), "is not a CURVE public key"},
      {"one key in two identities", secure("1111111111111111111111111111111111111111", kKeyA), "is listed twice"},
      {"unknown role", secure("roles = [\"lockd\"]", "roles = [\"root\"]"), "unknown role 'root'"},
      {"a daemon without identity", secure("identity = \"replica-b\"\n", ""),
       "missing key 'identity' of [[replica]] 1: with [[identity]] entries, every daemon names"},
      {"an identity nobody defines", secure("identity = \"replica-b\"", "identity = \"replica-c\""),
       "names 'replica-c', which no [[identity]] defines"},
      {"an identity without the role", secure("identity = \"lockd-7\"", "identity = \"ops\""),
       "'identity' of [[lockd]] node 1 names 'ops', which lacks the role 'lockd'"},
      {"a daemon identity without identities",
       edit("endpoint = \"tcp://a:1\"", "endpoint = \"tcp://a:1\"\nidentity = \"x\"", kMinimal),
       "names 'x', but no [[identity]] defines any"},
  };
  check_refused(cases);
}

const std::string kRoles = kSecure + R"(
[[role]]
name = "jobs"
locks = ["jobs/*"]
shared_locks = ["config"]
read = ["jobs/*", "config/*"]
write = ["jobs/*"]
delete = ["jobs/*"]
[[role]]
name = "auditor"
read = ["*"]
admin = false
)";

TEST_CASE("cluster file: [[role]] tables, and identities that name them", "[config][security]") {
  auto parsed = parse_cluster_config(edit("name = \"ops\"", "name = \"ops\"\nroles = [\"jobs\"]", kRoles), kPath);
  INFO(parsed.status().to_string());
  REQUIRE(parsed.is_ok());
  const ClusterConfig& c = parsed.value();
  REQUIRE(c.roles.size() == 2);
  CHECK(c.roles[0] == Role{.name = "jobs",
                           .locks = {"jobs/*"},
                           .shared_locks = {"config"},
                           .read = {"jobs/*", "config/*"},
                           .write = {"jobs/*"},
                           .remove = {"jobs/*"}});
  CHECK(c.role("auditor")->read == std::vector<std::string>{"*"});
  CHECK(c.role("lockd") == nullptr);  // built in, not a table
  const Permissions p = c.permissions();
  CHECK(p.configured());
  CHECK(p.may_acquire("ops", "jobs/7", LockMode::kExclusive));
  CHECK(p.may_acquire("ops", "config", LockMode::kShared));
  CHECK_FALSE(p.may_acquire("ops", "config", LockMode::kExclusive));
  CHECK_FALSE(p.may_acquire("ops", "ledger", LockMode::kShared));
  CHECK(p.may_write("ops", "jobs/7"));
  CHECK_FALSE(p.may_write("ops", "ledger/1"));
  CHECK(p.is_admin("replica-b"));
  CHECK_FALSE(p.is_admin("ops"));
  auto again = parse_cluster_config(format_cluster_config(c), kPath);
  REQUIRE(again.is_ok());
  CHECK(again.value() == c);
  // No [[role]]: nothing configured.
  CHECK_FALSE(parse_cluster_config(kSecure, kPath).value().permissions().configured());
}

TEST_CASE("cluster file: bad [[role]] tables are refused by line", "[config][security]") {
  auto roles = [](const std::string& from, const std::string& to) { return edit(from, to, kRoles); };
  const std::vector<Case> cases = {
      {"unknown key", roles("name = \"auditor\"", "name = \"auditor\"\ncolour = 1"),
       "unknown key 'colour' of [[role]] 2"},
      {"no name", roles("name = \"auditor\"\n", ""), "missing key 'name' of [[role]] 2"},
      {"bad name", roles("name = \"auditor\"", "name = \"audit or\""), "is not a role name"},
      {"a built-in name", roles("name = \"auditor\"", "name = \"admin\""), "role 'admin' is built in"},
      {"defined twice", roles("name = \"auditor\"", "name = \"jobs\""), "role 'jobs' is defined twice"},
      {"patterns not strings", roles("read = [\"*\"]", "read = [1]"), "'read' of [[role]] 2 must be a list of strings"},
      {"admin not a boolean", roles("admin = false", "admin = \"yes\""), "'admin' of [[role]] 2 must be true or false"},
      {"an identity naming an undefined role", roles("roles = [\"lockd\"]", "roles = [\"lockd\", \"ghost\"]"),
       "unknown role 'ghost'"},
      {"roles without identities", kMinimal + "\n[[role]]\nname = \"r\"\n", "[[role]] tables need [[identity]]"},
  };
  check_refused(cases);
}

TEST_CASE("cluster file: problems name the line", "[config]") {
  auto parsed = parse_cluster_config(edit("id = 2", "id = 0"), kPath);
  REQUIRE_FALSE(parsed.is_ok());
  // "id = 0" is on line 10 of kGood.
  CHECK(parsed.status().message().starts_with(kPath + ":10: "));
  auto bad_id = parse_cluster_config(edit("EEFF\"", "EE\""), kPath);
  REQUIRE_FALSE(bad_id.is_ok());
  CHECK(bad_id.status().message().starts_with(kPath + ":2: "));
}

TEST_CASE("cluster file: format_cluster_config reads back as the same config", "[config]") {
  for (const std::string& text : {kGood, kMinimal, edit("read = 2\nwrite = 2\n", "write = 3\n")}) {
    auto parsed = parse_cluster_config(text, kPath);
    REQUIRE(parsed.is_ok());
    std::string formatted = format_cluster_config(parsed.value());
    INFO(formatted);
    auto again = parse_cluster_config(formatted, kPath);
    INFO(again.status().to_string());
    REQUIRE(again.is_ok());
    CHECK(again.value() == parsed.value());
  }
  SECTION("a config built in code, with characters TOML must escape") {
    ClusterConfig c;
    c.path = kPath;
    c.cluster_id = new_cluster_id();
    c.group = "g \"quoted\" \\ back\tslash";
    c.key_file = "/keys/a \"b\".key";
    c.sequencer_public_key = "psk1.4kjbmWEQ_NW1yQFY8nD7b_qDMZZ6OEfeKv9N1-nQyv8";
    c.replica_key_file = "/keys/replica.key";
    c.lockd = {{255, "ipc:///tmp/lockd \"1\""}, {1, "tcp://[::1]:7100"}};
    c.replicas = {"tcp://r1:1", "tcp://r2:1", "tcp://r3:1", "tcp://r4:1", "tcp://r5:1"};
    c.spare_replicas = {"tcp://r6:1"};
    c.read_quorum = 2;
    c.write_quorum = 4;
    c.timing.session_lease_ms = 30000;
    c.timing.election_timeout_ms = 2000;
    c.timing.max_clock_drift_ppm = 50;
    auto back = parse_cluster_config(format_cluster_config(c), kPath);
    INFO(back.status().to_string());
    REQUIRE(back.is_ok());
    CHECK(back.value() == c);
  }
}

TEST_CASE("cluster file: load_cluster_file reads a file, a missing one is a storage error", "[config]") {
  TempDir dir;
  {
    std::ofstream out(dir.sub("cluster.toml"));
    out << kGood;
  }
  auto loaded = load_cluster_file(dir.sub("cluster.toml"));
  INFO(loaded.status().to_string());
  REQUIRE(loaded.is_ok());
  CHECK(loaded.value().path == dir.sub("cluster.toml"));
  CHECK(loaded.value().key_file == dir.sub("cluster.key"));
  CHECK(loaded.value().group == "local-1");

  auto missing = load_cluster_file(dir.sub("absent.toml"));
  CHECK(missing.code() == Code::kStorageError);
  CHECK(missing.status().message().find(dir.sub("absent.toml")) != std::string::npos);
  CHECK(load_cluster_file(dir.path()).code() == Code::kStorageError);  // a directory

  {
    std::ofstream out(dir.sub("bad.toml"));
    out << "group = \"g\"\n";
  }
  auto bad = load_cluster_file(dir.sub("bad.toml"));
  CHECK(bad.code() == Code::kBadRequest);
  CHECK(bad.status().message().starts_with(dir.sub("bad.toml") + ":"));
}

}  // namespace
}  // namespace palisade
