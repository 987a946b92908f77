// The palisade command line as a person uses it: every command a real process,
// against real clusters (`palisade cluster up`, or cli::LocalCluster with
// short leases), checked by exit codes, output, and the processes left behind.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "auth/sequencer_signer.h"
#include "transport/lockd_call.h"
#include "client/replica_connection.h"
#include "config/cluster_config.h"
#include "config/cluster_keys.h"
#include "base/cluster_id.h"
#include "wire/lock_protocol.h"
#include "transport/curve_keys.h"
#include "transport/transport.h"
#include "palisade/lock_client.h"
#include "tests/support/local_cluster.h"
#include "tests/support/waiting.h"
#include "tests/support/replica_process.h"
#include "cli/daemon_records.h"
#include "cli/process.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;

struct Run {
  int code = -1;
  std::string out;  // stdout and stderr
};

// How `p` ended within `timeout_ms`: its exit code, or minus the number of
// the signal that killed it (so a test tells `exit 143` from death by SIGTERM);
// nullopt while it still runs.
std::optional<int> ended_with(cli::Process& p, int timeout_ms) {
  auto status = p.wait(timeout_ms);
  if (!status) return std::nullopt;
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : -WTERMSIG(*status);
}

// Runs `palisade ARGS...` to completion (at most 60 s).
Run palisade(const TempDir& dir, const std::vector<std::string>& args) {
  static int n = 0;
  std::vector<std::string> argv = {PALISADE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  cli::Process p(argv, dir.sub("run-" + std::to_string(++n) + ".log"));
  auto ended = ended_with(p, 60000);
  REQUIRE(ended.has_value());
  return {*ended < 0 ? 128 - *ended : *ended, p.log()};  // as a shell reports it
}

std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

using test::read_file;
using test::wait_until;

// The scripts under test trap signals; a shell cannot trap a signal that was
// ignored when it started (as SIGINT is in a background job, SIGHUP under
// nohup), so the test gives every process it starts the default actions.
void default_signal_actions() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
}

// A JSON document printed alone.
nlohmann::json json_of(const Run& r) {
  INFO(r.out);
  return nlohmann::json::parse(r.out);
}

// A cluster with short leases for the commands to use through --cluster.
struct Fixture {
  TempDir dir;
  std::unique_ptr<cli::LocalCluster> cluster;
  std::vector<std::string> with_cluster;

  explicit Fixture(std::vector<std::string> replica_args = {}) {
    cli::LocalClusterOptions o = test::local_cluster_options(dir.sub("cluster"));
    o.timing = cli::short_lease_timing();
    o.replica_args = std::move(replica_args);
    cluster = test::start_local_cluster(o);
    with_cluster = {"--cluster", cluster->cluster_file()};
  }
  Run run(std::vector<std::string> args) {
    args.insert(args.begin(), with_cluster.begin(), with_cluster.end());
    return palisade(dir, args);
  }
  // `palisade lock ARGS...` in the background, in a process group of its own
  // as a shell's job: what the test sends it reaches it alone, as from a shell
  // or a supervisor (from its own group, it would count as sent to the group).
  std::unique_ptr<cli::Process> start(const std::string& log, std::vector<std::string> args) {
    std::vector<std::string> argv = {PALISADE_BIN};
    argv.insert(argv.end(), with_cluster.begin(), with_cluster.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<cli::Process>(argv, dir.sub(log), cli::ProcessOptions{.own_process_group = true});
  }
  // Pauses `holder` (a `palisade lock` process) past its session lease, takes
  // `lock` from another client meanwhile, and resumes it: it wakes to a lost lease.
  void take_over(cli::Process& holder, const std::string& lock) {
    holder.signal(SIGSTOP);
    LockClientOptions o;
    o.nodes = cluster->lockd_endpoints();
    auto other = LockClient::connect(o);
    REQUIRE(other.is_ok());
    auto lease = other.value()->acquire(lock, {.wait = 20s});
    REQUIRE(lease.is_ok());
    holder.signal(SIGCONT);
  }
};

// Stops and removes a cluster started with `palisade cluster up --dir DIR`,
// also when the test fails: its daemons outlive the test otherwise.
struct ClusterDown {
  const TempDir& home;
  std::string dir;
  ~ClusterDown() {
    cli::Process down({PALISADE_BIN, "cluster", "down", "--purge", "--dir", dir}, home.sub("cleanup.log"));
    down.wait(60000);
  }
};

TEST_CASE("cli: cluster up starts a healthy cluster in the background, down stops exactly its daemons",
          "[cli]") {
  TempDir home;
  setenv("PALISADE_HOME", home.path().c_str(), 1);  // the default cluster directory goes here
  unsetenv("PALISADE_CLUSTER");
  const std::string dir = home.path() + "/local";

  Run up = palisade(home, {"cluster", "up"});
  INFO(up.out);
  REQUIRE(up.code == 0);
  CHECK(last_line(up.out) == dir + "/cluster.toml");
  auto records = cli::read_daemon_records(dir + "/daemons");
  REQUIRE(records.is_ok());
  REQUIRE(records.value().size() == 6);
  for (const auto& r : records.value()) CHECK(cli::is_alive(r));
  // The replicas run anti-entropy in the background.
  CHECK(read_file(dir + "/replica-0.log").find("anti-entropy every 60000 ms") != std::string::npos);

  // Every other command finds the local cluster without being told.
  Run status = palisade(home, {"status"});
  INFO(status.out);
  CHECK(status.code == 0);
  CHECK(status.out.find("master lockd-") != std::string::npos);
  Run cstatus = palisade(home, {"cluster", "status", "-o", "json"});
  CHECK(cstatus.code == 0);
  auto cs = json_of(cstatus);
  CHECK(cs["healthy"] == true);
  CHECK(cs["daemons"].size() == 6);
  CHECK(palisade(home, {"put", "k", "kept across restarts"}).code == 0);

  // Under another cluster's id, the same daemons are another cluster's: both
  // status commands name them so and count none (issue #24: a port taken by
  // another cluster's daemon must not pass for one's own).
  {
    const std::string file = dir + "/cluster.toml";
    const std::string original = read_file(file);
    ClusterConfig other = load_cluster_file(file).value();
    other.cluster_id = new_cluster_id();
    std::ofstream(file) << format_cluster_config(other);
    Run foreign = palisade(home, {"cluster", "status", "-o", "json"});
    INFO(foreign.out);
    CHECK(foreign.code == 4);
    auto fj = json_of(foreign);
    CHECK(fj["state"] == "unavailable");
    for (const auto& d : fj["daemons"]) CHECK(d["role"] == "another cluster's");
    Run foreign_status = palisade(home, {"-o", "json", "status"});
    INFO(foreign_status.out);
    CHECK(foreign_status.code == 4);
    auto sj = json_of(foreign_status);
    CHECK(sj["lock_group"]["master"].is_null());
    for (const auto& n : sj["lock_group"]["nodes"]) {
      CHECK(n["reachable"] == true);
      CHECK(n["error"].get<std::string>().starts_with("wrong_cluster: "));
    }
    for (const auto& r : sj["replicas"]) {
      CHECK(r["reachable"] == true);
      CHECK(r["own_cluster"] == false);
    }
    Run foreign_text = palisade(home, {"status"});
    CHECK(foreign_text.out.find("another cluster's: wrong_cluster: ") != std::string::npos);
    std::ofstream(file) << original;
  }

  Run again = palisade(home, {"cluster", "up"});
  CHECK(again.code == 0);
  CHECK(again.out.find("already up") != std::string::npos);
  Run again_json = palisade(home, {"cluster", "up", "-o", "json"});
  CHECK(again_json.code == 0);
  auto aj = json_of(again_json);
  CHECK(aj["already_up"] == true);
  CHECK(aj["started"].empty());
  CHECK(aj["daemons"].size() == 6);

  Run down = palisade(home, {"cluster", "down"});
  INFO(down.out);
  CHECK(down.code == 0);
  for (const auto& r : records.value()) CHECK_FALSE(cli::is_alive(r));
  CHECK(palisade(home, {"status"}).code == 4);  // nothing answers
  // Its size is in its cluster file: a different one is a usage error.
  CHECK(palisade(home, {"cluster", "up", "--lockd", "5"}).code == 2);

  // Up again on the same directory: the same cluster, with its data.
  REQUIRE(palisade(home, {"cluster", "up"}).code == 0);
  Run get = palisade(home, {"get", "k"});
  CHECK(get.code == 0);
  CHECK(get.out == "kept across restarts\n");
  CHECK(palisade(home, {"cluster", "down", "--purge"}).code == 0);
  CHECK_FALSE(std::filesystem::exists(dir));
  unsetenv("PALISADE_HOME");
}

// Mode bits of `path` (permission part).
unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

TEST_CASE("cli: cluster up is secure by default and every command connects with keys/admin.key", "[cli][security]") {
  TempDir home;
  unsetenv("PALISADE_CLUSTER");
  unsetenv("PALISADE_KEY");
  const std::string dir = home.path() + "/c";
  const std::string file = dir + "/cluster.toml";
  ClusterDown cleanup{home, dir};
  Run up = palisade(home, {"cluster", "up", "--dir", dir});
  INFO(up.out);
  REQUIRE(up.code == 0);

  // A key pair per daemon and one for the admin, secret to their owner, each
  // listed in the cluster file.
  auto config = load_cluster_file(file);
  REQUIRE(config.is_ok());
  CHECK(config.value().identities.size() == 7);
  CHECK(mode_of(dir + "/keys") == 0700);
  for (const char* name : {"lockd-1", "lockd-2", "lockd-3", "replica-0", "replica-1", "replica-2", "admin"}) {
    INFO(name);
    CHECK(mode_of(dir + "/keys/" + name + ".key") == 0600);
    CHECK(config.value().identity(name) != nullptr);
  }
  for (const char* log : {"/lockd-1.log", "/replica-0.log"}) {
    CHECK(read_file(dir + log).find("INSECURE") == std::string::npos);
  }

  // The commands find keys/admin.key beside the cluster file.
  CHECK(palisade(home, {"--cluster", file, "put", "k", "v"}).code == 0);
  Run get = palisade(home, {"--cluster", file, "get", "k"});
  CHECK(get.code == 0);
  CHECK(get.out == "v\n");
  // A grant names the identity it went to, and status shows it as the holder.
  const std::string bin = PALISADE_BIN;
  Run held = palisade(
      home, {"--cluster", file, "lock", "L", "--", "sh", "-c", bin + " check-sequencer && " + bin + " status"});
  INFO(held.out);
  CHECK(held.code == 0);
  CHECK_THAT(held.out, Catch::Contains("sequencer: lock 'L', exclusive, token 1, group 'local', granted to 'admin'") &&
                           Catch::Contains("(holders are identity#session)") && Catch::Contains("holders [admin#"));
  CHECK(palisade(home, {"--cluster", file, "lock", "l", "--", "true"}).code == 0);
  Run status = palisade(home, {"--cluster", file, "status"});
  INFO(status.out);
  CHECK(status.code == 0);
  CHECK(status.out.find("links: CurveZMQ, 7 identities listed; connected as 'admin'") != std::string::npos);
  // Equal (0), or differing (8) while the put's or the fences' third copy is
  // still on its way; then the replicas agree.
  const int first_repair = palisade(home, {"--cluster", file, "repair"}).code;
  CHECK((first_repair == 0 || first_repair == 8));
  wait_until("the replicas to agree", [&] { return palisade(home, {"--cluster", file, "repair"}).code == 0; });
  Run health = palisade(home, {"cluster", "status", "--dir", dir, "-o", "json"});
  INFO(health.out);
  CHECK(health.code == 0);
  CHECK(json_of(health)["healthy"] == true);

  // Elsewhere, --key or $PALISADE_KEY names the key.
  const std::string moved = home.path() + "/admin.key";
  std::filesystem::rename(dir + "/keys/admin.key", moved);
  Run keyless = palisade(home, {"--cluster", file, "get", "k"});
  INFO(keyless.out);
  CHECK(keyless.code == 1);
  CHECK(keyless.out.find("give --key FILE") != std::string::npos);
  Run with_key = palisade(home, {"--cluster", file, "--key", moved, "get", "k"});
  CHECK(with_key.code == 0);
  CHECK(with_key.out == "v\n");
  setenv("PALISADE_KEY", moved.c_str(), 1);
  CHECK(palisade(home, {"--cluster", file, "get", "k"}).code == 0);
  unsetenv("PALISADE_KEY");

  // A key the cluster file does not list is refused before anything is sent.
  REQUIRE(palisade(home, {"keygen", "mallory", "--out", home.sub("mallory.key")}).code == 0);
  Run unlisted = palisade(home, {"--cluster", file, "--key", home.sub("mallory.key"), "get", "k"});
  INFO(unlisted.out);
  CHECK(unlisted.code == 1);
  CHECK(unlisted.out.find("does not list") != std::string::npos);

  // A cluster file that lists the stranger but that the daemons never loaded:
  // their handshakes refuse its key, so the command gets no answer at all and
  // cannot know whether its write happened (it did not).
  ClusterConfig forged = config.value();
  forged.identities.push_back({.name = "mallory",
                               .keys = {transport::read_key_file(home.sub("mallory.key")).value().keys.public_key},
                               .roles = {}});
  const std::string forged_file = home.sub("forged.toml");
  std::ofstream(forged_file) << format_cluster_config(forged);
  Run refused = palisade(
      home, {"--cluster", forged_file, "--key", home.sub("mallory.key"), "put", "--timeout", "2s", "k", "mallory"});
  INFO(refused.out);
  CHECK(refused.code == 6);
  CHECK(refused.out.find("0 of 3 replicas answered") != std::string::npos);
  Run still = palisade(home, {"--cluster", file, "--key", moved, "get", "k"});
  CHECK(still.out == "v\n");

  // Its links are CurveZMQ: --insecure cannot restart it as plaintext.
  std::filesystem::rename(moved, dir + "/keys/admin.key");
  REQUIRE(palisade(home, {"cluster", "down", "--dir", dir}).code == 0);
  Run plain = palisade(home, {"cluster", "up", "--dir", dir, "--insecure"});
  INFO(plain.out);
  CHECK(plain.code == 2);
  CHECK(plain.out.find("--insecure, but its links are CurveZMQ") != std::string::npos);

  // An identity listed before the daemons start may connect; without the
  // admin role it writes but may not repair (exit 9), and may compare.
  REQUIRE(palisade(home, {"keygen", "app", "--out", home.sub("app.key")}).code == 0);
  ClusterConfig with_app = load_cluster_file(file).value();
  with_app.identities.push_back(
      {.name = "app", .keys = {transport::read_key_file(home.sub("app.key")).value().keys.public_key}, .roles = {}});
  std::ofstream(file) << format_cluster_config(with_app);
  REQUIRE(palisade(home, {"cluster", "up", "--dir", dir}).code == 0);
  const std::vector<std::string> as_app = {"--cluster", file, "--key", home.sub("app.key")};
  auto with = [](std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  CHECK(palisade(home, with(as_app, {"put", "k", "from app"})).code == 0);
  const nlohmann::json app_status = json_of(palisade(home, with(as_app, {"status", "-o", "json"})));
  CHECK(app_status["links"] == "curve");
  CHECK(app_status["identity"] == "app");
  Run repair = palisade(home, with(as_app, {"repair"}));
  INFO(repair.out);
  CHECK(repair.code == 9);
  CHECK(repair.out.find("permission_denied: identity 'app' may not repair") != std::string::npos);
  // Comparing is allowed: equal (0), or differing (8) while the put's third
  // copy is still on its way. admin.key repairs, and then the replicas agree.
  const int compared = palisade(home, with(as_app, {"repair", "--dry-run"})).code;
  CHECK((compared == 0 || compared == 8));
  const int repaired = palisade(home, {"--cluster", file, "repair"}).code;
  CHECK((repaired == 0 || repaired == 8));
  wait_until("the replicas to agree", [&] { return palisade(home, with(as_app, {"repair", "--dry-run"})).code == 0; });

  // Once the file has [[role]] tables, comparing replicas is for admins too.
  ClusterConfig with_roles = load_cluster_file(file).value();
  with_roles.roles = {Role{.name = "writer", .write = {"*"}}};
  for (Identity& id : with_roles.identities) {
    if (id.name == "app") id.roles = {"writer"};
  }
  std::ofstream(file) << format_cluster_config(with_roles);
  Run compare = palisade(home, with(as_app, {"repair", "--dry-run"}));
  INFO(compare.out);
  CHECK(compare.code == 9);
  CHECK(compare.out.find("identity 'app' may not compare replicas") != std::string::npos);
  CHECK(palisade(home, {"--cluster", file, "repair", "--dry-run"}).code == 0);
  // The replicas take the roles at SIGHUP; then a role that writes but does
  // not read may not watch.
  const nlohmann::json daemons = json_of(palisade(home, {"cluster", "status", "--dir", dir, "-o", "json"}));
  for (const auto& d : daemons["daemons"]) {
    const std::string name = d["name"].get<std::string>();
    if (name.starts_with("replica-")) {
      REQUIRE(::kill(d["pid"].get<pid_t>(), SIGHUP) == 0);
      wait_until("the replicas to reload",
                 [&] { return read_file(dir + "/" + name + ".log").find("(SIGHUP)") != std::string::npos; });
    }
  }
  Run watch = palisade(home, with(as_app, {"watch", "k", "--count", "1"}));
  INFO(watch.out);
  CHECK(watch.code == 9);
  CHECK(watch.out.find("permission_denied") != std::string::npos);
}

TEST_CASE("cli: cluster up --insecure starts plaintext daemons that say so in their logs", "[cli][security]") {
  TempDir home;
  unsetenv("PALISADE_CLUSTER");
  unsetenv("PALISADE_KEY");
  const std::string dir = home.path() + "/c";
  ClusterDown cleanup{home, dir};
  Run up = palisade(home, {"cluster", "up", "--dir", dir, "--insecure"});
  INFO(up.out);
  REQUIRE(up.code == 0);
  CHECK(load_cluster_file(dir + "/cluster.toml").value().identities.empty());
  CHECK_FALSE(std::filesystem::exists(dir + "/keys"));
  for (const char* log :
       {"/lockd-1.log", "/lockd-2.log", "/lockd-3.log", "/replica-0.log", "/replica-1.log", "/replica-2.log"}) {
    INFO(log);
    CHECK(read_file(dir + log).find("INSECURE (--insecure): plaintext links") != std::string::npos);
  }
  CHECK(palisade(home, {"--cluster", dir + "/cluster.toml", "put", "k", "v"}).code == 0);
  Run status = palisade(home, {"--cluster", dir + "/cluster.toml", "status"});
  CHECK(status.out.find("links: plaintext, INSECURE") != std::string::npos);
  const nlohmann::json plain_status =
      json_of(palisade(home, {"--cluster", dir + "/cluster.toml", "status", "-o", "json"}));
  CHECK(plain_status["links"] == "plaintext");
  CHECK(plain_status["identity"].is_null());
  // A key for a plaintext cluster is a mistake worth naming.
  REQUIRE(palisade(home, {"keygen", "alice", "--out", home.sub("alice.key")}).code == 0);
  Run keyed = palisade(home, {"--cluster", dir + "/cluster.toml", "--key", home.sub("alice.key"), "get", "k"});
  INFO(keyed.out);
  CHECK(keyed.code == 1);
  CHECK(keyed.out.find("lists no identities") != std::string::npos);
}

// The body of GET http://`address``path` (HOST:PORT), or "" when nothing answers 200.
std::string http_get(const std::string& address, const std::string& path) {
  const size_t colon = address.rfind(':');
  httplib::Client client(address.substr(0, colon), std::stoi(address.substr(colon + 1)));
  client.set_connection_timeout(2);
  auto r = client.Get(path);
  return r && r->status == 200 ? r->body : std::string();
}

// Whether nothing listens on 127.0.0.1 ports first..first+count-1.
bool ports_free(int first, int count) {
  for (int port = first; port < first + count; ++port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    ::close(fd);
    if (!bound) return false;
  }
  return true;
}

TEST_CASE("cli: cluster up --metrics serves every daemon's metrics where status says, --log-format reaches the logs",
          "[cli][metrics]") {
  TempDir home;
  unsetenv("PALISADE_CLUSTER");
  const std::string dir = home.sub("c");
  ClusterDown cleanup{home, dir};
  Run up = palisade(home, {"cluster", "up", "--dir", dir, "--insecure", "--metrics", "--log-format", "json"});
  INFO(up.out);
  REQUIRE(up.code == 0);
  CHECK(up.out.find("metrics http://127.0.0.1:") != std::string::npos);
  const nlohmann::json status = json_of(palisade(home, {"cluster", "status", "--dir", dir, "-o", "json"}));
  REQUIRE(status["daemons"].size() == 6);
  std::set<std::string> addresses;
  for (const auto& d : status["daemons"]) {
    const std::string name = d["name"];
    INFO(name);
    REQUIRE(d["metrics"].is_string());
    const std::string address = d["metrics"];
    addresses.insert(address);
    const std::string family = name.starts_with("lockd-") ? "# TYPE palisade_lockd_epoch gauge"
                                                          : "# TYPE palisade_replica_requests_total counter";
    CHECK(http_get(address, "/metrics").find(family) != std::string::npos);
    CHECK(http_get(address, "/healthz") == "ok\n");
    // JSON lines from the start: the first line of its log parses.
    std::ifstream log(dir + "/" + name + ".log");
    std::string first;
    REQUIRE(std::getline(log, first));
    INFO(first);
    CHECK(nlohmann::json::parse(first, nullptr, false).is_object());
  }
  CHECK(addresses.size() == 6);
  CHECK(palisade(home, {"cluster", "status", "--dir", dir}).out.find("METRICS") != std::string::npos);

  // Started again with --base-port P: N daemons on P..P+N-1, their metrics on
  // the N ports after them, lockd nodes first, as the help says.
  REQUIRE(palisade(home, {"cluster", "down", "--purge", "--dir", dir}).code == 0);
  // Below the kernel's ephemeral ports (32768 and up), which the daemons of
  // tests running alongside get, a run of 12 free ports stays free.
  Run placed;
  int base = 0;
  std::mt19937 random(std::random_device{}());
  for (int attempt = 0; attempt < 5 && placed.code != 0; ++attempt) {
    base = std::uniform_int_distribution<int>(20000, 32000 - 12)(random);
    if (!ports_free(base, 12)) continue;
    placed =
        palisade(home, {"cluster", "up", "--dir", dir, "--insecure", "--metrics", "--base-port", std::to_string(base)});
    if (placed.code != 0) palisade(home, {"cluster", "down", "--purge", "--dir", dir});
  }
  INFO(placed.out);
  REQUIRE(placed.code == 0);
  const nlohmann::json placed_status = json_of(palisade(home, {"cluster", "status", "--dir", dir, "-o", "json"}));
  const std::vector<std::string> order = {"lockd-1", "lockd-2", "lockd-3", "replica-0", "replica-1", "replica-2"};
  for (const auto& d : placed_status["daemons"]) {
    const auto at = std::ranges::find(order, d["name"].get<std::string>()) - order.begin();
    INFO(d.dump());
    CHECK(d["metrics"] == "127.0.0.1:" + std::to_string(base + 6 + static_cast<int>(at)));
    CHECK(d["endpoint"] == "tcp://127.0.0.1:" + std::to_string(base + static_cast<int>(at)));
  }
  // Without --metrics, nothing listens and status shows no column.
  REQUIRE(palisade(home, {"cluster", "down", "--dir", dir}).code == 0);
  REQUIRE(palisade(home, {"cluster", "up", "--dir", dir}).code == 0);
  Run plain = palisade(home, {"cluster", "status", "--dir", dir});
  CHECK(plain.out.find("METRICS") == std::string::npos);
  CHECK(http_get("127.0.0.1:" + std::to_string(base + 6), "/metrics").empty());
}

TEST_CASE("cli: put, get and del, writes fenced by a sequencer, and their exit codes", "[cli]") {
  Fixture fx;
  CHECK(fx.run({"put", "plain", "v1"}).code == 0);
  Run get = fx.run({"get", "plain"});
  CHECK(get.code == 0);
  CHECK(get.out == "v1\n");
  auto plain = json_of(fx.run({"get", "plain", "-o", "json"}));
  CHECK(plain["value"] == "v1");
  CHECK(plain["token"] == 0);
  CHECK(plain["lock"].is_null());

  Run missing = fx.run({"get", "nothing-here"});
  CHECK(missing.code == 5);
  CHECK(missing.out.find("no key 'nothing-here'") != std::string::npos);
  CHECK(fx.run({"del", "plain"}).code == 0);
  CHECK(fx.run({"get", "plain"}).code == 5);

  // Under `palisade lock`, put is fenced by the grant in the environment.
  const std::string bin = PALISADE_BIN;
  Run locked = fx.run({"lock", "L", "--", "sh", "-c", "echo token=$PALISADE_TOKEN; " + bin + " put k first"});
  INFO(locked.out);
  REQUIRE(locked.code == 0);
  const std::string token = locked.out.substr(locked.out.find("token=") + 6, locked.out.find('\n') - 6);
  auto fenced_value = json_of(fx.run({"get", "k", "-o", "json"}));
  CHECK(fenced_value["lock"] == "L");
  CHECK(std::to_string(fenced_value["token"].get<uint64_t>()) == token);

  // COMMAND's exit code passes through.
  Run old = fx.run({"lock", "L", "--", "sh", "-c", "echo $PALISADE_SEQUENCER; exit 3"});
  CHECK(old.code == 3);
  const std::string old_sequencer = last_line(old.out);
  REQUIRE(old_sequencer.rfind("ps2.", 0) == 0);
  REQUIRE(fx.run({"lock", "L", "--", bin, "put", "k", "newer holder"}).code == 0);

  // A superseded grant's write is refused, and changes nothing.
  Run late = fx.run({"put", "k", "late", "--sequencer", old_sequencer});
  CHECK(late.code == 3);
  CHECK(late.out.find("fenced") != std::string::npos);
  CHECK(fx.run({"get", "k"}).out == "newer holder\n");

  // Usage errors, a forged sequencer and a missing cluster file have codes of their own.
  CHECK(fx.run({"put", "k", "x", "--sequencer", "not-a-sequencer"}).code == 2);
  CHECK(fx.run({"put", "k"}).code == 2);
  Run bad_duration = fx.run({"get", "k", "--timeout", "5"});
  CHECK(bad_duration.code == 2);
  CHECK(bad_duration.out.find("with a unit") != std::string::npos);
  CHECK(fx.run({"frobnicate"}).code == 2);
  Run no_file = palisade(fx.dir, {"--cluster", fx.dir.sub("nowhere.toml"), "get", "k"});
  CHECK(no_file.code == 4);
  CHECK(no_file.out.find("no cluster file") != std::string::npos);
}

TEST_CASE("cli: get --prefix lists a prefix's keys as gets read them, pages with --limit and --after", "[cli][scan]") {
  Fixture fx;
  for (const char* key : {"jobs/2", "jobs/1", "jobs/3", "jobsx", "other"}) {
    REQUIRE(fx.run({"put", key, std::string("v-") + key}).code == 0);
  }
  REQUIRE(fx.run({"del", "jobs/2"}).code == 0);
  Run all = fx.run({"get", "--prefix", "jobs/"});
  CHECK(all.code == 0);
  CHECK(all.out == "jobs/1\tv-jobs/1\njobs/3\tv-jobs/3\n");
  CHECK(fx.run({"get", "--prefix", ""}).out == "jobs/1\tv-jobs/1\njobs/3\tv-jobs/3\njobsx\tv-jobsx\nother\tv-other\n");
  Run first = fx.run({"get", "--prefix", "jobs", "--limit", "1"});
  CHECK(first.code == 0);
  CHECK(first.out.find("jobs/1\tv-jobs/1\n") == 0);
  CHECK(first.out.find("more keys follow: add --after 'jobs/1'") != std::string::npos);
  auto rest = json_of(fx.run({"get", "--prefix", "jobs", "--after", "jobs/1", "-o", "json"}));
  REQUIRE(rest["entries"].size() == 2);
  CHECK(rest["entries"][0]["key"] == "jobs/3");
  CHECK(rest["entries"][0]["value"] == "v-jobs/3");
  CHECK(rest["entries"][0]["token"] == 0);
  CHECK(rest["entries"][1]["key"] == "jobsx");
  CHECK(rest["next"].is_null());
  CHECK(rest["prefix"] == "jobs");
  auto cut = json_of(fx.run({"get", "--prefix", "jobs/", "--limit", "1", "-o", "json"}));
  CHECK(cut["next"] == "jobs/1");
  Run none = fx.run({"get", "--prefix", "nothing/"});
  CHECK(none.code == 0);
  CHECK(none.out.empty());
  CHECK(fx.run({"get", "jobs/1", "--prefix", "jobs/"}).code == 2);
  CHECK(fx.run({"get", "jobs/1", "--limit", "2"}).code == 2);
  CHECK(fx.run({"get", "--prefix", "jobs/", "--limit", "x"}).code == 2);
}

TEST_CASE("cli: check-sequencer tells a current grant from a finished one and a genuine one from a minted one",
          "[cli][security]") {
  Fixture fx;
  const std::string bin = PALISADE_BIN;
  // Under `palisade lock`, the holder's own sequencer is current.
  Run held = fx.run({"lock", "L", "--", "sh", "-c", bin + " check-sequencer; echo \"$PALISADE_SEQUENCER\""});
  INFO(held.out);
  REQUIRE(held.code == 0);
  CHECK_THAT(held.out, Catch::Contains("sequencer: lock 'L', exclusive, token") &&
                           Catch::Contains("signature: genuine") && Catch::Contains("current: yes"));
  const std::string sequencer = last_line(held.out);
  REQUIRE(sequencer.rfind("ps2.", 0) == 0);

  // Released: genuine, no longer current.
  Run over = fx.run({"check-sequencer", sequencer});
  INFO(over.out);
  CHECK(over.code == 3);
  CHECK_THAT(over.out, Catch::Contains("current: no"));
  Run offline = fx.run({"check-sequencer", sequencer, "--offline"});
  CHECK(offline.code == 0);
  CHECK_THAT(offline.out, Catch::Contains("current: not asked (--offline)"));
  auto j = json_of(fx.run({"check-sequencer", sequencer, "-o", "json"}));
  CHECK(j["lock"] == "L");
  CHECK(j["identity"].is_null());  // a plaintext cluster's grants name no identity
  CHECK(j["genuine"] == true);
  CHECK(j["current"] == false);

  // A replica host holds the replicas' key and the public key: neither signs a
  // sequencer anyone takes, neither check-sequencer nor the replicas.
  auto config = load_cluster_file(fx.cluster->cluster_file());
  REQUIRE(config.is_ok());
  const std::string replica_key_file = config.value().replicas_key_file();
  REQUIRE(replica_key_file != config.value().key_file);
  auto replica_key = ClusterKey::load(replica_key_file);
  REQUIRE(replica_key.is_ok());
  const std::string minted = SequencerSigner(replica_key.value(), config.value().group)
                                 .sign({config.value().group, "L", LockMode::kExclusive, uint64_t{1} << 62});
  Run forged = fx.run({"check-sequencer", minted, "--offline"});
  CHECK(forged.code == 2);
  CHECK_THAT(forged.out, Catch::Contains("signature check"));
  Run planted = fx.run({"put", "k", "zombie", "--sequencer", minted});
  CHECK(planted.code == 2);
  CHECK_THAT(planted.out, Catch::Contains("bad_sequencer"));
  CHECK(fx.run({"get", "k"}).code == 5);

  // Nothing to check is a usage error.
  Run nothing = fx.run({"check-sequencer"});
  CHECK(nothing.code == 2);
  CHECK_THAT(nothing.out, Catch::Contains("PALISADE_SEQUENCER"));

  // A cluster file without the lock group's public key cannot check anything.
  ClusterConfig unlisted = config.value();
  unlisted.sequencer_public_key.clear();
  unlisted.replica_key_file.clear();  // which needs the public key
  const std::string unlisted_file = fx.dir.sub("no-public-key.toml");
  std::ofstream(unlisted_file) << format_cluster_config(unlisted);
  Run no_public_key = palisade(fx.dir, {"--cluster", unlisted_file, "check-sequencer", sequencer, "--offline"});
  INFO(no_public_key.out);
  CHECK(no_public_key.code == 1);
  CHECK_THAT(no_public_key.out, Catch::Contains("lists no sequencer_public_key"));
}

TEST_CASE("cli: repair copies a version under a lock to a replica that missed it, sealed with the replicas' key",
          "[cli][security]") {
  Fixture fx;
  auto config = load_cluster_file(fx.cluster->cluster_file());
  REQUIRE(config.is_ok());
  REQUIRE_FALSE(config.value().replica_key_file.empty());  // the replicas' own key, not the cluster key
  fx.cluster->replica(2).kill();
  const std::string bin = PALISADE_BIN;
  REQUIRE(fx.run({"lock", "L", "--", bin, "put", "k", "held"}).code == 0);  // W = 2 of the 3
  REQUIRE(fx.cluster->replica(2).start_and_wait().is_ok());

  CHECK(fx.run({"repair", "--dry-run"}).code == 8);
  Run repaired = fx.run({"repair", "-o", "json"});
  INFO(repaired.out);
  CHECK(repaired.code == 8);  // they differed; repaired
  const nlohmann::json report = json_of(repaired);
  CHECK(report["refused"] == 0);  // replica 2 took the sealed copy
  CHECK(report["versions_sent"] == 1);
  CHECK(fx.run({"repair", "--dry-run"}).code == 0);
  // Replica 2 now holds the version: without replica 0, R = 2 still reads it.
  fx.cluster->replica(0).kill();
  auto got = json_of(fx.run({"get", "k", "-o", "json"}));
  CHECK(got["value"] == "held");
  CHECK(got["lock"] == "L");
}

TEST_CASE("cli: a malformed endpoint in the cluster file or --replica is named, never an abort", "[cli]") {
  TempDir dir;
  const std::string file = dir.sub("cluster.toml");
  std::ofstream(file) << "group = \"g\"\n[[lockd]]\nid = 1\nendpoint = \"tcp://127.0.0.1:1\"\n"
                         "[[replica]]\nendpoint = \"tcp://127.0.0.1:2\"\n[[replica]]\nendpoint = \"garbage\"\n";
  for (std::vector<std::string> args : {std::vector<std::string>{"status"}, {"get", "k"}, {"put", "k", "v"},
                                        {"del", "k"}, {"repair"}, {"lock", "L", "--", "true"}}) {
    INFO(args[0]);
    args.insert(args.begin(), {"--cluster", file});
    Run r = palisade(dir, args);
    INFO(r.out);
    CHECK(r.code == 1);  // a bad cluster file (docs/cli.md)
    CHECK(r.out.find(file + ":8: 'endpoint' of [[replica]] 2: 'garbage' is not an endpoint") != std::string::npos);
  }
  // A good file, a bad flag: a usage error that names it.
  std::ofstream(file) << "group = \"g\"\n[[lockd]]\nid = 1\nendpoint = \"tcp://127.0.0.1:1\"\n"
                         "[[replica]]\nendpoint = \"tcp://127.0.0.1:2\"\n";
  for (const std::string bad : {"garbage", "tcp://127.0.0.1", "tcp://host:99999", "udp://h:1"}) {
    Run r = palisade(dir, {"--cluster", file, "repair", "--replica", bad});
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("'" + bad + "'") != std::string::npos);
  }
}

TEST_CASE("cli: free ports come from below the ephemeral range, and distinct", "[cli]") {
  // An outgoing connection takes its local port from 32768 up: one made
  // between the check and a daemon's bind could take the daemon's port.
  const std::vector<std::string> endpoints = cli::free_endpoints(200);
  std::set<int> ports;
  for (const std::string& ep : endpoints) {
    const int port = std::stoi(ep.substr(ep.rfind(':') + 1));
    INFO(ep);
    CHECK(port >= 10000);
    CHECK(port < 20000);
    ports.insert(port);
  }
  CHECK(ports.size() == endpoints.size());
}

// A cluster file whose every endpoint refuses connections (nothing listens).
std::string dead_cluster_file(const TempDir& dir) {
  ClusterConfig config;
  config.group = "dead";
  const std::vector<std::string> endpoints = cli::free_endpoints(2);
  config.lockd = {{.id = 1, .endpoint = endpoints[0]}};
  config.replicas = {endpoints[1]};
  const std::string file = dir.sub("dead.toml");
  std::ofstream(file) << format_cluster_config(config);
  return file;
}

TEST_CASE("cli: the exit codes of docs/cli.md, usage errors that name the problem, and errors as JSON", "[cli]") {
  Fixture fx;
  const std::string bin = PALISADE_BIN;
  CHECK(fx.run({"put", "k", "v"}).code == 0);

  // 1: a file that is not a cluster file.
  const std::string garbage = fx.dir.sub("garbage.toml");
  std::ofstream(garbage) << "this is not toml [";
  CHECK(palisade(fx.dir, {"--cluster", garbage, "get", "k"}).code == 1);

  // 2: usage. An empty key, for every command; an empty --sequencer; --ttl 0s and --timeout 0s.
  for (std::vector<std::string> args : {std::vector<std::string>{"get", ""}, {"put", "", "v"}, {"del", ""}}) {
    Run r = fx.run(args);
    INFO(args[0] << ": " << r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("the key is empty") != std::string::npos);
  }
  Run empty_sequencer = fx.run({"put", "k", "v", "--sequencer", ""});
  CHECK(empty_sequencer.code == 2);
  CHECK(empty_sequencer.out.find("--sequencer is empty") != std::string::npos);
  CHECK(fx.run({"lock", "L", "--ttl", "0s", "--", "true"}).code == 2);
  CHECK(fx.run({"get", "k", "--timeout", "0s"}).code == 2);
  // A sequencer whose MAC does not verify, and a shared grant's: usage, not fenced.
  const std::string sequencer = last_line(fx.run({"lock", "X", "--", "sh", "-c", "echo $PALISADE_SEQUENCER"}).out);
  REQUIRE(sequencer.rfind("ps2.", 0) == 0);
  std::string forged = sequencer;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  Run forged_put = fx.run({"put", "k", "x", "--sequencer", forged});
  INFO(forged_put.out);
  CHECK(forged_put.code == 2);
  Run shared = fx.run({"lock", "S", "--shared", "--", bin, "put", "k", "x"});
  CHECK(shared.code == 2);
  CHECK(shared.out.find("shared grant of lock 'S', which cannot fence a write") != std::string::npos);
  // An unknown command is named.
  for (const std::string word : {"version", "ls"}) {
    Run r = fx.run({word});
    CHECK(r.code == 2);
    CHECK(r.out.find("unknown command '" + word + "'") != std::string::npos);
  }

  // 3: an unfenced write over a fenced key says so, truly.
  REQUIRE(fx.run({"lock", "F", "--", bin, "put", "fenced-key", "v"}).code == 0);
  Run unfenced = fx.run({"put", "fenced-key", "w"});
  INFO(unfenced.out);
  CHECK(unfenced.code == 3);
  CHECK(unfenced.out.find("holds a write fenced by a lock") != std::string::npos);

  // 4, at once, when nothing listens; status names no master and no epoch.
  const std::string dead = dead_cluster_file(fx.dir);
  for (std::vector<std::string> args : {std::vector<std::string>{"get", "k"}, {"put", "k", "v"}, {"lock", "L", "--", "true"}}) {
    args.insert(args.begin(), {"--cluster", dead});
    Run r = palisade(fx.dir, args);
    INFO(r.out);
    CHECK(r.code == 4);
    CHECK(r.out.find("nothing answers") != std::string::npos);
  }
  Run dead_status = palisade(fx.dir, {"--cluster", dead, "status", "-o", "json"});
  CHECK(dead_status.code == 4);
  auto ds = json_of(dead_status);
  CHECK(ds["state"] == "unavailable");
  CHECK(ds["lock_group"]["epoch"].is_null());
  CHECK(ds["lock_group"]["locks_complete"].is_null());
  CHECK(ds["lock_group"]["nodes"][0]["role"].is_null());
  CHECK(ds["lock_group"]["nodes"][0]["epoch"].is_null());
  CHECK(ds["replicas"][0]["keys"].is_null());

  // 5 and 6.
  CHECK(fx.run({"get", "absent"}).code == 5);
  // Replicas that accept connections (the kernel does for paused ones) but answer
  // nothing: the read runs out of its timeout, however fast loopback is.
  for (size_t i = 0; i < fx.cluster->replica_count(); ++i) fx.cluster->replica(i).pause();
  Run quick = fx.run({"get", "k", "--timeout", "200ms"});
  for (size_t i = 0; i < fx.cluster->replica_count(); ++i) fx.cluster->replica(i).resume();
  INFO(quick.out);
  CHECK(quick.code == 6);

  // 126: COMMAND exists but cannot be run.
  const std::string not_executable = fx.dir.sub("not-executable");
  std::ofstream(not_executable) << "#!/bin/sh\n";
  CHECK(fx.run({"lock", "L", "--", not_executable}).code == 126);

  // -o json: errors too, one JSON object with the exit code. The replicas are
  // paused, as above: a read that answers quickly could still be decided
  // within even 1 ms (a slow client finds the replies already waiting).
  for (size_t i = 0; i < fx.cluster->replica_count(); ++i) fx.cluster->replica(i).pause();
  Run json_error = fx.run({"get", "k", "--timeout", "200ms", "-o", "json"});
  for (size_t i = 0; i < fx.cluster->replica_count(); ++i) fx.cluster->replica(i).resume();
  INFO(json_error.out);
  CHECK(json_error.code == 6);
  CHECK(json_of(json_error)["error"]["exit_code"] == 6);
  CHECK(json_of(json_error)["error"]["command"] == "get");
  Run json_usage = fx.run({"-o", "json", "frobnicate"});
  CHECK(json_usage.code == 2);
  CHECK(json_of(json_usage)["error"]["message"].get<std::string>().find("unknown command 'frobnicate'") !=
        std::string::npos);
}

TEST_CASE("cli: keygen writes a key file of mode 0600 and never replaces one", "[cli]") {
  TempDir dir;
  // As typed in a shell whose current directory is `dir`.
  int runs = 0;
  auto keygen_here = [&](const std::string& name) {
    cli::Process p({"/bin/sh", "-c", "cd '" + dir.path() + "' && exec '" PALISADE_BIN "' keygen " + name},
                   dir.sub("keygen-" + std::to_string(++runs) + ".log"));
    auto ended = ended_with(p, 60000);
    REQUIRE(ended.has_value());
    return Run{*ended, p.log()};
  };
  const Run made = keygen_here("alice");
  REQUIRE(made.code == 0);
  auto file = transport::read_key_file(dir.sub("alice.key"));  // refuses any mode but the owner's
  REQUIRE(file.is_ok());
  CHECK(file.value().identity == "alice");
  CHECK_THAT(made.out, Catch::Contains("public key: " + file.value().keys.public_key));
  CHECK(made.out.find(file.value().keys.secret_key) == std::string::npos);  // the secret stays in the file

  const Run again = keygen_here("alice");
  CHECK(again.code == 1);
  CHECK_THAT(again.out, Catch::Contains("exists already"));
  CHECK(transport::read_key_file(dir.sub("alice.key")).value().keys.secret_key == file.value().keys.secret_key);

  const Run json = palisade(dir, {"-o", "json", "keygen", "bob", "--out", dir.sub("b.key")});
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(last_line(json.out));
  CHECK(j["identity"] == "bob");
  CHECK(j["key_file"] == dir.sub("b.key"));
  CHECK(j["public_key"] == transport::read_key_file(dir.sub("b.key")).value().keys.public_key);

  const Run bad = palisade(dir, {"keygen", "a/b"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.out, Catch::Contains("'a/b' is not an identity name"));
}

// Every `    $ ` line of the tour in docs/cli.md, in order.
std::vector<std::string> tour_commands() {
  const std::string doc = read_file(std::string(PALISADE_SOURCE_DIR) + "/docs/cli.md");
  const size_t begin = doc.find("## A tour");
  const size_t end = doc.find("## Commands");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  std::istringstream in(doc.substr(begin, end - begin));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("    $ ", 0) == 0) out.push_back(line.substr(6));
  }
  return out;
}

TEST_CASE("cli: the tour in docs/cli.md runs as written and says what it says", "[cli][tour]") {
  TempDir home;
  // The tour's paths are under ~/.local/state: the default cluster directory.
  const std::string old_home = std::getenv("HOME") != nullptr ? std::getenv("HOME") : "";
  const std::string old_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  setenv("HOME", home.path().c_str(), 1);
  setenv("PATH", (std::filesystem::path(PALISADE_BIN).parent_path().string() + ":" + old_path).c_str(), 1);
  for (const char* v : {"PALISADE_HOME", "PALISADE_CLUSTER", "XDG_STATE_HOME", "PALISADE_SEQUENCER"}) unsetenv(v);
  const std::string dir = home.path() + "/.local/state/palisade/local";
  ClusterDown cleanup{home, dir};

  std::string script = "cd ~\n";  // the tour's files (job.held) go there, as a person's would
  for (const std::string& command : tour_commands()) script += command + "\n";
  REQUIRE(script.find("palisade cluster up") != std::string::npos);
  std::ofstream(home.sub("tour.sh")) << script;
  // In a process group of its own, so that what a failed run leaves (a
  // background `palisade lock`) goes with it.
  cli::Process tour({"/bin/bash", home.sub("tour.sh")}, home.sub("tour.log"),
                      cli::ProcessOptions{.own_process_group = true});
  const auto ended = ended_with(tour, 240000);
  ::kill(-tour.pid(), SIGKILL);
  setenv("HOME", old_home.c_str(), 1);
  setenv("PATH", old_path.c_str(), 1);
  const std::string out = tour.log();
  INFO(out);
  REQUIRE(ended == 0);
  // What the tour says each step prints, in order.
  size_t at = 0;
  for (const std::string& expected : std::vector<std::string>{
           "started a cluster in " + dir, "OK\n", "hello\n", "\"value\": \"hello\"", "token 1\n",
        "\"lock\": \"ledger\"", "has a newer holder (token 2 < 3); nothing was written", "exit 3\n", "\n70\n",
        "holding 'job'", "someone else got it", "lost 'job'", "exit 7\n", "lock group: master lockd-",
        "started lockd-1 of the cluster in " + dir, "ranges", "exit 0\n", "stopped "}) {
    INFO("expecting " << expected);
    const size_t found = out.find(expected, at);
    CHECK(found != std::string::npos);
    if (found != std::string::npos) at = found;
  }
  // The dry run: 8 (they differ), or 0 if a background run repaired replica-2 first.
  CHECK((out.find("exit 8\n") != std::string::npos || out.find("exit 0\n") != std::string::npos));
  CHECK_FALSE(std::filesystem::exists(dir));  // cluster down --purge
}

TEST_CASE("cli: lock --wait bounds the whole wait when the lock group listens but no master answers", "[cli]") {
  Fixture fx;
  // Paused nodes accept connections (the kernel does) and answer nothing.
  for (uint32_t id : fx.cluster->lockd_ids()) fx.cluster->lockd(id).pause();
  std::vector<std::string> argv = {PALISADE_BIN};
  argv.insert(argv.end(), fx.with_cluster.begin(), fx.with_cluster.end());
  argv.insert(argv.end(), {"lock", "L", "--wait", "1s", "--", "true"});
  cli::Process lock(argv, fx.dir.sub("no-master.log"));
  // It waited 10 s to open a session whatever --wait said; well before that now.
  const auto ended = ended_with(lock, 8000);
  for (uint32_t id : fx.cluster->lockd_ids()) fx.cluster->lockd(id).resume();
  INFO(lock.log());
  CHECK(ended == 4);
}

TEST_CASE("cli: put reads a value from stdin or a file, and get -o json carries bytes that are not UTF-8 as base64",
          "[cli]") {
  Fixture fx;
  const std::string bin = PALISADE_BIN;
  // Over what one argument may hold (128 KiB), and with bytes that are not UTF-8.
  std::string big(300 * 1024, 'x');
  big[7] = '\xff';
  const std::string file = fx.dir.sub("big.bin");
  std::ofstream(file, std::ios::binary) << big;
  REQUIRE(fx.run({"put", "big", "--from-file", file}).code == 0);
  auto got = json_of(fx.run({"get", "big", "-o", "json"}));
  CHECK(got["value"].is_null());
  const std::string b64 = got["value_base64"].get<std::string>();
  CHECK(b64.size() == (big.size() + 2) / 3 * 4);
  CHECK(b64.substr(0, 12) == "eHh4eHh4eP94");  // "xxxxxxx\xffx"

  // `-` is stdin.
  const std::string script = "printf 'a\\376' | '" + bin + "' --cluster '" + fx.cluster->cluster_file() + "' put from-stdin -";
  cli::Process sh({"/bin/sh", "-c", script}, fx.dir.sub("stdin.log"));
  REQUIRE(ended_with(sh, 30000) == 0);
  auto stdin_value = json_of(fx.run({"get", "from-stdin", "-o", "json"}));
  CHECK(stdin_value["value_base64"] == "Yf4=");
  CHECK(fx.run({"put", "k", "v", "--from-file", file}).code == 2);  // one value, not two
}

TEST_CASE("cli: lock waits or fails when held, reports a missing command, and stops the command when the lease "
          "is lost",
          "[cli]") {
  Fixture fx;
  // A holder in the background.
  std::vector<std::string> hold = {PALISADE_BIN};
  hold.insert(hold.end(), fx.with_cluster.begin(), fx.with_cluster.end());
  hold.insert(hold.end(), {"lock", "-v", "held", "--",
                           "sh", "-c", "trap 'echo got-term; exit 0' TERM; while true; do sleep 0.05; done"});
  cli::Process holder(hold, fx.dir.sub("holder.log"));
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (holder.log().find("holding 'held'") == std::string::npos) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    REQUIRE(holder.running());
    std::this_thread::sleep_for(20ms);
  }
  Run busy = fx.run({"lock", "held", "--wait", "0s", "--", "true"});
  INFO(busy.out);
  CHECK(busy.code == 6);
  CHECK(fx.run({"lock", "other", "--", "/nonexistent/command"}).code == 127);
  // Shared holders admit each other, not an exclusive one (the inner lock's code passes through).
  const std::string bin = PALISADE_BIN;
  CHECK(fx.run({"lock", "readers", "--shared", "--", bin, "lock", "readers", "--shared", "--wait", "0s", "--", "true"})
            .code == 0);
  CHECK(fx.run({"lock", "readers", "--shared", "--", bin, "lock", "readers", "--wait", "0s", "--", "true"}).code == 6);
  // --ttl reaches the lock group, which refuses a lease shorter than its minimum.
  Run short_ttl = fx.run({"lock", "brief", "--ttl", "500ms", "--", "true"});
  INFO(short_ttl.out);
  CHECK(short_ttl.code == 2);

  // Paused past its lease, the holder's session expires and another client
  // gets the lock; resumed, the holder stops its command and says so.
  fx.take_over(holder, "held");
  auto ended = ended_with(holder, 30000);
  INFO(holder.log());
  CHECK(ended == 7);
  CHECK(holder.log().find("lost 'held'") != std::string::npos);
  CHECK(holder.log().find("got-term") != std::string::npos);
}

// Issue #24: most `palisade lock` calls of a fault run said "session in
// jeopardy" while they waited, which every master failover goes through.
TEST_CASE("cli: lock reports jeopardy while COMMAND runs, and while it waits only with -v", "[cli]") {
  Fixture fx;
  const std::string ready = fx.dir.sub("ready");
  auto holder = fx.start("holder.log", {"lock", "L", "--", "sh", "-c",
                                        "touch " + ready + "; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done"});
  wait_until("the holder's COMMAND", [&] {
    REQUIRE(holder->running());
    return std::filesystem::exists(ready);
  });
  auto quiet = fx.start("quiet.log", {"lock", "L", "--wait", "60s", "--", "true"});
  auto verbose = fx.start("verbose.log", {"lock", "-v", "L", "--wait", "60s", "--", "true"});
  wait_until("the waiters' sessions", [&] {  // the holder's and theirs, on the master
    nlohmann::json status = json_of(fx.run({"status", "-o", "json"}));
    for (const auto& node : status["lock_group"]["nodes"]) {
      if (node["role"] == "master" && node["sessions"].is_number() && node["sessions"].get<int>() >= 3) return true;
    }
    return false;
  });
  // No KeepAlive answered for longer than the 3 s session lease, well within the 10 s grace.
  for (uint32_t id : fx.cluster->lockd_ids()) fx.cluster->lockd(id).pause();
  std::this_thread::sleep_for(4500ms);
  for (uint32_t id : fx.cluster->lockd_ids()) fx.cluster->lockd(id).resume();
  wait_until("the holder safe again", [&] {
    REQUIRE(holder->running());
    return holder->log().find("safe again") != std::string::npos;
  });
  holder->signal(SIGTERM);
  CHECK(ended_with(*holder, 20000) == 128 + SIGTERM);
  CHECK(ended_with(*quiet, 30000) == 0);
  CHECK(ended_with(*verbose, 30000) == 0);
  INFO("holder: " << holder->log() << "quiet: " << quiet->log() << "verbose: " << verbose->log());
  CHECK_THAT(holder->log(), Catch::Contains("session in jeopardy: no KeepAlive answer"));
  CHECK_THAT(verbose->log(), Catch::Contains("session in jeopardy while waiting"));
  CHECK_THAT(quiet->log(), !Catch::Contains("jeopardy"));
}

TEST_CASE("cli: lock passes SIGTERM, SIGINT and SIGHUP on to COMMAND, exits with its code and releases the lock",
          "[cli]") {
  default_signal_actions();
  Fixture fx;
  struct Case {
    int sig;
    const char* name;
    int code;
  };
  for (const Case c : {Case{SIGTERM, "TERM", 42}, Case{SIGINT, "INT", 43}, Case{SIGHUP, "HUP", 44}}) {
    INFO("SIG" << c.name);
    const std::string lock = std::string("sig-") + c.name;
    const std::string ready = fx.dir.sub(lock + ".ready");
    const std::string marker = fx.dir.sub(lock + ".trapped");
    // COMMAND says when its trap is set; the trap leaves a marker and exits with a code of its own.
    const std::string script = "trap 'echo $PALISADE_LOCK > " + marker + "; exit " + std::to_string(c.code) + "' " +
                               c.name + "; touch " + ready + "; while true; do sleep 0.05; done";
    auto holder = fx.start(lock + ".log", {"lock", "-v", lock, "--", "sh", "-c", script});
    wait_until("COMMAND to set its trap", [&] {
      REQUIRE(holder->running());
      return std::filesystem::exists(ready);
    });
    holder->signal(c.sig);  // to `palisade lock`, not to COMMAND
    auto ended = ended_with(*holder, 20000);
    INFO(holder->log());
    CHECK(ended == c.code);
    CHECK(read_file(marker) == lock + "\n");
    // Released on the way out: free for the next holder at once.
    CHECK(fx.run({"lock", lock, "--wait", "0s", "--", "true"}).code == 0);
  }
  // Not trapped, the signal ends COMMAND, and the exit code says which one (128+N).
  auto plain = fx.start("plain.log", {"lock", "-v", "sig-plain", "--", "sh", "-c", "while true; do sleep 0.05; done"});
  wait_until("the lock to be granted", [&] {
    REQUIRE(plain->running());
    return plain->log().find("holding 'sig-plain'") != std::string::npos;
  });
  plain->signal(SIGTERM);
  auto ended = ended_with(*plain, 20000);
  INFO(plain->log());
  CHECK(ended == 128 + SIGTERM);  // its own exit, passing on COMMAND's
}

// COMMAND for the tests of a signal that reaches it straight from its source
// as well as through `palisade lock`: it notes each SIGINT in `got`, notes
// SIGTERM and exits 42 on it, and touches `ready` once its traps are set. It
// gives up after a minute, should the test fail before it ends.
std::string noting_script(const std::string& got, const std::string& ready) {
  return "trap 'echo INT >> " + got + "' INT; trap 'echo TERM >> " + got + "; exit 42' TERM; touch " + ready +
         "; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done";
}

// Sends with `send` while `palisade lock` (pid `lock`) is stopped, and resumes
// it once COMMAND has noted `direct`, what reaches it straight from the source:
// a copy passed on then is a delivery of its own, not merged with the first.
// Then SIGTERM to `palisade lock` alone, from outside its process group, is
// passed on after whatever it took before (the lowest pending signal is taken
// first), and COMMAND exits on it.
template <typename Send>
void send_while_stopped(pid_t lock, const std::string& got, const std::string& direct, Send send) {
  REQUIRE(::kill(lock, SIGSTOP) == 0);
  send();
  wait_until("COMMAND to note what reached it directly", [&] { return read_file(got) == direct; });
  REQUIRE(::kill(lock, SIGCONT) == 0);
  REQUIRE(::kill(lock, SIGTERM) == 0);
}

// kill(pid, sig) from a process that joins process group `group` for it, as a
// script without job control does with `kill $!`. The sender's pid.
pid_t kill_from_within(pid_t group, pid_t pid, int sig) {
  const pid_t sender = fork();
  REQUIRE(sender >= 0);
  if (sender == 0) {  // only async-signal-safe calls
    _exit(setpgid(0, group) == 0 && ::kill(pid, sig) == 0 ? 0 : 1);
  }
  return sender;
}

TEST_CASE("cli: lock passes on a kill() to its pid exactly once from its own process group or another", "[cli]") {
  default_signal_actions();
  Fixture fx;
  for (const bool within : {true, false}) {
    INFO((within ? "SIGINT from a process of its own group" : "SIGINT from outside its group"));
    const std::string lock = within ? "within" : "outside";
    const std::string got = fx.dir.sub(lock + ".got");
    const std::string ready = fx.dir.sub(lock + ".ready");
    auto holder = fx.start(lock + ".log", {"lock", "-v", lock, "--", "sh", "-c", noting_script(got, ready)});
    wait_until("COMMAND to set its traps", [&] {
      REQUIRE(holder->running());
      return std::filesystem::exists(ready);
    });
    pid_t sender = -1;
    send_while_stopped(holder->pid(), got, "", [&] {
      if (within) {
        sender = kill_from_within(holder->pid(), holder->pid(), SIGINT);  // `palisade lock` leads its group
        int status = -1;
        REQUIRE(waitpid(sender, &status, 0) == sender);
        CHECK(status == 0);
      } else {
        REQUIRE(::kill(holder->pid(), SIGINT) == 0);
      }
    });
    auto ended = ended_with(*holder, 20000);
    INFO(holder->log());
    CHECK(ended == 42);
    // Once, passed on.
    CHECK(read_file(got) == "INT\nTERM\n");
  }
}

// `palisade ARGS...` on a terminal, as a shell runs a command in the
// foreground: it leads a new session whose controlling terminal is a
// pseudo-terminal, in the terminal's foreground process group, which the
// terminal signals on Ctrl-C. Its stdout and stderr go to `log_path`.
class OnTerminal {
 public:
  OnTerminal(std::vector<std::string> argv, const std::string& log_path) {
    // What posix_openpt() does, but through open(), which ThreadSanitizer
    // intercepts: it then knows the descriptor is new, and does not take its
    // close() for a race with an earlier user of the same number (a ZeroMQ
    // thread's socket).
    master_ = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    REQUIRE(master_ >= 0);
    REQUIRE(grantpt(master_) == 0);
    REQUIRE(unlockpt(master_) == 0);
    char terminal[128];
    REQUIRE(ptsname_r(master_, terminal, sizeof terminal) == 0);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {  // only async-signal-safe calls until exec
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      const int tty = setsid() < 0 ? -1 : open(terminal, O_RDWR);
      const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (tty < 0 || log < 0 || ioctl(tty, TIOCSCTTY, 0) != 0 || tcsetpgrp(tty, getpid()) != 0) _exit(127);
      dup2(tty, 0);
      dup2(log, 1);
      dup2(log, 2);
      close(tty);
      close(log);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~OnTerminal() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(master_);
  }
  OnTerminal(const OnTerminal&) = delete;
  OnTerminal& operator=(const OnTerminal&) = delete;

  pid_t pid() const { return pid_; }
  bool running() {
    int status = 0;
    if (!status_ && waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return !status_;
  }
  // Keys typed on the terminal.
  void type(const std::string& keys) {
    REQUIRE(write(master_, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size()));
  }
  // As ended_with().
  std::optional<int> ended(int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (running()) {
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(5ms);
    }
    return WIFEXITED(*status_) ? WEXITSTATUS(*status_) : -WTERMSIG(*status_);
  }

 private:
  int master_ = -1;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

TEST_CASE("cli: Ctrl-C on the terminal reaches COMMAND once and lock does not pass it on", "[cli]") {
  default_signal_actions();
  Fixture fx;
  const std::string got = fx.dir.sub("ctrl-c.got");
  const std::string ready = fx.dir.sub("ctrl-c.ready");
  std::vector<std::string> argv = {PALISADE_BIN};
  argv.insert(argv.end(), fx.with_cluster.begin(), fx.with_cluster.end());
  argv.insert(argv.end(), {"lock", "-v", "ctrl-c", "--", "sh", "-c", noting_script(got, ready)});
  OnTerminal lock(argv, fx.dir.sub("ctrl-c.log"));
  wait_until("COMMAND to set its traps", [&] {
    REQUIRE(lock.running());
    return std::filesystem::exists(ready);
  });
  send_while_stopped(lock.pid(), got, "INT\n", [&] { lock.type("\x03"); });
  auto ended = lock.ended(20000);
  INFO(read_file(fx.dir.sub("ctrl-c.log")));
  CHECK(ended == 42);
  CHECK(read_file(got) == "INT\nTERM\n");
}

TEST_CASE("cli: a signal while lock still waits cancels the wait, COMMAND never runs, and it exits 128+N",
          "[cli]") {
  default_signal_actions();
  Fixture fx;
  const std::string granted = fx.dir.sub("holder.granted");
  auto holder = fx.start("holder.log", {"lock", "queue", "--", "sh", "-c",
                                        "touch " + granted + "; while true; do sleep 0.05; done"});
  wait_until("the first holder to run", [&] {
    REQUIRE(holder->running());
    return std::filesystem::exists(granted);
  });
  const std::string ran = fx.dir.sub("waiter.ran");
  auto waiter = fx.start("waiter.log", {"lock", "-v", "queue", "--", "touch", ran});
  wait_until("the second to wait for the lock", [&] {
    REQUIRE(waiter->running());
    // Its session is open and the acquire is queued: the holder's lock shows a waiter.
    return fx.run({"status", "-o", "json"}).out.find("\"waiters\": 1") != std::string::npos;
  });
  waiter->signal(SIGINT);
  auto ended = ended_with(*waiter, 5000);
  INFO(waiter->log());
  CHECK(ended == 128 + SIGINT);
  CHECK(waiter->log().find("not running the command") != std::string::npos);
  holder->signal(SIGTERM);
  REQUIRE(holder->wait(20000).has_value());
  CHECK_FALSE(std::filesystem::exists(ran));
  // Nothing of the cancelled wait stays held.
  CHECK(fx.run({"lock", "queue", "--wait", "5s", "--", "true"}).code == 0);
}

TEST_CASE("cli: a signal after the grant but before COMMAND starts cancels: COMMAND never runs and the lock is let go",
          "[cli]") {
  default_signal_actions();
  Fixture fx;
  const auto master = fx.cluster->master_id();
  REQUIRE(master.has_value());
  struct Case {
    int sig;
    const char* name;
  };
  for (const Case c : {Case{SIGTERM, "TERM"}, Case{SIGINT, "INT"}, Case{SIGHUP, "HUP"}}) {
    INFO("SIG" << c.name);
    const std::string lock = std::string("granted-") + c.name;
    const std::string ran = fx.dir.sub(lock + ".ran");
    // `palisade lock` raises the grant's fence on a write quorum of replicas
    // before it starts COMMAND (LockClientOptions::store). With every replica
    // paused it holds the grant and cannot go on: the window between grant and
    // COMMAND stays open until the test resumes them (or the fence times out,
    // after 5 s), so the signal lands in it without any timing luck.
    for (size_t i = 0; i < fx.cluster->replica_count(); ++i) fx.cluster->replica(i).pause();
    auto holder = fx.start(lock + ".log", {"lock", "-v", lock, "--", "touch", ran});
    wait_until("the lock group to grant the lock", [&] {
      REQUIRE(holder->running());
      auto status = fx.cluster->lock_status(*master);
      if (!status) return false;
      for (const wire::LockInfo& l : status->locks) {
        if (l.name == lock && !l.holders.empty()) return true;
      }
      return false;
    });
    // kill() returns with the signal pending; palisade blocks it and takes it
    // before it could start COMMAND, whether the fence then succeeds or times out.
    holder->signal(c.sig);
    for (size_t i = 0; i < fx.cluster->replica_count(); ++i) fx.cluster->replica(i).resume();
    auto ended = ended_with(*holder, 20000);
    INFO(holder->log());
    CHECK(ended == 128 + c.sig);
    CHECK(holder->log().find("not running the command") != std::string::npos);
    CHECK(holder->log().find("holding '" + lock + "'") == std::string::npos);
    CHECK_FALSE(std::filesystem::exists(ran));
    // Nothing of the cancelled grant stays held: free for the next holder at once.
    CHECK(fx.run({"lock", lock, "--wait", "0s", "--", "true"}).code == 0);
  }
}

// A FIFO for the log of a process under test, its buffer filled by the test:
// the process's first write to stdout or stderr blocks until drain().
class StalledLog {
 public:
  explicit StalledLog(std::string path) : path_(std::move(path)) {
    REQUIRE(mkfifo(path_.c_str(), 0600) == 0);
    fd_ = open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    REQUIRE(fd_ >= 0);
    const int w = open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    REQUIRE(w >= 0);
    const std::string filler(4096, kFiller);
    while (write(w, filler.data(), filler.size()) > 0) {
    }
    while (write(w, &kFiller, 1) > 0) {
    }
    close(w);  // the buffer stays full while the read end is open
  }
  ~StalledLog() { close(fd_); }
  StalledLog(const StalledLog&) = delete;
  StalledLog& operator=(const StalledLog&) = delete;
  const std::string& path() const { return path_; }
  // Reads until the writers are gone (they exited): what they wrote.
  // (Process::log() would open the FIFO again, and block once they are gone.)
  std::string drain() {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    char buf[65536];
    for (;;) {
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n == 0) break;
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
        continue;
      }
      REQUIRE(errno == EAGAIN);
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      pollfd p{fd_, POLLIN, 0};
      poll(&p, 1, 100);
    }
    return out.substr(std::min(out.find_first_not_of(kFiller), out.size()));
  }

 private:
  static constexpr char kFiller = '.';
  std::string path_;
  int fd_ = -1;
};

// Whether the main thread of `pid` is blocked in write(2) on fd 2: /proc/PID/syscall
// holds the syscall number and its arguments while a thread waits in one.
bool blocked_writing_stderr(pid_t pid) {
  return read_file("/proc/" + std::to_string(pid) + "/syscall").rfind(std::to_string(SYS_write) + " 0x2 ", 0) == 0;
}

TEST_CASE("cli: a signal between the end of the acquire and the start of COMMAND cancels too", "[cli]") {
  default_signal_actions();
  Fixture fx;
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    INFO(strsignal(sig));
    const std::string lock = "acquired-" + std::to_string(sig);
    const std::string ran = fx.dir.sub(lock + ".ran");
    // With -v, `palisade lock` says it holds the lock on stderr after its
    // acquire returned (its signal watcher is done) and before it starts
    // COMMAND. Its stderr is a full FIFO: it stops in that write, and stays
    // there until the test drains it.
    StalledLog log(fx.dir.sub(lock + ".fifo"));
    std::vector<std::string> argv = {PALISADE_BIN};
    argv.insert(argv.end(), fx.with_cluster.begin(), fx.with_cluster.end());
    argv.insert(argv.end(), {"lock", "-v", lock, "--", "touch", ran});
    cli::Process holder(argv, log.path(), cli::ProcessOptions{.own_process_group = true});
    wait_until("lock to stop in its write to stderr", [&] {
      REQUIRE(holder.running());
      return blocked_writing_stderr(holder.pid());
    });
    holder.signal(sig);  // pending: palisade blocks it, and nothing waits for it now
    const std::string out = log.drain();
    INFO(out);
    // The write it stopped in was the first, "holding": the signal came after the grant.
    CHECK(out.rfind("palisade: lock: holding '" + lock + "'", 0) == 0);
    CHECK(out.find("not running the command") != std::string::npos);
    CHECK(ended_with(holder, 20000) == 128 + sig);
    CHECK_FALSE(std::filesystem::exists(ran));
    CHECK(fx.run({"lock", lock, "--wait", "0s", "--", "true"}).code == 0);
  }
}

TEST_CASE("cli: lock --kill-after SIGKILLs a COMMAND that ignores SIGTERM after a lost lease, and exits 7",
          "[cli]") {
  default_signal_actions();
  Fixture fx;
  const std::string pid_file = fx.dir.sub("command.pid");
  const std::string terms = fx.dir.sub("command.terms");
  // COMMAND notes every SIGTERM and carries on.
  const std::string script = "trap 'echo got-term >> " + terms + "' TERM; echo $$ > " + pid_file + ".tmp; mv " +
                             pid_file + ".tmp " + pid_file + "; while true; do sleep 0.05; done";
  auto holder = fx.start("stubborn.log", {"lock", "-v", "stubborn", "--kill-after", "1s", "--", "sh", "-c", script});
  wait_until("COMMAND to start", [&] {
    REQUIRE(holder->running());
    return std::filesystem::exists(pid_file);
  });
  cli::DaemonRecord command;
  command.pid = std::stoi(read_file(pid_file));
  command.start_time = cli::process_start_time(command.pid).value_or(0);
  REQUIRE(cli::is_alive(command));

  fx.take_over(*holder, "stubborn");
  auto ended = ended_with(*holder, 30000);
  INFO(holder->log());
  CHECK(ended == 7);
  CHECK(read_file(terms).find("got-term") != std::string::npos);  // it got SIGTERM and lived on
  CHECK(holder->log().find("did not exit within 1s of SIGTERM; killing it (SIGKILL)") != std::string::npos);
  CHECK_FALSE(cli::is_alive(command));
}

// Whether `pid` has exited and waits for its parent to reap it.
bool is_zombie(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] == 'Z';
}

// COMMAND `sh -c` that starts `sleep 600` (a grandchild of `palisade lock`),
// writes its pid to `pid_file` and waits for it.
std::string grandchild_script(const std::string& pid_file) {
  return "sleep 600 & echo $! > " + pid_file + ".tmp; mv " + pid_file + ".tmp " + pid_file + "; wait";
}

cli::DaemonRecord process_in(const std::string& pid_file) {
  cli::DaemonRecord p;
  p.pid = std::stoi(read_file(pid_file));
  p.start_time = cli::process_start_time(p.pid).value_or(0);
  return p;
}

TEST_CASE("cli: a lost lease and a SIGTERM stop COMMAND's whole process group, grandchildren too", "[cli]") {
  default_signal_actions();
  Fixture fx;
  for (const bool lease_lost : {true, false}) {
    INFO((lease_lost ? "the lease is lost" : "SIGTERM to palisade lock"));
    const std::string lock = lease_lost ? "lost" : "termed";
    const std::string pid_file = fx.dir.sub(lock + ".pid");
    auto holder = fx.start(lock + ".log", {"lock", "-v", lock, "--", "sh", "-c", grandchild_script(pid_file)});
    wait_until("COMMAND to start its child", [&] {
      REQUIRE(holder->running());
      return std::filesystem::exists(pid_file);
    });
    const cli::DaemonRecord sleeper = process_in(pid_file);
    REQUIRE(cli::is_alive(sleeper));
    if (lease_lost) {
      fx.take_over(*holder, lock);
    } else {
      holder->signal(SIGTERM);
    }
    auto ended = ended_with(*holder, 30000);
    INFO(holder->log());
    CHECK(ended == (lease_lost ? 7 : 128 + SIGTERM));
    // The sleep got the signal with its shell: nothing of COMMAND outlives palisade.
    wait_until("the grandchild to be gone", [&] { return !cli::is_alive(sleeper) || is_zombie(sleeper.pid); });
  }
}

TEST_CASE("cli: lock exits 7 when its session expired while COMMAND ran, even if COMMAND ended first", "[cli]") {
  default_signal_actions();
  Fixture fx;
  const std::string ready = fx.dir.sub("paused.ready");
  const std::string go = fx.dir.sub("paused.go");
  auto holder = fx.start("paused.log", {"lock", "-v", "paused", "--", "sh", "-c",
                                        "echo $$ > " + ready + ".tmp; mv " + ready + ".tmp " + ready +
                                            "; while [ ! -e " + go + " ]; do sleep 0.05; done; exit 0"});
  wait_until("COMMAND to start", [&] {
    REQUIRE(holder->running());
    return std::filesystem::exists(ready);
  });
  const pid_t command = std::stoi(read_file(ready));
  // palisade lock is paused: COMMAND ends (unreaped), the session expires,
  // another client takes the lock; then palisade wakes.
  holder->signal(SIGSTOP);
  std::ofstream(go) << "";
  wait_until("COMMAND to exit", [&] { return is_zombie(command); });
  LockClientOptions o;
  o.nodes = fx.cluster->lockd_endpoints();
  auto other = LockClient::connect(o);
  REQUIRE(other.is_ok());
  REQUIRE(other.value()->acquire("paused", {.wait = 20s}).is_ok());
  holder->signal(SIGCONT);
  auto ended = ended_with(*holder, 30000);
  INFO(holder->log());
  CHECK(ended == 7);
  CHECK(holder->log().find("lost 'paused'") != std::string::npos);
}

TEST_CASE("cli: status shows epochs as ROUND.NODE, and -o json the raw epoch with its round and node", "[cli]") {
  Fixture fx;
  // Under load (TSan) a node can miss status's one-second deadline, or the
  // short-lease group can fail over between the two calls: look again until
  // every node answered and the text shows the master the json showed.
  nlohmann::json group;
  Run text;
  for (int attempt = 1;; ++attempt) {
    Run json = fx.run({"status", "-o", "json"});
    group = json.code == 0 ? json_of(json)["lock_group"] : nlohmann::json();
    const bool answered = !group.is_null() && !group["master"].is_null() &&
                          std::all_of(group["nodes"].begin(), group["nodes"].end(),
                                      [](const nlohmann::json& n) { return !n["epoch"].is_null(); });
    text = fx.run({"status"});
    if (answered && text.code == 0 &&
        text.out.find(", epoch " + std::to_string(group["epoch_round"].get<uint64_t>()) + ".") != std::string::npos) {
      break;
    }
    INFO(json.out << text.out);
    REQUIRE(attempt < 10);
  }
  const uint64_t epoch = group["epoch"].get<uint64_t>();
  const uint64_t round = group["epoch_round"].get<uint64_t>();
  const uint64_t node = group["epoch_node"].get<uint64_t>();
  CHECK(round >= 1);
  CHECK(epoch == ((round << 8) | node));
  CHECK(node == group["master"].get<uint64_t>());  // a master's epoch is its own ballot
  for (const auto& n : group["nodes"]) {
    INFO(n.dump());
    CHECK(n["epoch"].get<uint64_t>() == ((n["epoch_round"].get<uint64_t>() << 8) | n["epoch_node"].get<uint64_t>()));
  }

  INFO(text.out);
  const std::string readable = std::to_string(round) + "." + std::to_string(node);
  CHECK(text.out.find("master lockd-" + std::to_string(node) + ", epoch " + readable + ",") != std::string::npos);
  CHECK(text.out.find(" master     " + readable + " ") != std::string::npos);  // the master's row
  CHECK(text.out.find(std::to_string(epoch)) == std::string::npos);            // the raw ballot is not shown
}

TEST_CASE("cli: status pages through more locks than one lock_status reply holds and lists each once", "[cli]") {
  Fixture fx;
  // One session in the test process takes them all (far cheaper than a
  // `palisade lock` process per lock) and holds them until it closes: a full
  // first page (wire::kMaxStatusLocks) and a few more on the second.
  LockClientOptions o;
  o.nodes = fx.cluster->lockd_endpoints();
  auto holder = LockClient::connect(o);
  REQUIRE(holder.is_ok());
  constexpr size_t kLocks = wire::kMaxStatusLocks + 5;
  std::set<std::string> names;
  for (size_t i = 0; i < kLocks; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "page-%04zu", i);  // sorted by name as the master pages them
    auto lease = holder.value()->try_acquire(name);
    REQUIRE(lease.is_ok());
    names.insert(name);
  }

  Run json = fx.run({"status", "-o", "json"});
  REQUIRE(json.code == 0);
  auto group = json_of(json)["lock_group"];
  CHECK(group["locks_complete"] == true);
  std::map<std::string, int> seen;
  for (const auto& l : group["locks"]) ++seen[l["name"].get<std::string>()];
  // None twice: a page starts after the last lock of the one before.
  CHECK(group["locks"].size() == kLocks);
  CHECK(seen.size() == kLocks);
  for (const std::string& name : names) {
    INFO(name);
    CHECK(seen[name] == 1);
  }

  Run text = fx.run({"status"});
  REQUIRE(text.code == 0);
  CHECK(text.out.find("\nlocks: " + std::to_string(kLocks) + " (holders are session ids)\n") != std::string::npos);
  CHECK(text.out.find("did not answer") == std::string::npos);
  std::map<std::string, int> listed;
  std::istringstream lines(text.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first.rfind("page-", 0) == 0) ++listed[first];
  }
  CHECK(listed.size() == kLocks);
  for (const auto& [name, count] : listed) {
    INFO(name);
    CHECK(names.count(name) == 1);
    CHECK(count == 1);
  }
}

// A lock group of one node, faked in the test process, whose master stops
// answering between pages on cue: it answers the first lock_status with a
// full page of locks and never the request for the next one. (A real master
// cannot be stopped between two of status's requests without a race.)
class OnePageMaster {
 public:
  OnePageMaster() : router_(transport::make_router(ctx_, "tcp://127.0.0.1:*", {})) {
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { serve(); });
  }
  ~OnePageMaster() {
    stop_ = true;
    thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }
  // The `after` of every request for a next page, in order.
  std::vector<std::string> next_pages_asked() {
    std::lock_guard lock(mu_);
    return next_pages_asked_;
  }

 private:
  void serve() {
    while (!stop_) {
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 20ms);
      auto routed = transport::try_recv_routed(router_);
      if (!routed) continue;
      auto request = wire::decode_lock_request(routed->frame(), wire::Limits{});
      if (!request.is_ok()) continue;
      const auto* status = std::get_if<wire::LockStatusRequest>(&request.value().body);
      if (status == nullptr) continue;
      if (!status->after.empty()) {
        std::lock_guard lock(mu_);
        next_pages_asked_.push_back(status->after);
        continue;  // no answer: the master went away
      }
      wire::LockReply reply;
      reply.id = request.value().id;
      reply.epoch = (1 << 8) | 1;  // round 1, node 1
      reply.master = 1;
      reply.master_endpoint = endpoint_;
      reply.node = 1;
      reply.role = "master";
      reply.sessions = 1;
      for (size_t i = 0; i < wire::kMaxStatusLocks; ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "fake-%04zu", i);
        reply.locks.push_back({.name = name, .token = i + 1, .holders = {1}});
      }
      transport::send_routed(router_, *routed, wire::encode_lock_reply(reply));
    }
  }

  zmq::context_t ctx_{1};
  zmq::socket_t router_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> next_pages_asked_;
  std::thread thread_;
};

TEST_CASE("cli: status says locks_complete false when the master stops answering between pages", "[cli]") {
  TempDir dir;
  OnePageMaster master;
  ClusterConfig config;
  config.group = "one-page";
  config.lockd = {{.id = 1, .endpoint = master.endpoint()}};
  config.replicas = {"tcp://127.0.0.1:1"};  // nothing listens there: the replica does not answer
  const std::string file = dir.sub("cluster.toml");
  std::ofstream(file) << format_cluster_config(config);

  Run json = palisade(dir, {"--cluster", file, "status", "-o", "json"});
  CHECK(json.code == 4);  // no write quorum of replicas
  auto group = json_of(json)["lock_group"];
  CHECK(group["master"] == 1);
  CHECK(group["locks_complete"] == false);
  CHECK(group["locks"].size() == wire::kMaxStatusLocks);  // the first page, kept
  // It did ask for the page after the last lock of the first.
  CHECK(master.next_pages_asked() == std::vector<std::string>{"fake-0999"});

  Run text = palisade(dir, {"--cluster", file, "status"});
  INFO(text.out);
  CHECK(text.code == 4);
  const std::string says =
      "\nlocks: 1000 (holders are session ids); more locks, but the master did not answer for them\n";
  CHECK(text.out.find(says) != std::string::npos);
}

TEST_CASE("cli: cluster up on ports another cluster holds fails, names the daemon, and a retry needs no purge",
          "[cli]") {
  TempDir home;
  const std::string a = home.sub("a");
  const std::string b = home.sub("b");
  ClusterDown cleanup_a{home, a};
  ClusterDown cleanup_b{home, b};
  REQUIRE(palisade(home, {"cluster", "up", "--dir", a}).code == 0);
  auto config = load_cluster_file(a + "/cluster.toml");
  REQUIRE(config.is_ok());
  const std::string taken = config.value().lockd[0].endpoint;
  const std::string port = taken.substr(taken.rfind(':') + 1);

  // Its daemons could not listen, and A's would have answered for them.
  Run clash = palisade(home, {"cluster", "up", "--dir", b, "--base-port", port});
  INFO(clash.out);
  CHECK(clash.code == 2);
  CHECK(clash.out.find("lockd-1 cannot listen on " + taken + ": another process listens there") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(b + "/cluster.toml"));  // nothing leads a client to A by mistake
  auto records = cli::read_daemon_records(b + "/daemons");
  REQUIRE(records.is_ok());
  for (const auto& r : records.value()) CHECK_FALSE(cli::is_alive(r));

  // A retry with other flags starts a cluster of its own: no `down --purge` first.
  Run retry = palisade(home, {"cluster", "up", "--dir", b});
  INFO(retry.out);
  REQUIRE(retry.code == 0);
  REQUIRE(palisade(home, {"--cluster", b + "/cluster.toml", "put", "only-in-b", "v"}).code == 0);
  CHECK(palisade(home, {"--cluster", a + "/cluster.toml", "get", "only-in-b"}).code == 5);
}

// Issue #24: `cluster up --dir D2 --base-port P` on ports another cluster held
// left a file whose endpoints reached that cluster, and put, get and `lock --
// put` through it succeeded there. D2's file here: cluster A's endpoints
// under an id of its own, as `cluster up` would have written it.
TEST_CASE("cli: a cluster file whose endpoints reach another cluster's daemons fails with the identity error, exit 1",
          "[cli]") {
  Fixture fx;
  REQUIRE(fx.run({"put", "k", "A's"}).code == 0);
  ClusterConfig d2 = fx.cluster->config();
  d2.cluster_id = new_cluster_id();
  const std::string file = fx.dir.sub("d2.toml");
  std::ofstream(file) << format_cluster_config(d2);
  const std::string refusal = "belongs to cluster " + cluster_id_hex(fx.cluster->config().cluster_id) +
                              ", the request is for cluster " + cluster_id_hex(d2.cluster_id);
  const std::string bin = PALISADE_BIN;
  for (std::vector<std::string> args : {std::vector<std::string>{"put", "k", "from D2"},
                                        {"get", "k"},
                                        {"del", "k"},
                                        {"lock", "L", "--", bin, "--cluster", file, "put", "k", "from D2"}}) {
    args.insert(args.begin(), {"--cluster", file});
    Run r = palisade(fx.dir, args);
    INFO(r.out);
    CHECK(r.code == 1);  // docs/cli.md: the cluster file leads to another cluster
    CHECK(r.out.find("wrong_cluster: tcp://127.0.0.1:") != std::string::npos);
    CHECK(r.out.find(refusal) != std::string::npos);
  }
  auto json = json_of(palisade(fx.dir, {"--cluster", file, "-o", "json", "get", "k"}));
  CHECK(json["error"]["exit_code"] == 1);
  // Nothing of D2's reached A.
  CHECK(fx.run({"get", "k"}).out == "A's\n");
  Run status = fx.run({"-o", "json", "status"});
  INFO(status.out);
  CHECK(status.out.find("\"L\"") == std::string::npos);
}

TEST_CASE("cli: cluster up on a partly running cluster starts only the daemons that exited, with their data",
          "[cli]") {
  TempDir home;
  const std::string dir = home.sub("c");
  const std::string file = dir + "/cluster.toml";
  ClusterDown cleanup{home, dir};
  Run first = palisade(home, {"cluster", "up", "--dir", dir});
  INFO(first.out);
  REQUIRE(first.code == 0);
  REQUIRE(palisade(home, {"--cluster", file, "put", "k", "kept"}).code == 0);
  const int repaired = palisade(home, {"--cluster", file, "repair"}).code;  // every replica holds k
  REQUIRE((repaired == 0 || repaired == 8));

  auto before = cli::read_daemon_records(dir + "/daemons");
  REQUIRE(before.is_ok());
  REQUIRE(before.value().size() == 6);
  auto is_victim = [](const cli::DaemonRecord& r) { return r.name == "lockd-1" || r.name == "replica-1"; };
  for (const auto& r : before.value()) {
    if (is_victim(r)) ::kill(r.pid, SIGKILL);
  }
  for (const auto& r : before.value()) {
    if (is_victim(r)) wait_until(r.name + " to die", [&] { return !cli::is_alive(r); });
  }

  // One definition of health: status and cluster status both say degraded (a
  // master and both quorums answer, not every daemon), and exit 0.
  wait_until("a master again", [&] {
    return json_of(palisade(home, {"--cluster", file, "status", "-o", "json"}))["state"] == "degraded";
  });
  Run degraded = palisade(home, {"--cluster", file, "status"});
  CHECK(degraded.code == 0);
  CHECK(degraded.out.find("): degraded\n") != std::string::npos);
  Run degraded_daemons = palisade(home, {"cluster", "status", "--dir", dir, "-o", "json"});
  CHECK(degraded_daemons.code == 0);
  CHECK(json_of(degraded_daemons)["state"] == "degraded");
  CHECK(json_of(degraded_daemons)["healthy"] == false);

  // A size other than the cluster's is refused and starts nothing; the same size is no conflict.
  Run conflict = palisade(home, {"cluster", "up", "--dir", dir, "--replicas", "5"});
  INFO(conflict.out);
  CHECK(conflict.code == 2);
  CHECK(conflict.out.find("--replicas 5, but it has 3 replicas") != std::string::npos);
  auto unchanged = cli::read_daemon_records(dir + "/daemons");
  REQUIRE(unchanged.is_ok());
  for (const auto& r : unchanged.value()) CHECK(cli::is_alive(r) == !is_victim(r));

  Run again = palisade(home, {"cluster", "up", "--dir", dir, "--lockd", "3"});
  INFO(again.out);
  REQUIRE(again.code == 0);
  CHECK(again.out.find("started lockd-1, replica-1 of the cluster in " + dir + " (4 of 6 daemons were running)") !=
        std::string::npos);
  CHECK(last_line(again.out) == file);
  auto after = cli::read_daemon_records(dir + "/daemons");
  REQUIRE(after.is_ok());
  REQUIRE(after.value().size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    const cli::DaemonRecord& was = before.value()[i];
    const cli::DaemonRecord& now = after.value()[i];
    INFO(now.name);
    CHECK(now.name == was.name);
    CHECK(now.endpoint == was.endpoint);
    CHECK(cli::is_alive(now));
    if (is_victim(was)) {
      CHECK(now.pid != was.pid);
    } else {
      CHECK(now.pid == was.pid);  // the same process, untouched
      CHECK(now.start_time == was.start_time);
    }
  }

  Run status = palisade(home, {"--cluster", file, "status", "-o", "json"});
  INFO(status.out);
  CHECK(status.code == 0);
  auto out = json_of(status);
  for (const auto& n : out["lock_group"]["nodes"]) CHECK(n["reachable"] == true);
  for (const auto& r : out["replicas"]) CHECK(r["reachable"] == true);
  Run daemons = palisade(home, {"cluster", "status", "--dir", dir, "-o", "json"});
  INFO(daemons.out);
  CHECK(daemons.code == 0);
  // Named: a range-for over a member of a temporary reads freed memory.
  const auto daemons_json = json_of(daemons);
  for (const auto& d : daemons_json["daemons"]) {
    CHECK(d["state"] == "running");
    if (d["role"] == "master") CHECK(d["epoch_node"] == out["lock_group"]["master"]);
  }

  // The restarted replica came back on its data.
  const cli::DaemonRecord& replica_1 = after.value()[4];
  REQUIRE(replica_1.name == "replica-1");
  // `cluster up` made a secure cluster: the test connects as its admin.
  auto credentials = load_client_credentials(load_cluster_file(file).value(), dir + "/keys/admin.key");
  REQUIRE(credentials.is_ok());
  client::ReplicaConnection conn(replica_1.endpoint, credentials.value());
  auto read = conn.call({0, wire::ReadRequest{"k"}}, 2000);
  REQUIRE(read.is_ok());
  CHECK_FALSE(read.value().versions.empty());
  Run get = palisade(home, {"--cluster", file, "get", "k"});
  CHECK(get.code == 0);
  CHECK(get.out == "kept\n");
}

TEST_CASE("cli: status reports each replica's keys and the fence floor a locked put raised", "[cli]") {
  Fixture fx;
  const std::string bin = PALISADE_BIN;
  Run locked = fx.run({"lock", "L", "--", "sh", "-c", "echo token=$PALISADE_TOKEN; " + bin + " put k v"});
  INFO(locked.out);
  REQUIRE(locked.code == 0);
  const uint64_t token = std::stoull(locked.out.substr(locked.out.find("token=") + 6));
  REQUIRE(token > 0);
  // The put returns after a write quorum: repair brings the last replica along.
  const int repaired = fx.run({"repair"}).code;
  REQUIRE((repaired == 0 || repaired == 8));

  Run status = fx.run({"status", "-o", "json"});
  CHECK(status.code == 0);
  auto out = json_of(status);
  REQUIRE(out["replicas"].size() == 3);
  for (const auto& r : out["replicas"]) {
    INFO(r.dump());
    CHECK(r["reachable"] == true);
    CHECK(r["keys"] == 1);
    CHECK(r["floor_count"] == 1);
    CHECK(r["floors"] == nlohmann::json{{"L", token}});
    CHECK(r["floors_cut"] == false);
    CHECK(r["format"] == 4);
    CHECK(r["insecure"] == false);  // cluster up gives replicas the cluster key
    CHECK(r["config_version"] == 0);  // none installed: the cluster file's list
    CHECK(r["config_paused"] == false);
  }
  Run text = fx.run({"status"});
  INFO(text.out);
  CHECK(text.out.find("answering, 1 keys, 1 floors") != std::string::npos);
  CHECK(text.out.find("floor L ") != std::string::npos);
  CHECK(text.out.find("replica set version") == std::string::npos);
}

// Writes `key` while replica 3 is down, then brings it back without it.
void drift_replica_3(Fixture& fx, const std::string& key) {
  fx.cluster->replica(2).kill();
  REQUIRE(fx.run({"put", key, "written while replica 3 was down"}).code == 0);
  REQUIRE(fx.cluster->replica(2).start_and_wait().is_ok());
}

// Whether replica i stores a version of `key`.
bool replica_holds(Fixture& fx, size_t i, const std::string& key) {
  client::ReplicaConnection conn(fx.cluster->replica(i).endpoint());
  auto reply = conn.call({0, wire::ReadRequest{key}}, 2000);
  return reply.is_ok() && reply.value().status.is_ok() && !reply.value().versions.empty();
}

TEST_CASE("cli: repair reports differences, repairs them, and says equal, unreachable by exit code", "[cli]") {
  Fixture fx;
  drift_replica_3(fx, "drift");
  REQUIRE_FALSE(replica_holds(fx, 2, "drift"));

  Run dry = fx.run({"repair", "--dry-run"});
  INFO(dry.out);
  CHECK(dry.code == 8);
  CHECK_FALSE(replica_holds(fx, 2, "drift"));  // a dry run changes nothing
  Run repaired = fx.run({"repair", "-o", "json"});
  CHECK(repaired.code == 8);
  auto report = json_of(repaired);
  CHECK(report["equal"] == false);
  CHECK(report["versions_sent"] == 1);
  CHECK(replica_holds(fx, 2, "drift"));
  Run equal = fx.run({"repair"});
  CHECK(equal.code == 0);

  fx.cluster->replica(1).kill();
  Run down = fx.run({"repair", "--timeout", "1s"});
  INFO(down.out);
  CHECK(down.code == 4);
  CHECK(down.out.find(fx.cluster->replica(1).endpoint()) != std::string::npos);
}

TEST_CASE("cli: replicas with --anti-entropy-interval repair a drifted replica on their own", "[cli][anti_entropy]") {
  Fixture fx({"--anti-entropy-interval", "300ms"});
  drift_replica_3(fx, "healed");
  // Nobody reads the key: only the background runs can bring it to replica 3.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!replica_holds(fx, 2, "healed")) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(50ms);
  }
}

// set_replicas to the local cluster's master: its replicas, W = R = 2, in
// `phase`, replacing version `replaces`; the certificate, empty when no
// master made it within 20 s.
std::string set_replicas(Fixture& fx, uint64_t replaces, wire::ReplicaPhase phase) {
  const std::vector<std::string> replicas = fx.cluster->replica_endpoints();
  wire::SetReplicasRequest set{.version = replaces,
                               .replicas = {},
                               .write_quorum = 2,
                               .read_quorum = 2,
                               .phase = phase};
  for (size_t i = 0; i < replicas.size(); ++i) set.replicas.push_back({static_cast<uint32_t>(i + 1), replicas[i]});
  zmq::context_t ctx(1);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const std::string& node : fx.cluster->lockd_endpoints()) {  // the master answers; the others, not_master
      auto reply = transport::call_lockd_endpoint(ctx, node, set, 2s, "", std::nullopt);
      if (reply && reply->status.is_ok()) return reply->config;
    }
  }
  return {};
}

TEST_CASE("cli: paused replicas take the set that ends the pause from the lock group", "[cli][config]") {
  Fixture fx;
  const std::vector<std::string> replicas = fx.cluster->replica_endpoints();
  const std::string paused = set_replicas(fx, 0, wire::ReplicaPhase::kPaused);
  REQUIRE_FALSE(paused.empty());
  for (const std::string& r : replicas) REQUIRE(test::install_config_on(r, paused).is_ok());
  // A put waits for the pause to end, up to its timeout (a replacement
  // pauses for some milliseconds; nothing ends this one yet): exit 6.
  Run refused = fx.run({"put", "k", "v", "--timeout", "300ms"});
  CHECK(refused.code == 6);
  CHECK_THAT(refused.out, Catch::Contains("is paused, its replicas take no writes"));
  // So does a get: a replica that has not learnt the next set would answer
  // from before its writes.
  Run read = fx.run({"get", "k", "--timeout", "300ms"});
  CHECK(read.code == 6);
  CHECK_THAT(read.out, Catch::Contains("is paused, reads wait for the next set"));
  // A change does not start while another is under way.
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"member", "replace", "--replica", "1", "--with", replicas[1]},
                                             {"member", "remove", "--replica", "1"}}) {
    Run busy = fx.run(args);
    CHECK(busy.code == 6);
    CHECK_THAT(busy.out, Catch::Contains("is paused: a change is under way"));
  }
  // What the master does to a pause that lasts too long, or a replacement
  // that ends it: a new version, serving, that nobody gives the replicas.
  REQUIRE_FALSE(set_replicas(fx, 1, wire::ReplicaPhase::kServing).empty());
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  auto all_serving = [&] {
    return std::all_of(replicas.begin(), replicas.end(),
                       [](const std::string& r) { return test::config_version_of(r) == 2; });
  };
  while (!all_serving() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100ms);
  REQUIRE(all_serving());
  Run put = fx.run({"put", "k", "v"});
  INFO(put.out);
  CHECK(put.code == 0);
  CHECK_THAT(fx.cluster->logs(), Catch::Contains("took replica set version 2 from the lock group"));
}

TEST_CASE("cli: a cluster file whose replicas were all replaced still finds the set from the lock group",
          "[cli][config]") {
  Fixture fx;
  REQUIRE_FALSE(set_replicas(fx, 0, wire::ReplicaPhase::kServing).empty());
  // The file of a client machine nobody updated: its [[replica]] entries name
  // replicas that are gone (nothing listens there).
  ClusterConfig moved = load_cluster_file(fx.cluster->cluster_file()).value();
  moved.replicas = cli::free_endpoints(3);
  const std::string path = fx.dir.sub("moved.toml");
  std::ofstream(path) << format_cluster_config(moved);
  Run put = palisade(fx.dir, {"--cluster", path, "put", "k", "v"});
  INFO(put.out);
  CHECK(put.code == 0);
  Run get = palisade(fx.dir, {"--cluster", path, "get", "k"});
  CHECK(get.code == 0);
  CHECK(get.out == "v\n");
}

TEST_CASE("cli: a cluster file that names only the lock group takes the replica set from it", "[cli][config]") {
  Fixture fx;
  ClusterConfig only = load_cluster_file(fx.cluster->cluster_file()).value();
  only.replicas.clear();
  only.spare_replicas.clear();
  only.read_quorum = only.write_quorum = 0;
  const std::string path = fx.dir.sub("lock-group-only.toml");
  std::ofstream(path) << format_cluster_config(only);
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--cluster", path});
    return palisade(fx.dir, args);
  };
  {  // No record yet: the lock group's nodes serve their own file's list, signed, as version 0.
    Run put = run({"put", "k0", "v0"});
    INFO(put.out);
    CHECK(put.code == 0);
    Run get = run({"get", "k0"});
    CHECK(get.out == "v0\n");
    // Both need a master: under load (TSan) the group may be between two.
    Run listed;
    wait_until("a master to list the members", [&] { return (listed = run({"member", "list"})).code == 0; });
    CHECK_THAT(listed.out, Catch::Contains("replica set: none recorded, the cluster file's [[replica]] list stands "
                                           "(W=2 R=2):\n    1  " +
                                           fx.cluster->replica_endpoints()[0]));
    Run status;
    wait_until("a healthy status", [&] { return (status = run({"status", "-o", "json"})).code == 0; });
    INFO(status.out);
    CHECK(nlohmann::json::parse(status.out)["replicas"].size() == 3);
  }
  // A file that lists no replicas cannot open a store when the lock group
  // cannot be reached: it has nothing else to go by.
  {
    ClusterConfig nowhere = only;
    nowhere.lockd = {{1, cli::free_endpoints(1)[0]}};
    const std::string lost = fx.dir.sub("nowhere.toml");
    std::ofstream(lost) << format_cluster_config(nowhere);
    Run put = palisade(fx.dir, {"--cluster", lost, "put", "k", "v"});
    CHECK(put.code != 0);
    CHECK_THAT(put.out, Catch::Contains("no lock group node answered get_replicas"));
    Run status = palisade(fx.dir, {"--cluster", lost, "status"});
    CHECK(status.code == 4);
    CHECK_THAT(status.out, Catch::Contains("replicas: unknown: " + lost + " lists no [[replica]]"));
  }
  REQUIRE_FALSE(set_replicas(fx, 0, wire::ReplicaPhase::kServing).empty());
  Run put = run({"put", "k", "v"});
  INFO(put.out);
  CHECK(put.code == 0);
  Run get = run({"get", "k"});
  CHECK(get.code == 0);
  CHECK(get.out == "v\n");
  // status and repair show and compare the record's replicas.
  Run status = run({"status", "-o", "json"});
  INFO(status.out);
  REQUIRE(status.code == 0);
  const nlohmann::json shown = nlohmann::json::parse(status.out);
  CHECK(shown["state"] == "healthy");
  REQUIRE(shown["replicas"].size() == 3);
  CHECK(shown["replicas"][1]["endpoint"] == fx.cluster->replica_endpoints()[1]);
  Run repair = run({"repair"});
  INFO(repair.out);
  CHECK((repair.code == 0 || repair.code == 8));
  CHECK_THAT(repair.out, Catch::Contains("3 of 3 replicas compared, 3 answered"));

  // A replica's file may name only the lock group too. Restarted from one,
  // replica 1 takes the set from the record (W from it, and the certificate).
  cli::Daemon& listed = fx.cluster->replica(1);
  listed.stop();
  test::ReplicaProcess again(listed.data_dir(), {"--cluster", path}, listed.endpoint());
  again.wait_ready();
  CHECK_THAT(again.process().log(),
             Catch::Contains("names only the lock group: took replica set version 1 from it, 3 replicas (W=2 R=2)\n"));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (test::config_version_of(listed.endpoint()) != 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  CHECK(test::config_version_of(listed.endpoint()) == 1);
  Run put_again = run({"put", "k", "w"});
  CHECK(put_again.code == 0);
  // One the set does not list is a spare: it takes versions only from a fill.
  test::ReplicaProcess spare(fx.dir.sub("spare"), {"--cluster", path});
  spare.wait_ready();
  CHECK_THAT(spare.process().log(),
             Catch::Contains(", which do not include this one") && Catch::Contains("a spare of " + path));
}

TEST_CASE("cli: put, get and repair follow the replica set the lock group signed", "[cli][config]") {
  Fixture fx;
  const std::vector<std::string> replicas = fx.cluster->replica_endpoints();
  Run none = fx.run({"member", "list"});
  INFO(none.out);
  CHECK(none.code == 0);
  CHECK_THAT(none.out, Catch::Contains("replica set: none recorded, the cluster file's [[replica]] list stands (W=2 "
                                       "R=2):\n    1  " +
                                       replicas[0]));
  // The lock group's first record of the set: the file's replicas, version 1.
  const std::string certificate = set_replicas(fx, 0, wire::ReplicaPhase::kServing);
  REQUIRE_FALSE(certificate.empty());
  Run listed = fx.run({"member", "list", "-o", "json"});
  INFO(listed.out);
  REQUIRE(listed.code == 0);
  const nlohmann::json record = nlohmann::json::parse(listed.out)["replicas"];
  CHECK(record["version"] == 1);
  CHECK(record["phase"] == "serving");
  CHECK(record["checked"] == true);
  CHECK(record["replicas"].size() == 3);
  CHECK(record["replicas"][2]["address"] == replicas[2]);
  CHECK_THAT(fx.run({"member", "list"}).out, Catch::Contains("replica set, version 1, serving (W=2 R=2):"));
  {  // A cluster file with another group's key: the certificate does not check out.
    ClusterConfig forged = load_cluster_file(fx.cluster->cluster_file()).value();
    forged.sequencer_public_key = SequencerSigner(ClusterKey::generate(), forged.group).public_key();
    forged.key_file = fx.cluster->cluster_file().substr(0, fx.cluster->cluster_file().rfind('/')) + "/cluster.key";
    forged.replica_key_file.clear();
    const std::string path = fx.dir.sub("forged.toml");
    std::ofstream(path) << format_cluster_config(forged);
    Run refused = palisade(fx.dir, {"--cluster", path, "member", "list"});
    CHECK(refused.code != 0);
    CHECK_THAT(refused.out, Catch::Contains("does not check out"));
  }
  for (int i : {0, 1}) REQUIRE(test::install_config_on(replicas[i], certificate).is_ok());
  // Two replicas refuse the file's list now: the commands check the
  // certificate with the file's sequencer_public_key and follow it.
  Run put = fx.run({"put", "k", "v"});
  INFO(put.out);
  CHECK(put.code == 0);
  Run get = fx.run({"get", "k"});
  CHECK(get.code == 0);
  CHECK(get.out == "v\n");
  Run repair = fx.run({"repair"});
  INFO(repair.out);
  CHECK((repair.code == 0 || repair.code == 8));
  CHECK_THAT(repair.out, Catch::Contains("the replicas keep replica set version 1: comparing its 3 replicas"));
  CHECK_THAT(repair.out, Catch::Contains("3 of 3 replicas compared, 3 answered"));
}

}  // namespace
}  // namespace palisade
