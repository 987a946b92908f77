// CurveZMQ on real daemons (docs/security.md): a cluster file that lists
// identities, each daemon started with its key file, clients with theirs. A
// key the file does not list gets no reply and is counted; a plaintext client
// cannot talk to a secure daemon at all.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "auth/repair_seal.h"
#include "auth/cluster_key.h"
#include "base/cluster_id.h"
#include "base/temp_dir.h"
#include "wire/hash.h"
#include "cli/process.h"
#include "client/replica_connection.h"
#include "lockgroup/paxos_messages.h"
#include "lockgroup/peer_auth.h"
#include "transport/transport.h"
#include "config/cluster_config.h"
#include "palisade/conditional.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "palisade/sequencer.h"
#include "transport/curve_keys.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;

// Three lockd nodes, three replicas, a client identity "app" and an "admin",
// each with a key file under keys/; the daemons run from the start. With
// `roles`, the file also has [[role]] "jobs" (locks, reads and writes under
// jobs/, and conditional writes there) and "reader" (reads anything), and identities "worker" (jobs) and
// "auditor" (reader); "app" then has no role, so it may do nothing.
class SecureCluster {
 public:
  explicit SecureCluster(bool roles = false) {
    config_.cluster_id = new_cluster_id();
    config_.group = "secure";
    config_.key_file = "cluster.key";
    const std::vector<std::string> endpoints = cli::free_endpoints(6);
    auto endpoint = [&, next = size_t{0}]() mutable { return endpoints[next++]; };
    for (uint32_t id = 1; id <= 3; ++id) {
      config_.lockd.push_back({id, endpoint()});
      add_identity("lockd-" + std::to_string(id), "lockd", config_.lockd.back().endpoint);
    }
    for (int i = 0; i < 3; ++i) {
      config_.replicas.push_back(endpoint());
      add_identity("replica-" + std::to_string(i), "replica", config_.replicas.back());
    }
    add_identity("app", "", "");
    add_identity("admin", "admin", "");
    if (roles) {
      config_.roles = {
          Role{.name = "jobs", .locks = {"jobs/*", "palisade.cas/jobs/*"}, .read = {"jobs/*"}, .write = {"jobs/*"}},
          Role{.name = "reader", .read = {"*"}}};
      add_identity("worker", "jobs", "");
      add_identity("auditor", "reader", "");
    }
    std::filesystem::create_directories(dir_.sub("keys"));
    for (const auto& [name, file] : keys_) REQUIRE(transport::write_key_file(key_path(name), file).is_ok());
    write(dir_.sub("cluster.key"), cluster_key_.to_hex() + "\n");
    std::filesystem::permissions(dir_.sub("cluster.key"), std::filesystem::perms::owner_read);
    write(cluster_file(), format_cluster_config(config_));
    for (size_t i = 0; i < config_.replicas.size(); ++i) start_replica(i);
    for (const LockdNode& n : config_.lockd) {
      const std::string name = "lockd-" + std::to_string(n.id);
      daemons_[name] = std::make_unique<cli::Process>(
          std::vector<std::string>{PALISADE_LOCKD_BIN, "--id", std::to_string(n.id), "--cluster", cluster_file(),
                                   "--data-dir", dir_.sub(name), "--key", key_path(name)},
          dir_.sub(name + ".log"));
    }
  }

  std::string cluster_file() const { return dir_.sub("cluster.toml"); }
  std::string key_path(const std::string& identity) const { return dir_.sub("keys/" + identity + ".key"); }
  const ClusterConfig& config() const { return config_; }
  const ClusterKey& cluster_key() const { return cluster_key_; }

  // What a client of identity `name` connects with.
  Credentials credentials(const std::string& name) const { return credentials(name, keys_.at(name).keys); }
  // The same with another key pair of that identity (one being rotated in).
  Credentials credentials(const std::string& name, const transport::CurveKeyPair& keys) const {
    Credentials c{.identity = name, .public_key = keys.public_key, .secret_key = keys.secret_key};
    for (const auto& [endpoint, daemon] : config_.daemon_identity) {
      c.server_keys[endpoint] = keys_.at(daemon).keys.public_key;
    }
    return c;
  }

  LockClientOptions lock_options(std::optional<Credentials> credentials) const {
    LockClientOptions o;
    for (const LockdNode& n : config_.lockd) o.nodes.push_back(n.endpoint);
    o.cluster_id = cluster_id_hex(config_.cluster_id);
    o.credentials = std::move(credentials);
    return o;
  }
  QuorumStoreOptions store_options(std::optional<Credentials> credentials) const {
    QuorumStoreOptions o;
    o.replicas = config_.replicas;
    o.cluster_id = cluster_id_hex(config_.cluster_id);
    o.timeout = 1500ms;
    o.share_connections = false;
    o.credentials = std::move(credentials);
    return o;
  }

  // A key pair for identity `name` that the cluster file does not list (yet).
  void add_key(const std::string& name) {
    keys_[name] = {name, transport::generate_curve_keys()};
    REQUIRE(transport::write_key_file(key_path(name), keys_[name]).is_ok());
  }
  Identity identity_of(const std::string& name) const {
    return {.name = name, .keys = {keys_.at(name).keys.public_key}, .roles = {}};
  }
  void rewrite(const ClusterConfig& config) { write(cluster_file(), format_cluster_config(config)); }
  void rewrite_text(const std::string& text) { write(cluster_file(), text); }
  // SIGHUP to every daemon; returns once each has logged its `n`th reload.
  void reload_all(size_t n) {
    for (auto& [name, process] : daemons_) process->signal(SIGHUP);
    for (auto& [name, process] : daemons_) {
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      for (;;) {
        const std::string log = process->log();
        size_t seen = 0;
        for (size_t at = log.find("(SIGHUP)"); at != std::string::npos; at = log.find("(SIGHUP)", at + 1)) ++seen;
        if (seen >= n) break;
        INFO(name << " has not reloaded; its log:\n" << log);
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        std::this_thread::sleep_for(20ms);
      }
    }
  }

  // Stops the daemon (SIGTERM) and returns its log, which ends with what it counted.
  std::string stop(const std::string& name) {
    cli::Process& p = *daemons_.at(name);
    p.signal(SIGTERM);
    REQUIRE(p.wait(20000).has_value());
    return p.log();
  }
  std::string log(const std::string& name) const { return daemons_.at(name)->log(); }

 private:
  void add_identity(const std::string& name, const std::string& role, const std::string& endpoint) {
    transport::KeyFile file{name, transport::generate_curve_keys()};
    Identity identity{.name = name, .keys = {file.keys.public_key}, .roles = {}};
    if (!role.empty()) identity.roles.push_back(role);
    config_.identities.push_back(identity);
    if (!endpoint.empty()) config_.daemon_identity[endpoint] = name;
    keys_[name] = file;
  }
  void start_replica(size_t i) {
    const std::string name = "replica-" + std::to_string(i);
    daemons_[name] = std::make_unique<cli::Process>(
        std::vector<std::string>{PALISADE_REPLICA_BIN, "--data-dir", dir_.sub(name), "--listen", config_.replicas[i],
                                 "--cluster", cluster_file(), "--key", key_path(name)},
        dir_.sub(name + ".log"));
  }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    REQUIRE(out.good());
  }

  TempDir dir_;
  ClusterKey cluster_key_ = ClusterKey::generate();
  ClusterConfig config_;
  std::map<std::string, transport::KeyFile> keys_;
  std::map<std::string, std::unique_ptr<cli::Process>> daemons_;
};

// The count a daemon logs at stop: "N CurveZMQ handshakes refused".
uint64_t handshakes_refused(const std::string& log) {
  std::smatch m;
  REQUIRE(std::regex_search(log, m, std::regex(R"((\d+) CurveZMQ handshakes refused)")));
  return std::stoull(m[1]);
}

// A put of the store, retried until the replicas have started (or 20 s).
WriteResult put_when_up(QuorumStore& store, const std::string& key, const std::string& value) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    WriteResult r = store.put(key, value);
    if (r.status.is_ok() || std::chrono::steady_clock::now() >= deadline) return r;
    std::this_thread::sleep_for(100ms);
  }
}

TEST_CASE("security: a listed key locks and writes while an unknown key gets no reply and is counted", "[security]") {
  SecureCluster cluster;
  // The cluster's own client: a session, a grant, a fenced write and a read.
  auto store = QuorumStore::open(cluster.store_options(cluster.credentials("app")));
  REQUIRE(store.is_ok());
  WriteResult plain = put_when_up(*store.value(), "greeting", "hello");
  INFO(cluster.log("replica-0"));
  REQUIRE(plain.status.is_ok());
  LockClientOptions lock_options = cluster.lock_options(cluster.credentials("app"));
  lock_options.store = store.value().get();
  auto locks = LockClient::connect(lock_options, 20s);
  INFO(cluster.log("lockd-1"));
  REQUIRE(locks.is_ok());
  auto lease = locks.value()->acquire("jobs/1");
  REQUIRE(lease.is_ok());
  CHECK(store.value()->put("jobs/1/state", "running", lease.value()).status.is_ok());
  ReadResult read = store.value()->get("jobs/1/state");
  REQUIRE(read.status.is_ok());
  CHECK(read.value == "running");

  // A key pair the cluster file does not list, that knows every daemon's key.
  Credentials stranger = cluster.credentials("app");
  stranger.identity = "stranger";
  const transport::CurveKeyPair other = transport::generate_curve_keys();
  stranger.public_key = other.public_key;
  stranger.secret_key = other.secret_key;
  CHECK(LockClient::connect(cluster.lock_options(stranger), 2s).status().code() == Code::kUnavailable);
  auto stranger_store = QuorumStore::open(cluster.store_options(stranger));
  REQUIRE(stranger_store.is_ok());
  CHECK_FALSE(stranger_store.value()->put("greeting", "forged").status.is_ok());
  CHECK_FALSE(stranger_store.value()->get("greeting").status.is_ok());

  // Plaintext: no handshake completes, so nothing reaches the daemons.
  CHECK(LockClient::connect(cluster.lock_options(std::nullopt), 2s).status().code() == Code::kUnavailable);
  auto plaintext = QuorumStore::open(cluster.store_options(std::nullopt));
  REQUIRE(plaintext.is_ok());
  CHECK_FALSE(plaintext.value()->put("greeting", "plaintext").status.is_ok());

  // Nothing the refused clients sent took effect.
  read = store.value()->get("greeting");
  REQUIRE(read.status.is_ok());
  CHECK(read.value == "hello");

  // Every daemon the stranger tried counted it; the listed client was never refused.
  locks.value().reset();
  store.value().reset();
  for (const char* daemon : {"lockd-1", "lockd-2", "lockd-3", "replica-0", "replica-1", "replica-2"}) {
    INFO(daemon);
    CHECK(handshakes_refused(cluster.stop(daemon)) >= 1);
  }
}

// Polls `done` every 20 ms until it holds; fails the test after 20 s.
template <typename Done>
void wait_until(const std::string& what, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!done()) {
    INFO("waiting for " << what);
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
}

TEST_CASE("security: peer messages and repairs are taken only from identities whose role allows them", "[security]") {
  SecureCluster cluster;
  auto store = QuorumStore::open(cluster.store_options(cluster.credentials("app")));
  REQUIRE(store.is_ok());
  REQUIRE(put_when_up(*store.value(), "k", "v").status.is_ok());

  // "app" holds the cluster key too (it read the file): its seal verifies,
  // but a replica takes repairs and tombstone drops only from a replica or an
  // admin, by the key of the handshake.
  const std::string& replica = cluster.config().replicas[0];
  const uint64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const RepairSeal seal(cluster.cluster_key(), cluster.config().group);
  const std::string sealed_ping = seal.seal(
      wire::encode_request({.id = 1, .body = wire::PingRequest{}, .cluster = cluster.config().cluster_id}), now_ms);
  const wire::ReplicaRequest drop{.id = 2,
                                  .body = wire::DropTombstoneRequest{.key = "k", .ts = {}},
                                  .cluster = cluster.config().cluster_id};
  client::ReplicaConnection as_app(replica, cluster.credentials("app"));
  auto app_sealed = as_app.call_raw({sealed_ping});
  REQUIRE(app_sealed.is_ok());
  CHECK(app_sealed.value().status.code() == Code::kPermissionDenied);
  CHECK(app_sealed.value().status.message().find("'app' may not repair") != std::string::npos);
  auto app_drop = as_app.call(drop);
  REQUIRE(app_drop.is_ok());
  CHECK(app_drop.value().status.code() == Code::kPermissionDenied);
  client::ReplicaConnection as_admin(replica, cluster.credentials("admin"));
  auto admin_sealed = as_admin.call_raw({sealed_ping});
  REQUIRE(admin_sealed.is_ok());
  CHECK(admin_sealed.value().status.is_ok());
  auto admin_drop = as_admin.call(drop);
  REQUIRE(admin_drop.is_ok());
  CHECK(admin_drop.value().status.code() != Code::kPermissionDenied);
  ReadResult read = store.value()->get("k");
  REQUIRE(read.status.is_ok());
  CHECK(read.value == "v");

  // A peer message that "app" sealed with the cluster key, claiming to be
  // lockd-2's: lockd-1 refuses it for the identity that sent it.
  lockgroup::PeerMessage m;
  m.from = 2;
  m.to = 1;
  m.group = hash64(cluster.config().group);
  m.incarnation = ~uint64_t{0};
  m.serial = 1;
  m.body = lockgroup::Prepare{.ballot = lockgroup::make_ballot(1'000'000, 2), .from_slot = 1, .seq = 1};
  const std::string endpoint = cluster.config().lockd[0].endpoint;
  zmq::context_t ctx;
  zmq::socket_t impostor = transport::make_dealer(
      ctx, endpoint, transport::dealer_options({.queue_until_connected = true}, cluster.credentials("app"), endpoint));
  const std::string forged = lockgroup::PeerAuth(cluster.cluster_key(), cluster.config().group).seal(m);
  REQUIRE(impostor.send(zmq::buffer(forged), zmq::send_flags::none));
  wait_until("lockd-1 to refuse the impostor", [&] {
    return cluster.log("lockd-1").find("sent by identity 'app', not by node 2's") != std::string::npos;
  });
  // The group still serves: the real lockd-2 was never refused.
  auto locks = LockClient::connect(cluster.lock_options(cluster.credentials("app")), 20s);
  REQUIRE(locks.is_ok());
  CHECK(locks.value()->acquire("after").is_ok());
  locks.value().reset();
  for (const char* node : {"lockd-2", "lockd-3"}) {
    INFO(node);
    CHECK(cluster.stop(node).find("not by node") == std::string::npos);
  }
}

TEST_CASE("security: SIGHUP reloads the identities, and sessions already open stay", "[security]") {
  SecureCluster cluster;
  auto store = QuorumStore::open(cluster.store_options(cluster.credentials("app")));
  REQUIRE(store.is_ok());
  REQUIRE(put_when_up(*store.value(), "k", "v").status.is_ok());
  auto locks = LockClient::connect(cluster.lock_options(cluster.credentials("app")), 20s);
  REQUIRE(locks.is_ok());
  auto lease = locks.value()->acquire("held");
  REQUIRE(lease.is_ok());

  // "late" has a key the daemons have not heard of: no answer.
  cluster.add_key("late");
  {
    auto refused = QuorumStore::open(cluster.store_options(cluster.credentials("late")));
    REQUIRE(refused.is_ok());
    CHECK_FALSE(refused.value()->put("k", "late").status.is_ok());
  }

  // The file now lists late and no longer app; every daemon reloads it.
  ClusterConfig changed = cluster.config();
  changed.identities.push_back(cluster.identity_of("late"));
  std::erase_if(changed.identities, [](const Identity& i) { return i.name == "app"; });
  cluster.rewrite(changed);
  cluster.reload_all(1);

  // late connects now (a refused handshake ends a ZeroMQ connection for good:
  // a new client). app's open session and connections go on, but app can
  // connect no more.
  auto late = QuorumStore::open(cluster.store_options(cluster.credentials("late")));
  REQUIRE(late.is_ok());
  CHECK(put_when_up(*late.value(), "k", "late").status.is_ok());
  CHECK(lease.value().valid());
  auto current = locks.value()->check_sequencer(lease.value().sequencer());
  REQUIRE(current.is_ok());
  CHECK(current.value());
  CHECK(store.value()->get("k").status.is_ok());
  CHECK(LockClient::connect(cluster.lock_options(cluster.credentials("app")), 2s).status().code() ==
        Code::kUnavailable);

  // A file that does not parse changes nothing: the daemons say so and serve on.
  cluster.rewrite_text("this is not toml [");
  cluster.reload_all(2);
  for (const char* daemon : {"lockd-1", "replica-0"}) {
    INFO(daemon);
    CHECK(cluster.log(daemon).find("the identities stay as they were") != std::string::npos);
  }
  CHECK(late.value()->put("k", "still late").status.is_ok());
}

TEST_CASE("security: an identity allowed only jobs/* locks and writes there and nowhere else", "[security]") {
  SecureCluster cluster(/*roles=*/true);
  auto store = QuorumStore::open(cluster.store_options(cluster.credentials("worker")));
  REQUIRE(store.is_ok());
  REQUIRE(put_when_up(*store.value(), "jobs/plain", "v").status.is_ok());
  auto locks = LockClient::connect(cluster.lock_options(cluster.credentials("worker")), 20s);
  REQUIRE(locks.is_ok());

  auto job = locks.value()->acquire("jobs/1");
  REQUIRE(job.is_ok());
  auto named = parse_sequencer(job.value().sequencer());
  REQUIRE(named.is_ok());
  CHECK(named.value().identity == "worker");  // the grant names its holder
  CHECK(store.value()->put("jobs/1/out", "done", job.value()).status.is_ok());

  auto ledger = locks.value()->try_acquire("ledger");
  CHECK(ledger.status().code() == Code::kPermissionDenied);
  const WriteResult ledger_write = store.value()->put("ledger/1", "stolen");
  CHECK(ledger_write.status.code() == Code::kPermissionDenied);
  const WriteResult under_lock = store.value()->put("ledger/2", "stolen", job.value());
  CHECK(under_lock.status.code() == Code::kPermissionDenied);
  CHECK(store.value()->get("ledger/1").status.code() == Code::kPermissionDenied);
  // A fenced read needs the key's read and the lock's acquire.
  const ReadResult fenced_read = store.value()->get("jobs/1/out", job.value());
  REQUIRE(fenced_read.status.is_ok());
  CHECK(fenced_read.value == "done");
  CHECK(store.value()->get("jobs/1/out", Fence{"ledger", job.value().token()}).status.code() ==
        Code::kPermissionDenied);

  // Nothing of it landed: an admin sees no ledger lock and no ledger keys.
  auto admin_store = QuorumStore::open(cluster.store_options(cluster.credentials("admin")));
  REQUIRE(admin_store.is_ok());
  for (const char* key : {"ledger/1", "ledger/2"}) {
    INFO(key);
    const ReadResult read = admin_store.value()->get(key);
    REQUIRE(read.status.is_ok());
    CHECK_FALSE(read.found);
  }
  auto admin_locks = LockClient::connect(cluster.lock_options(cluster.credentials("admin")), 20s);
  REQUIRE(admin_locks.is_ok());
  auto admin_ledger = admin_locks.value()->try_acquire("ledger");
  REQUIRE(admin_ledger.is_ok());
  CHECK(admin_ledger.value().token() == job.value().token() + 1);  // the refused acquire took no token

  // Repair and the replicas' whole state are the admin's: worker may not
  // compare replicas, whatever its client would claim.
  client::ReplicaConnection as_worker(cluster.config().replicas[0], cluster.credentials("worker"));
  auto tree = as_worker.call(wire::ReplicaRequest{.id = 1,
                                                  .body = wire::TreeRequest{.level = 0, .nodes = {0}},
                                                  .cluster = cluster.config().cluster_id});
  REQUIRE(tree.is_ok());
  CHECK(tree.value().status.code() == Code::kPermissionDenied);
  auto stats = as_worker.call(
      wire::ReplicaRequest{.id = 2, .body = wire::StatsRequest{}, .cluster = cluster.config().cluster_id});
  REQUIRE(stats.is_ok());
  CHECK(stats.value().status.code() == Code::kPermissionDenied);

  // An identity the file lists with no role may do nothing at all.
  auto app = QuorumStore::open(cluster.store_options(cluster.credentials("app")));
  REQUIRE(app.is_ok());
  CHECK(app.value()->put("jobs/1/out", "x").status.code() == Code::kPermissionDenied);

  // Conditional writes take the lock palisade.cas/KEY, which the role lists for jobs/*.
  ConditionalStore conditional(*locks.value(), *store.value());
  CHECK(conditional.put("jobs/counter", "1", Expect::absent()).status.is_ok());
  CHECK(conditional.put("ledger/counter", "1", Expect::absent()).status.code() == Code::kPermissionDenied);
}

TEST_CASE("security: a read-only identity can get but not put, delete or lock", "[security]") {
  SecureCluster cluster(/*roles=*/true);
  auto worker = QuorumStore::open(cluster.store_options(cluster.credentials("worker")));
  REQUIRE(worker.is_ok());
  REQUIRE(put_when_up(*worker.value(), "jobs/report", "v1").status.is_ok());

  auto auditor = QuorumStore::open(cluster.store_options(cluster.credentials("auditor")));
  REQUIRE(auditor.is_ok());
  const ReadResult read = auditor.value()->get("jobs/report");
  REQUIRE(read.status.is_ok());
  CHECK(read.value == "v1");
  CHECK(auditor.value()->put("jobs/report", "v2").status.code() == Code::kPermissionDenied);
  CHECK(auditor.value()->del("jobs/report").status.code() == Code::kPermissionDenied);
  auto locks = LockClient::connect(cluster.lock_options(cluster.credentials("auditor")), 20s);
  REQUIRE(locks.is_ok());  // a session it may open; a lock it may not take
  CHECK(locks.value()->try_acquire("jobs/1").status().code() == Code::kPermissionDenied);
  const ReadResult after = worker.value()->get("jobs/report");
  REQUIRE(after.status.is_ok());
  CHECK(after.value == "v1");
}

TEST_CASE("security: SIGHUP changes what an identity may do while its session stays", "[security]") {
  SecureCluster cluster(/*roles=*/true);
  auto locks = LockClient::connect(cluster.lock_options(cluster.credentials("worker")), 20s);
  REQUIRE(locks.is_ok());
  auto held = locks.value()->acquire("jobs/1");
  REQUIRE(held.is_ok());
  CHECK(locks.value()->try_acquire("reports/1").status().code() == Code::kPermissionDenied);
  auto store = QuorumStore::open(cluster.store_options(cluster.credentials("worker")));
  REQUIRE(store.is_ok());
  REQUIRE(put_when_up(*store.value(), "jobs/a", "1").status.is_ok());
  CHECK(store.value()->put("reports/a", "1").status.code() == Code::kPermissionDenied);

  // The role grows to reports/*; every daemon reloads the file.
  ClusterConfig changed = cluster.config();
  changed.roles[0].locks.push_back("reports/*");
  changed.roles[0].write.push_back("reports/*");
  cluster.rewrite(changed);
  cluster.reload_all(1);
  auto report = locks.value()->try_acquire("reports/1");  // the same session
  REQUIRE(report.is_ok());
  CHECK(held.value().valid());
  CHECK(store.value()->put("reports/a", "1", report.value()).status.is_ok());

  // And shrinks to nothing: the session and its leases stay, new calls are refused.
  changed.roles[0] = Role{.name = "jobs"};
  cluster.rewrite(changed);
  cluster.reload_all(2);
  CHECK(locks.value()->try_acquire("jobs/2").status().code() == Code::kPermissionDenied);
  CHECK(store.value()->put("jobs/a", "2", held.value()).status.code() == Code::kPermissionDenied);
  CHECK(held.value().valid());
  auto current = locks.value()->check_sequencer(held.value().sequencer());
  REQUIRE(current.is_ok());
  CHECK(current.value());
}

TEST_CASE("security: a client key rotates while its calls go on, and none fails", "[security]") {
  SecureCluster cluster;
  auto old_store = QuorumStore::open(cluster.store_options(cluster.credentials("app")));
  REQUIRE(old_store.is_ok());
  REQUIRE(put_when_up(*old_store.value(), "rotating", "0").status.is_ok());
  auto old_locks = LockClient::connect(cluster.lock_options(cluster.credentials("app")), 20s);
  REQUIRE(old_locks.is_ok());

  // app writes and locks with its old key throughout the rotation.
  std::atomic<bool> stop{false};
  std::atomic<int> calls{0};
  std::vector<std::string> failures;  // written by the writer only, read after join
  std::thread writer([&] {
    for (int i = 1; !stop; ++i) {
      if (WriteResult w = old_store.value()->put("rotating", std::to_string(i)); !w.status.is_ok()) {
        failures.push_back("put: " + w.status.to_string());
      }
      if (auto lease = old_locks.value()->acquire("rotating-lock", {.wait = 5s}); !lease.is_ok()) {
        failures.push_back("acquire: " + lease.status().to_string());
      } else if (Status s = old_locks.value()->release(lease.value()); !s.is_ok()) {
        failures.push_back("release: " + s.to_string());
      }
      ++calls;
    }
  });
  auto calls_go_on = [&](const char* what) {
    const int before = calls.load();
    wait_until(what, [&] { return calls.load() >= before + 3; });
  };

  // 1. The new key is listed beside the old one, and the daemons reload.
  const transport::CurveKeyPair fresh = transport::generate_curve_keys();
  ClusterConfig both = cluster.config();
  for (Identity& i : both.identities) {
    if (i.name == "app") i.keys.push_back(fresh.public_key);
  }
  cluster.rewrite(both);
  cluster.reload_all(1);
  calls_go_on("app's calls with the old key after the new one is listed");

  // 2. app moves over: new connections with the new key.
  auto new_store = QuorumStore::open(cluster.store_options(cluster.credentials("app", fresh)));
  REQUIRE(new_store.is_ok());
  CHECK(new_store.value()->put("moved", "yes").status.is_ok());
  auto new_locks = LockClient::connect(cluster.lock_options(cluster.credentials("app", fresh)), 20s);
  REQUIRE(new_locks.is_ok());

  // 3. The old key is dropped: connections made with it stay until closed,
  // and no new one is let in.
  ClusterConfig rotated = cluster.config();
  for (Identity& i : rotated.identities) {
    if (i.name == "app") i.keys = {fresh.public_key};
  }
  cluster.rewrite(rotated);
  cluster.reload_all(2);
  calls_go_on("app's calls over the connections made before the old key was dropped");
  CHECK(LockClient::connect(cluster.lock_options(cluster.credentials("app")), 2s).status().code() ==
        Code::kUnavailable);
  CHECK(new_store.value()->get("moved").status.is_ok());
  CHECK(new_locks.value()->acquire("after-rotation").is_ok());

  stop = true;
  writer.join();
  std::string failed;
  for (const std::string& f : failures) failed += f + "\n";
  INFO(failed);
  CHECK(failures.empty());
  CHECK(calls.load() >= 6);
}

TEST_CASE("security: a client key that is missing, unlisted or for no daemon is refused at open", "[security]") {
  SecureCluster cluster;
  Credentials missing_daemon = cluster.credentials("app");
  missing_daemon.server_keys.erase(cluster.config().lockd[0].endpoint);
  missing_daemon.server_keys.erase(cluster.config().replicas[0]);
  CHECK(LockClient::connect(cluster.lock_options(missing_daemon), 1s).status().code() == Code::kBadRequest);
  CHECK(QuorumStore::open(cluster.store_options(missing_daemon)).status().code() == Code::kBadRequest);
}

TEST_CASE("security: a daemon of a secure cluster does not start without its own listed key", "[security]") {
  SecureCluster cluster;
  struct Case {
    const char* what;
    std::vector<std::string> key_args;
    const char* says;
  };
  const transport::KeyFile unlisted{"lockd-1", transport::generate_curve_keys()};
  TempDir scratch;
  REQUIRE(transport::write_key_file(scratch.sub("unlisted.key"), unlisted).is_ok());
  for (const Case& c :
       {Case{"no key", {}, "give --key FILE"},
        Case{"another identity's key", {"--key", cluster.key_path("replica-0")}, "serves as 'lockd-1'"},
        Case{"a key the file does not list", {"--key", scratch.sub("unlisted.key")}, "does not list"}}) {
    INFO(c.what);
    // lockd-1 again, on another data dir: it must stop before it binds.
    std::vector<std::string> argv = {PALISADE_LOCKD_BIN,
                                     "--id",
                                     "1",
                                     "--cluster",
                                     cluster.cluster_file(),
                                     "--data-dir",
                                     scratch.sub(std::string("lockd-") + c.what)};
    argv.insert(argv.end(), c.key_args.begin(), c.key_args.end());
    cli::Process lockd(argv, scratch.sub("lockd.log"));
    auto status = lockd.wait(20000);
    REQUIRE(status.has_value());
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 1);
    CHECK(lockd.log().find(c.says) != std::string::npos);
    std::filesystem::remove(scratch.sub("lockd.log"));
  }
}

TEST_CASE("security: a daemon of a secure cluster refuses --insecure, even with its own key", "[security]") {
  SecureCluster cluster;
  TempDir scratch;
  const std::vector<std::pair<std::string, std::vector<std::string>>> daemons = {
      {"lockd-1",
       {PALISADE_LOCKD_BIN, "--id", "1", "--cluster", cluster.cluster_file(), "--data-dir", scratch.sub("lockd"),
        "--key", cluster.key_path("lockd-1"), "--insecure"}},
      {"replica-0",
       {PALISADE_REPLICA_BIN, "--cluster", cluster.cluster_file(), "--data-dir", scratch.sub("replica"), "--listen",
        cluster.config().replicas[0], "--key", cluster.key_path("replica-0"), "--insecure"}}};
  for (const auto& [name, argv] : daemons) {
    INFO(name);
    cli::Process daemon(argv, scratch.sub(name + ".log"));
    auto status = daemon.wait(20000);
    REQUIRE(status.has_value());
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 1);
    CHECK_THAT(daemon.log(), Catch::Contains("--insecure, but " + cluster.cluster_file() +
                                             " lists identities: its links are CurveZMQ; drop --insecure"));
    CHECK_THAT(daemon.log(), !Catch::Contains("started"));
  }
}

}  // namespace
}  // namespace palisade
