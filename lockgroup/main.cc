// palisade-lockd: one node of the palisade lock group. Reads the cluster file
// and the cluster key, takes the data directory, and wires LMDB, the lock
// service and ZeroMQ together.
#include <algorithm>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "auth/sequencer_signer.h"
#include "config/cluster_config.h"
#include "config/cluster_keys.h"
#include "config/identity_reload.h"
#include "storage/dir_lock.h"
#include "wire/hash.h"
#include "base/stop_signals.h"
#include "base/version.h"
#include "logging/log_flags.h"
#include "metrics/file_sizes.h"
#include "metrics/metrics_flag.h"
#include "lockgroup/lmdb_paxos_storage.h"
#include "lockgroup/lockd_server.h"

namespace {

using namespace palisade;

struct Flags {
  uint32_t id = 0;
  std::string cluster_file;
  std::string key_file;  // CurveZMQ key pair (palisade keygen); needed when the cluster file lists identities
  std::string data_dir;
  size_t map_size_bytes = size_t{1} << 30;
  size_t snapshot_every = 10000;
  logging::LogFlags log;
  bool insecure = false;  // serve plaintext links, on a cluster file that lists no identities
  bool join = false;  // start outside the lock group: learn its members from it
  std::string metrics_listen;  // HOST:PORT of the metrics endpoint; empty: none
};

// The cluster file's lock group nodes, as the server takes them.
lockgroup::LockNodes lock_nodes(const ClusterConfig& cluster) {
  lockgroup::LockNodes nodes;
  nodes.keys = server_keys(cluster);
  for (const LockdNode& n : cluster.lockd) {
    nodes.endpoints[n.id] = n.endpoint;
    if (auto identity = cluster.daemon_identity.find(n.endpoint); identity != cluster.daemon_identity.end()) {
      nodes.identities[n.id] = identity->second;
    }
  }
  return nodes;
}

std::string listed(const lockgroup::Members& members) {
  std::string out;
  for (lockgroup::NodeId id : members) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out.empty() ? "none" : out;
}

Result<lockgroup::LockdServerOptions> server_options(const Flags& flags, const ClusterConfig& cluster) {
  const LockdNode* self = cluster.lockd_node(flags.id);
  if (self == nullptr) {
    return Status(Code::kBadRequest, "node " + std::to_string(flags.id) + " is not a lockd node of " + cluster.path);
  }
  if (cluster.key_file.empty()) {
    return Status(Code::kBadRequest, cluster.path + " names no key_file: lockd signs sequencers with the cluster key");
  }
  auto key = ClusterKey::load(cluster.key_file);
  if (!key.is_ok()) return key.status();
  const std::string public_key = SequencerSigner(key.value(), cluster.group).public_key();
  if (!cluster.sequencer_public_key.empty() && cluster.sequencer_public_key != public_key) {
    return Status(Code::kBadRequest, cluster.path + ": sequencer_public_key " + cluster.sequencer_public_key +
                                         " is not the key of group '" + cluster.group + "' under " + cluster.key_file +
                                         " (" + public_key + "): replicas would refuse every sequencer");
  }
  spdlog::info(
      "sequencers signed with Ed25519, public key {}{}", public_key,
      cluster.sequencer_public_key.empty() ? " (the cluster file does not list it as sequencer_public_key)" : "");
  lockgroup::LockdServerOptions o;
  o.listen_endpoint = self->endpoint;
  o.driver.cluster_id = cluster.cluster_id;
  lockgroup::LockServiceOptions& s = o.driver.service;
  s.paxos.self = flags.id;
  // A node that joins knows no members: it learns them from the group.
  if (!flags.join) {
    for (const LockdNode& n : cluster.lockd) s.paxos.members.push_back(n.id);
  }
  std::sort(s.paxos.members.begin(), s.paxos.members.end());
  lockgroup::LockNodes nodes = lock_nodes(cluster);
  s.endpoints = std::move(nodes.endpoints);
  o.peer_keys = std::move(nodes.keys);
  o.driver.peer_identities = std::move(nodes.identities);
  s.paxos.group = hash64(cluster.group);
  s.paxos.master_lease_ms = cluster.timing.master_lease_ms;
  s.paxos.heartbeat_ms = cluster.timing.heartbeat_ms;
  s.paxos.election_timeout_ms = cluster.timing.election_timeout_ms;
  s.paxos.max_drift_ppm = cluster.timing.max_clock_drift_ppm;
  std::random_device random;
  s.paxos.seed = (uint64_t{random()} << 32) | random();
  s.seed = (uint64_t{random()} << 32) | random();
  s.group = cluster.group;
  s.key = key.value();
  s.session_lease_ms = cluster.timing.session_lease_ms;
  s.file_replicas = file_replica_set(cluster);
  s.snapshot_every = flags.snapshot_every;
  return o;
}

int serve(const Flags& flags) {
  auto cluster = load_cluster_file(flags.cluster_file);
  if (!cluster.is_ok()) {
    spdlog::error("{}", cluster.status().message());
    return 1;
  }
  auto options = server_options(flags, cluster.value());
  if (!options.is_ok()) {
    spdlog::error("{}", options.status().message());
    return 1;
  }
  if (Status s = check_insecure_flag(cluster.value(), flags.insecure); !s.is_ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  auto keys = load_daemon_keys(cluster.value(), options.value().listen_endpoint, flags.key_file);
  if (!keys.is_ok()) {
    spdlog::error("{}", keys.status().message());
    return 1;
  }
  auto dir_lock = DirLock::acquire(flags.data_dir);
  if (!dir_lock.is_ok()) {
    spdlog::error("{}", dir_lock.status().message());
    return 1;
  }
  auto storage = lockgroup::LmdbPaxosStorage::open(flags.data_dir, {.map_size_bytes = flags.map_size_bytes});
  if (!storage.is_ok()) {
    spdlog::error("{}", storage.status().message());
    return 1;
  }
  int stop_fd = stop_signals_fd();
  int reload_fd = reload_signal_fd();
  if (stop_fd < 0 || reload_fd < 0) {
    spdlog::error("cannot watch for SIGTERM and SIGHUP: signalfd: {}", std::strerror(errno));
    return 1;
  }
  zmq::context_t ctx(1);
  try {
    std::unique_ptr<transport::ZapHandler> zap;
    if (keys.value()) {
      zap = std::make_unique<transport::ZapHandler>(ctx, keys.value()->allowed);
      options.value().socket.curve = transport::CurveOptions{.keys = keys.value()->key.keys, .zap = zap.get()};
      options.value().driver.permissions = keys.value()->permissions;
      spdlog::info("links: CurveZMQ, serving as identity '{}'; {} keys may connect", keys.value()->key.identity,
                   keys.value()->allowed.size());
    } else {
      spdlog::warn("INSECURE (--insecure): plaintext links, because {} lists no identities: anyone who reaches "
                   "this node can read its traffic and send it requests and peer messages (docs/security.md)",
                   cluster.value().path);
    }
    auto server = lockgroup::LockdServer::create(ctx, *storage.value(), options.value());
    if (!server.is_ok()) {
      spdlog::error("cannot read the acceptor state: {}", server.status().message());
      return 1;
    }
    lockgroup::LockdMetrics& counted = server.value()->metrics();
    // Checkpoints while it serves: the store's close, after the metrics are gone, forgets the observer.
    storage.value()->on_checkpoint([&counted](auto took) { counted.checkpointed(took); });
    metrics::export_file_sizes(counted.registry(), flags.data_dir, {"data.mdb", "journal"});
    auto http = metrics::serve_metrics(flags.metrics_listen, counted.registry(), counted.health());
    if (!http.is_ok()) {
      spdlog::error("{}", http.status().message());
      return 1;
    }
    const auto& service = server.value()->service();
    spdlog::info("started {}: node {} of group '{}', cluster id {}, pid {}, listening on {}, data dir {}, applied "
                 "through slot {}",
                 version_line("palisade-lockd"), flags.id, cluster.value().group,
                 cluster_id_hex(cluster.value().cluster_id), getpid(), options.value().listen_endpoint, flags.data_dir,
                 service.node().applied_through());
    const lockgroup::Members& first = service.node().first_members();
    if (first != options.value().driver.service.paxos.members) {
      spdlog::info("first members {}, as this node's data directory has kept them since its first start: the cluster "
                   "file's [[lockd]] list and --join no longer decide them; members change only through `palisade "
                   "member`",
                   listed(first));
    }
    // The identities (over CURVE) and the lock group's nodes: a node added
    // to the cluster file is reached without a restart.
    auto reload = [&] {
      auto file = load_cluster_file(flags.cluster_file);
      if (!file.is_ok()) {
        spdlog::error("reload (SIGHUP) of {} failed: {}; the identities stay as they were, and so do the lock "
                      "group's nodes",
                      flags.cluster_file, file.status().message());
        return;
      }
      // Its entry gives a member's identity and key: without it, the member
      // could no longer connect, and the group would lose its vote.
      lockgroup::Members unlisted;
      for (lockgroup::NodeId id : service.node().members()) {
        if (file.value().lockd_node(id) == nullptr) unlisted.push_back(id);
      }
      if (!unlisted.empty()) {
        spdlog::error("reload (SIGHUP) of {} refused: it no longer lists lock group member(s) {}; take a node out "
                      "of the members (`palisade member remove`) before its [[lockd]] entry; nothing changed",
                      flags.cluster_file, listed(unlisted));
        return;
      }
      if (zap) {
        auto reloaded =
            reload_identities(flags.cluster_file, options.value().listen_endpoint, flags.key_file, zap.get());
        if (!reloaded) return;  // it said why; nothing changes
        server.value()->set_permissions(std::move(reloaded->permissions));
      }
      server.value()->set_lock_nodes(lock_nodes(file.value()));
      spdlog::info("reloaded the lock group's nodes from {} (SIGHUP): {} listed", flags.cluster_file,
                   file.value().lockd.size());
    };
    Status stopped = server.value()->run(stop_fd, reload_fd, reload);
    spdlog::info("{} forged peer messages dropped, {} peer messages refused, {} client requests refused",
                 server.value()->forged_peer_messages(), server.value()->refused_peer_messages(),
                 server.value()->refused_requests());
    if (zap) spdlog::info("{} CurveZMQ handshakes refused (keys the cluster file does not list)", zap->rejected());
    if (!stopped.is_ok()) {
      spdlog::error("stopping: {}", stopped.to_string());
      return 1;
    }
    spdlog::info("stopped cleanly");
  } catch (const zmq::error_t& e) {
    spdlog::error("cannot listen on {}: {}", options.value().listen_endpoint, e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"palisade-lockd: a node of the palisade lock group.\n"
               "Replicates the lock table with multi-Paxos among the lockd nodes of the\n"
               "cluster file, grants locks as leases with fencing tokens and signed\n"
               "sequencers, and syncs its acceptor state before acknowledging it."};
  app.set_version_flag("--version", version_line("palisade-lockd"));
  app.set_config("--config", "", "Read these settings from a TOML or INI file (flags win)");
  app.add_option("--id", flags.id, "This node's id in the cluster file's [[lockd]] list")
      ->required()
      ->check(CLI::Range(1, 255));
  app.add_option("--cluster", flags.cluster_file, "The cluster file (TOML; config/cluster_config.h describes it). Its\n"
                 "cluster_id, when set, is this node's: client requests that name another\n"
                 "cluster id are answered wrong_cluster")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--data-dir", flags.data_dir, "Directory of this node's LMDB files (created if missing)")
      ->required();
  app.add_option("--key", flags.key_file,
                 "This node's key file (palisade keygen), when the cluster file lists identities:\n"
                 "then every link is CurveZMQ, and keys the file does not list are refused")
      ->check(CLI::ExistingFile);
  app.add_flag("--insecure", flags.insecure,
               "Serve plaintext links, on a cluster file that lists no identities: anyone who reaches\n"
               "the node can read its traffic and send it requests. Only on a trusted network; logged\n"
               "at start. Without it, such a cluster file is refused");
  app.add_flag("--join", flags.join,
               "Start outside the lock group, as a node that joins a running group does: it takes\n"
               "part once `palisade member add` (or replace) makes it a member. Counts at the first\n"
               "start on an empty data directory only: the directory keeps the first members");
  app.add_option("--map-size", flags.map_size_bytes, "Most the acceptor state may grow to, e.g. 1GB")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--snapshot-every", flags.snapshot_every, "Log slots between snapshots of the lock table")
      ->capture_default_str()
      ->check(CLI::Range(size_t{10}, size_t{10'000'000}));
  logging::add_log_flags(app, flags.log);
  metrics::add_metrics_flag(app, &flags.metrics_listen);
  app.footer("Signals: SIGTERM or SIGINT stops the node (a master hands over first); SIGHUP reloads\n"
             "the cluster file's identities (docs/security.md) and its [[lockd]] nodes' addresses.");
  CLI11_PARSE(app, argc, argv);

  logging::start_logging(flags.log, "palisade-lockd", flags.id);
  std::error_code ec;
  std::filesystem::create_directories(flags.data_dir, ec);
  if (ec) {
    spdlog::error("cannot create data dir {}: {}", flags.data_dir, ec.message());
    return 1;
  }
  return serve(flags);
}
