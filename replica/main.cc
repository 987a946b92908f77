// palisade-replica: one storage replica of the quorum store. Parses flags, takes
// the data directory, and wires LMDB, the handler and ZeroMQ together.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include <CLI/CLI.hpp>
#include <sodium.h>
#include <spdlog/spdlog.h>

#include "config/cluster_config.h"
#include "config/cluster_keys.h"
#include "config/identity_reload.h"
#include "config/replica_record.h"
#include "storage/dir_lock.h"
#include "base/physical_clock.h"
#include "base/stop_signals.h"
#include "base/version.h"
#include "logging/log_flags.h"
#include "metrics/file_sizes.h"
#include "metrics/metrics_flag.h"
#include "replica/background_repair.h"
#include "replica/config_refresh.h"
#include "replica/handler.h"
#include "replica/lmdb_store.h"
#include "replica/server.h"

namespace {

using namespace palisade;

struct Flags {
  std::string data_dir;
  replica::ServerOptions server;
  size_t map_size_bytes = size_t{8} << 30;
  replica::FeedOptions feed;  // its log id is drawn at start
  uint64_t max_clock_offset_ms = 500;
  logging::LogFlags log;
  // Sequencer verification, the CurveZMQ allow-list and the replicas: the cluster file.
  std::string cluster_file;
  // The cluster's id: the cluster file's cluster_id, or --cluster-id (hex) without one.
  std::string cluster_id;
  // Background anti-entropy over the cluster file's replicas; 0: off.
  uint64_t anti_entropy_interval_ms = 0;
  std::optional<uint64_t> gc_grace_ms;
  // Without --cluster: no sequencer checks (any fencing token is taken) and
  // plaintext links; with it, plaintext links (a file without identities).
  bool insecure = false;
  std::string curve_key_file;  // --key: CurveZMQ key pair, when the cluster file lists identities
  std::string metrics_listen;  // HOST:PORT of the metrics endpoint; empty: none
};

// This replica's CurveZMQ keys when the cluster file lists identities; nullopt
// for plaintext, which needs --insecure. False (after logging why) when they
// cannot be loaded, or plaintext is not allowed.
bool load_daemon_keys(const Flags& flags, const std::optional<ClusterConfig>& cluster,
                      std::optional<DaemonKeys>* keys) {
  if (!cluster) {
    if (flags.insecure) return true;  // --key needs --cluster
    spdlog::error("no cluster file: give --cluster FILE, so that fenced writes are checked and links are "
                  "authenticated, or --insecure to take any fencing token over plaintext links (only on a trusted "
                  "network)");
    return false;
  }
  if (Status insecure = check_insecure_flag(*cluster, flags.insecure); !insecure.is_ok()) {
    spdlog::error("{}", insecure.message());
    return false;
  }
  auto loaded = palisade::load_daemon_keys(*cluster, flags.server.listen_endpoint, flags.curve_key_file);
  if (!loaded.is_ok()) {
    spdlog::error("{}", loaded.status().message());
    return false;
  }
  *keys = std::move(loaded).value();
  return true;
}

// What this replica connects to the other daemons with: its own keys, and
// theirs from the cluster file; nullopt on plaintext links.
std::optional<Credentials> own_credentials(const std::optional<DaemonKeys>& keys, const ClusterConfig& cluster) {
  if (!keys) return std::nullopt;
  return Credentials{.identity = keys->key.identity,
                     .public_key = keys->key.keys.public_key,
                     .secret_key = keys->key.keys.secret_key,
                     .server_keys = server_keys(cluster)};
}

// With a cluster file: the thread that asks the lock group for the replica
// set while the one this replica keeps is paused, offering it to `server`.
std::unique_ptr<replica::ConfigRefresh> config_refresh(const std::optional<ClusterConfig>& cluster,
                                                       const std::optional<DaemonKeys>& keys,
                                                       replica::ReplicaServer& server) {
  if (!cluster) return nullptr;
  replica::ConfigRefreshOptions o;
  for (const LockdNode& node : cluster->lockd) o.lockd.push_back(node.endpoint);
  o.cluster_id = cluster->cluster_id;
  o.credentials = own_credentials(keys, *cluster);
  return std::make_unique<replica::ConfigRefresh>(
      std::move(o), [&server](std::string certificate) { server.offer_config(std::move(certificate)); });
}

// The background anti-entropy of --anti-entropy-interval, or none. Over
// CurveZMQ, it connects to the other replicas with this one's keys. Each run
// ends in `metrics`, which must outlive it.
std::unique_ptr<replica::BackgroundRepair> background_repair(const Flags& flags,
                                                             const std::optional<ClusterConfig>& cluster,
                                                             const std::optional<DaemonKeys>& keys,
                                                             replica::ReplicaMetrics& metrics) {
  if (flags.anti_entropy_interval_ms == 0 || !cluster) return nullptr;
  AntiEntropyOptions o;
  o.replicas = cluster->replicas;
  o.write_quorum = cluster->write_quorum;
  o.key_file = cluster->replicas_key_file();  // seals its repairs (load_auth checked it)
  o.group = cluster->group;
  if (!cluster->cluster_id.empty()) o.cluster_id = cluster_id_hex(cluster->cluster_id);
  if (flags.gc_grace_ms) o.gc_grace = std::chrono::milliseconds(*flags.gc_grace_ms);
  o.credentials = own_credentials(keys, *cluster);
  spdlog::info("anti-entropy every {} ms over {} replicas", flags.anti_entropy_interval_ms, o.replicas.size());
  return std::make_unique<replica::BackgroundRepair>(
      o, std::chrono::milliseconds(flags.anti_entropy_interval_ms),
      [&metrics](const replica::RepairRun& run) { metrics.anti_entropy_ran(run); });
}

// A replica whose cluster file names only the lock group takes the replica
// set from it: the record, or before any, the lockd nodes' own list (signed
// as version 0). Its W, its peers and whether it is a spare follow from that
// set as from a file's list; the record's certificate goes to `certificate`.
// It asks for up to 10 s; false (after logging why) when no set comes.
bool take_replica_set(const Flags& flags, const std::optional<DaemonKeys>& keys, ClusterConfig& cluster,
                      std::string* certificate) {
  using namespace std::chrono_literals;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  Result<ReplicaRecord> record = Status(Code::kUnavailable, "not asked");
  for (;;) {
    record = read_replica_record(cluster, own_credentials(keys, cluster), 1000ms);
    const bool final = record.is_ok() ? !record.value().set.replicas.empty() : record.code() != Code::kUnavailable;
    if (final || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(500ms);
  }
  if (!record.is_ok() || record.value().set.replicas.empty()) {
    spdlog::error("cluster file {} lists no [[replica]], and the lock group gave no replica set: {}",
                  flags.cluster_file,
                  record.is_ok() ? "it records none, and its nodes' files list none" : record.status().message());
    return false;
  }
  const wire::ReplicaSet& set = record.value().set;
  for (const wire::ReplicaInfo& r : set.replicas) {
    cluster.replicas.push_back(r.address);
    // Its identity, by the key the set gives: how this replica finds its peers' keys.
    for (const Identity& identity : cluster.identities) {
      if (!r.key.empty() && std::ranges::find(identity.keys, r.key) != identity.keys.end()) {
        cluster.daemon_identity[r.address] = identity.name;
      }
    }
  }
  cluster.read_quorum = static_cast<int>(set.read_quorum);
  cluster.write_quorum = static_cast<int>(set.write_quorum);
  const bool listed = std::ranges::find(cluster.replicas, flags.server.listen_endpoint) != cluster.replicas.end();
  if (!listed) cluster.spare_replicas.push_back(flags.server.listen_endpoint);
  spdlog::info("{} names only the lock group: took replica set version {} from it, {} replicas (W={} R={}){}",
               flags.cluster_file, set.version, set.replicas.size(), set.write_quorum, set.read_quorum,
               listed ? "" : ", which do not include this one");
  if (set.version > 0) *certificate = record.value().certificate;
  return true;
}

// The keys and group to verify sequencers with, from the cluster file; nullopt
// in *auth without one (--insecure). False (after logging why) when they cannot
// be loaded.
bool load_auth(const Flags& flags, const std::optional<ClusterConfig>& cluster,
               std::optional<replica::ReplicaAuth>* auth) {
  if (!cluster) return true;
  const std::string key_file = cluster->replicas_key_file();
  if (key_file.empty()) {
    spdlog::error("cluster file {} names no replica_key_file or key_file: replicas need a key for their receipts",
                  flags.cluster_file);
    return false;
  }
  if (cluster->replica_key_file.empty()) {
    spdlog::warn("{} lists no replica_key_file, so this replica reads the cluster key {}: whoever controls this "
                 "host can sign sequencers (docs/security.md)",
                 flags.cluster_file, key_file);
  }
  const std::string& group = cluster->group;
  const std::string& public_key = cluster->sequencer_public_key;
  const int n = static_cast<int>(cluster->replicas.size());
  const int write_quorum = cluster->write_quorum > 0 ? cluster->write_quorum : n / 2 + 1;
  auto key = ClusterKey::load(key_file);
  if (!key.is_ok()) {
    spdlog::error("{}", key.status().message());
    return false;
  }
  const std::vector<std::string>& spares = cluster->spare_replicas;
  const bool spare = std::find(spares.begin(), spares.end(), flags.server.listen_endpoint) != spares.end();
  *auth =
      replica::ReplicaAuth{.replica_key = key.value(), .group = group, .write_quorum = write_quorum, .spare = spare};
  if (spare) {
    spdlog::info("a spare of {}: until a replica set lists it, it takes versions only from a fill (palisade "
                 "member add|replace --replica)",
                 flags.cluster_file);
  }
  if (!public_key.empty()) {
    auto verifier = SequencerVerifier::create(group, public_key);
    if (!verifier.is_ok()) {
      spdlog::error("{}: {}", flags.cluster_file, verifier.status().message());
      return false;
    }
    (*auth)->sequencers = std::move(verifier).value();
  }
  return true;
}

// The cluster file, read once (nullopt without --cluster), and the cluster id
// requests are checked against (flags.server.cluster_id): the file's, else
// --cluster-id's. False (after logging why) when the file cannot be read.
bool load_cluster(Flags& flags, std::optional<ClusterConfig>* cluster) {
  if (flags.cluster_file.empty()) {
    flags.server.cluster_id = cluster_id_from_hex(flags.cluster_id).value_or("");
    return true;
  }
  auto loaded = load_cluster_file(flags.cluster_file);
  if (!loaded.is_ok()) {
    spdlog::error("{}", loaded.status().message());
    return false;
  }
  flags.server.cluster_id = loaded.value().cluster_id;
  *cluster = std::move(loaded).value();
  return true;
}

// `certificate`: the lock group's record, offered to the replica at start
// (empty: none; a replica keeps only a newer one than its own).
int serve(Flags flags, const std::optional<ClusterConfig>& cluster, std::optional<replica::ReplicaAuth> auth,
          const std::optional<DaemonKeys>& curve, const std::string& certificate) {
  auto dir_lock = DirLock::acquire(flags.data_dir);
  if (!dir_lock.is_ok()) {
    spdlog::error("{}", dir_lock.status().message());
    return 1;
  }
  auto store = replica::LmdbStore::open(flags.data_dir, {.map_size_bytes = flags.map_size_bytes});
  if (!store.is_ok()) {
    spdlog::error("{}", store.status().message());
    return 1;
  }
  auto keys = store.value()->key_count();
  store.value()->abort();
  if (store.value()->damaged_at_open() != 0) {
    spdlog::warn("{} stored records (keys' versions, fence floors) fail their checksum: requests on them answer "
                 "`corrupt` (docs/consistency.md)",
                 store.value()->damaged_at_open());
  }
  int stop_fd = stop_signals_fd();
  int reload_fd = reload_signal_fd();
  if (stop_fd < 0 || reload_fd < 0) {
    spdlog::error("cannot watch for SIGTERM and SIGHUP: signalfd: {}", std::strerror(errno));
    return 1;
  }
  if (auth) {
    auth->replica_id = store.value()->replica_id();
    spdlog::info("fenced writes and fences must carry a sequencer of lock group '{}'; commits under a lock need "
                 "receipts of {} replicas (this one's id: {:016x})",
                 auth->group, auth->write_quorum, auth->replica_id);
  } else {
    spdlog::warn("INSECURE (--insecure): no cluster file, so fenced writes and fences are not authenticated: any "
                 "client can write under any fencing token, and fence a lock for ever with a huge one");
  }
  SystemClock wall_clock;
  HybridClock clock(wall_clock, {.max_clock_offset_ms = flags.max_clock_offset_ms});
  // A new feed each start: a watcher that read the last one knows it is gone.
  do {
    randombytes_buf(&flags.feed.log, sizeof flags.feed.log);
  } while (flags.feed.log == 0);
  replica::ReplicaHandler handler(*store.value(), clock, std::move(auth), flags.feed);
  zmq::context_t ctx(1);
  try {
    std::unique_ptr<transport::ZapHandler> zap;
    if (curve) {
      zap = std::make_unique<transport::ZapHandler>(ctx, curve->allowed);
      flags.server.socket.curve = transport::CurveOptions{.keys = curve->key.keys, .zap = zap.get()};
      flags.server.permissions = curve->permissions;
      spdlog::info("links: CurveZMQ, serving as identity '{}'; {} keys may connect", curve->key.identity,
                   curve->allowed.size());
    } else {
      spdlog::warn("INSECURE (--insecure): plaintext links (no cluster file that lists identities): anyone who "
                   "reaches this replica can read its traffic and send it requests (docs/security.md)");
    }
    replica::ReplicaServer server(ctx, handler, clock, flags.server);
    // Checkpoints while it serves: the store's close, after the metrics are gone, forgets the observer.
    store.value()->on_checkpoint([&counted = server.metrics()](auto took) { counted.checkpointed(took); });
    metrics::export_file_sizes(server.metrics().registry(), flags.data_dir, {"data.mdb", "journal"});
    auto http = metrics::serve_metrics(flags.metrics_listen, server.metrics().registry(), server.metrics().health());
    if (!http.is_ok()) {
      spdlog::error("{}", http.status().message());
      return 1;
    }
    spdlog::info("started {}: pid {}, cluster id {}, listening on {}, data dir {}, {} keys",
                 version_line("palisade-replica"), getpid(), cluster_id_hex(flags.server.cluster_id),
                 flags.server.listen_endpoint, flags.data_dir, keys.is_ok() ? keys.value() : 0);
    auto repair = background_repair(flags, cluster, curve, server.metrics());  // stops before the server goes
    auto refresh = config_refresh(cluster, curve, server);
    if (!certificate.empty()) server.offer_config(certificate);
    handler.observe_config(
        [&repair, &refresh, &metrics = server.metrics()](const wire::ReplicaSet& set, const std::string& certificate) {
          metrics.replica_set(set);
          if (repair) repair->follow(set, certificate);
          if (refresh) refresh->set_paused(set.phase == wire::ReplicaPhase::kPaused);
        });
    auto reload = [&] {
      auto keys = reload_identities(flags.cluster_file, flags.server.listen_endpoint, flags.curve_key_file, zap.get());
      if (keys) server.set_permissions(std::move(keys->permissions));
    };
    server.run(stop_fd, reload_fd, reload);
    if (Status s = store.value()->checkpoint(); !s.is_ok()) {
      spdlog::warn("checkpoint at stop failed ({}); the journal keeps every acknowledged write for the next start",
                   s.message());
    }
    if (zap) spdlog::info("{} CurveZMQ handshakes refused (keys the cluster file does not list)", zap->rejected());
    spdlog::info("stopped cleanly after {} requests", server.requests_served());
  } catch (const zmq::error_t& e) {
    spdlog::error("cannot listen on {}: {}", flags.server.listen_endpoint, e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"palisade-replica: a storage replica of the palisade quorum store.\n"
               "Stores each key's committed version and the pending ones above it in LMDB,\n"
               "refuses writes of superseded lock holders (fence floors), and syncs every\n"
               "write before acknowledging it."};
  app.set_version_flag("--version", version_line("palisade-replica"));
  app.set_config("--config", "", "Read these settings from a TOML or INI file (flags win)");
  app.add_option("--data-dir", flags.data_dir, "Directory of this replica's LMDB files and journal (created if missing)")
      ->required();
  app.add_option("--listen", flags.server.listen_endpoint, "ZeroMQ endpoint to serve on")->capture_default_str();
  app.add_option("--max-key-bytes", flags.server.limits.max_key_bytes, "Largest key accepted")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, replica::LmdbStore::kMaxKeyBytes));
  app.add_option("--max-value-bytes", flags.server.limits.max_value_bytes, "Largest value accepted")
      ->capture_default_str()
      // A read reply carries up to five versions and must fit the 128 MiB frame cap.
      ->check(CLI::Range(size_t{1}, size_t{16} << 20));
  app.add_option("--map-size", flags.map_size_bytes, "Most the data may grow to, e.g. 8GB (LMDB map size)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--change-feed-size", flags.feed.max_bytes,
                 "Memory the change feed that watchers read may take, e.g. 64MB; past it the oldest changes are "
                 "forgotten")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(size_t{1} << 20, size_t{1} << 40));
  app.add_option("--max-clock-offset-ms", flags.max_clock_offset_ms,
                 "Refuse timestamps further ahead of local time than this")
      ->capture_default_str();
  app.add_option("--max-batch", flags.server.max_batch, "Most requests applied per synced commit (checked between messages of up to 64)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  auto* cluster = app.add_option("--cluster", flags.cluster_file,
                                 "Cluster file (TOML): check the sequencer of every fenced write and fence\n"
                                 "with its lock group's public key ('sequencer_public_key'), commit versions\n"
                                 "under a lock on W replicas' receipts ('replica_key_file'), and take\n"
                                 "connections from the identities it lists; its cluster_id, when set, is\n"
                                 "this replica's (see --cluster-id)");
  app.add_option("--cluster-id", flags.cluster_id,
                 "Instead of --cluster, with --insecure: the cluster's id (32 hex digits, the\n"
                 "cluster file's cluster_id); requests that name another id are answered\n"
                 "wrong_cluster. With --cluster, the file's cluster_id is used; with neither,\n"
                 "no id: only requests that name none are answered")
      ->check([](const std::string& hex) {
        return cluster_id_from_hex(hex) ? std::string() : "must be " + std::to_string(2 * kClusterIdBytes) + " hex digits";
      })
      ->excludes(cluster);
  const auto kUnitRequired = static_cast<CLI::AsNumberWithUnit::Options>(CLI::AsNumberWithUnit::CASE_SENSITIVE |
                                                                        CLI::AsNumberWithUnit::UNIT_REQUIRED);
  const std::map<std::string, uint64_t> ms_units{{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}};
  auto* interval = app.add_option("--anti-entropy-interval", flags.anti_entropy_interval_ms,
                                  "Run anti-entropy over the replicas this often, e.g. 10m: the cluster\n"
                                  "file's, or the replica set the lock group recorded once this replica keeps one\n"
                                  "(needs --cluster; default: never, run `palisade repair` instead)")
                       ->transform(CLI::AsNumberWithUnit(ms_units, kUnitRequired, "DURATION"))
                       ->needs(cluster);
  app.add_option("--gc-grace", flags.gc_grace_ms,
                 "With --anti-entropy-interval: drop tombstones every replica holds committed once older than this")
      ->transform(CLI::AsNumberWithUnit(ms_units, kUnitRequired, "DURATION"))
      ->needs(interval);
  app.add_flag("--insecure", flags.insecure,
               "Serve plaintext links, with --cluster on a file that lists no identities. Without\n"
               "--cluster, also take fenced writes and fences under any token, unchecked (one\n"
               "client can fence a lock for ever). Only on a trusted network; logged at start and\n"
               "shown by `palisade status`");
  app.add_option("--key", flags.curve_key_file,
                 "This replica's key file (palisade keygen), when the cluster file lists identities:\n"
                 "then every link is CurveZMQ, and keys the file does not list are refused")
      ->check(CLI::ExistingFile)
      ->needs(cluster);
  logging::add_log_flags(app, flags.log);
  metrics::add_metrics_flag(app, &flags.metrics_listen);
#ifdef PALISADE_NEGATIVE_CONTROLS
  // Only in palisade-replica-broken, the fault campaign's negative control (tests/nemesis).
  app.add_flag("--broken-ack-writes-without-storing", flags.server.broken_ack_writes_without_storing,
               "Negative control: answer clients' writes ok without storing or checking them");
#endif
  app.footer("A replica checks the sequencer of every fenced write and fence with its cluster file\n"
             "(--cluster), and takes only authenticated connections when that file lists identities\n"
             "(then --key). Without a cluster file, or on one without identities, it starts only\n"
             "with --insecure.\n"
             "Signals: SIGTERM or SIGINT stops the replica; SIGHUP reloads the identities the cluster\n"
             "file lists (docs/security.md).");
  CLI11_PARSE(app, argc, argv);

  logging::start_logging(flags.log, "palisade-replica");
  // The key first: a replica that cannot check sequencers as told must not start.
  std::optional<ClusterConfig> config;
  std::optional<DaemonKeys> keys;
  std::string certificate;
  if (!load_cluster(flags, &config) || !load_daemon_keys(flags, config, &keys)) return 1;
  if (config && config->replicas.empty() && !take_replica_set(flags, keys, *config, &certificate)) return 1;
  std::optional<replica::ReplicaAuth> auth;
  if (!load_auth(flags, config, &auth)) return 1;
  std::error_code ec;
  std::filesystem::create_directories(flags.data_dir, ec);
  if (ec) {
    spdlog::error("cannot create data dir {}: {}", flags.data_dir, ec.message());
    return 1;
  }
  return serve(std::move(flags), config, std::move(auth), keys, certificate);
}
