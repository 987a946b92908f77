// `palisade cluster up|down|status`: a local cluster on loopback whose daemons
// run in the background, in a directory that holds the cluster file, the key,
// the data, the logs, and the list of daemons (cli/daemon_records.h). `up`
// on a cluster some of whose daemons exited starts only those, on their data,
// and adopts the ones still running. `cluster add` and `remove`:
// cli/cluster_node_command.cc.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "client/replica_connection.h"
#include "cli/command.h"
#include "cli/daemon_records.h"
#include "cli/health.h"
#include "cli/local_cluster.h"
#include "transport/lockd_call.h"
#include "config/cluster_keys.h"

namespace palisade::cli {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The role `cluster status` shows for a daemon that answers as another
// cluster's (wrong_cluster): its port was taken by someone else's daemon.
constexpr const char* kOtherCluster = "another cluster's";

struct ClusterFlags {
  std::string dir;
  int lockd = 3;
  int replicas = 3;
  int base_port = 0;
  bool insecure = false;  // up: plaintext links, no keys
  bool metrics = false;  // up: --metrics-listen for every daemon started
  std::string log_format;  // up: the daemons' --log-format; empty: their default
  bool purge = false;
  std::string records_path() const { return dir + "/daemons"; }
  std::string cluster_file() const { return dir + "/cluster.toml"; }
  std::string admin_key() const { return dir + "/keys/admin.key"; }  // a secure cluster's (LocalCluster)
};

nlohmann::json json_or_null(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

// Which of --lockd, --replicas, --base-port, --insecure were given.
struct SizesGiven {
  bool lockd = false;
  bool replicas = false;
  bool base_port = false;
  bool insecure = false;
  bool any() const { return lockd || replicas || base_port || insecure; }
};

int endpoint_port(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  return colon == std::string::npos ? -1 : std::atoi(endpoint.c_str() + colon + 1);
}

// What the flags given ask for that the cluster in the directory is not: empty
// when they agree with it ("--lockd 5, but it has 3 lockd nodes").
std::string conflict(const ClusterFlags& flags, const SizesGiven& given, const ClusterConfig& config) {
  std::string out;
  auto add = [&out](const std::string& what) { out += (out.empty() ? "" : "; ") + what; };
  if (given.lockd && static_cast<size_t>(flags.lockd) != config.lockd.size()) {
    add("--lockd " + std::to_string(flags.lockd) + ", but it has " + std::to_string(config.lockd.size()) +
        " lockd nodes");
  }
  if (given.replicas && static_cast<size_t>(flags.replicas) != config.replicas.size()) {
    add("--replicas " + std::to_string(flags.replicas) + ", but it has " + std::to_string(config.replicas.size()) +
        " replicas");
  }
  if (given.insecure && !config.identities.empty()) add("--insecure, but its links are CurveZMQ");
  if (given.base_port) {
    std::vector<std::pair<std::string, std::string>> daemons;  // name, endpoint, in the file's order
    for (const LockdNode& n : config.lockd) daemons.emplace_back("lockd-" + std::to_string(n.id), n.endpoint);
    for (size_t i = 0; i < config.replicas.size(); ++i) {
      daemons.emplace_back(local_replica_name(config, config.replicas[i], i), config.replicas[i]);
    }
    // Nodes added or removed (`cluster add`, `remove`) leave the pattern too.
    for (size_t i = 0; i < daemons.size(); ++i) {
      const int port = flags.base_port + static_cast<int>(i);
      if (endpoint_port(daemons[i].second) != port) {
        add("--base-port " + std::to_string(flags.base_port) + " would put " + daemons[i].first + " on port " +
            std::to_string(port) + ", but it listens on " + daemons[i].second);
        break;
      }
    }
  }
  return out;
}

// A first `up` that failed leaves no cluster behind (its daemons died with the
// LocalCluster): a retry, with other flags too, starts afresh instead of
// finding a cluster that never ran. The logs stay, for the reason.
void forget_new_cluster(const ClusterFlags& flags) {
  std::error_code ec;
  for (const char* file : {"cluster.toml", "cluster.key", "daemons"}) fs::remove(flags.dir + "/" + file, ec);
  fs::remove_all(flags.dir + "/keys", ec);
  for (const auto& entry : fs::directory_iterator(flags.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && (name.rfind("lockd-", 0) == 0 || name.rfind("replica-", 0) == 0)) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

int up(ClusterFlags flags, const CommonOptions& common, const SizesGiven& given) {
  auto records = read_daemon_records(flags.records_path());
  if (!records.is_ok()) return report_error("cluster up", records.status());
  const auto running = alive(records.value());
  const bool existing = fs::exists(flags.cluster_file());
  const bool all_running = !running.empty() && running.size() == records.value().size();
  if (!running.empty() && !all_running && !existing) {
    std::fprintf(stderr,
                 "palisade: cluster up: %zu daemons of %s are running but its cluster file is gone; "
                 "stop them with `palisade cluster down --dir %s`\n",
                 running.size(), flags.dir.c_str(), flags.dir.c_str());
    return kExitFailure;
  }
  if (existing && given.any()) {
    auto config = load_cluster_file(flags.cluster_file());
    if (!config.is_ok()) return report_cluster_error("cluster up", config.status());
    if (std::string differs = conflict(flags, given, config.value()); !differs.empty()) {
      std::fprintf(stderr,
                   "palisade: cluster up: %s already holds a cluster (%s); start it as it is (without --lockd, "
                   "--replicas, --base-port), or remove it first with `palisade cluster down --purge --dir %s`\n",
                   flags.dir.c_str(), differs.c_str(), flags.dir.c_str());
      return kExitUsage;
    }
  }

  if (all_running) {
    if (common.json()) {  // `already_up` says it
      nlohmann::json out{{"dir", flags.dir}, {"cluster_file", flags.cluster_file()}, {"reused", true},
                         {"already_up", true}, {"started", nlohmann::json::array()}};
      for (const DaemonRecord& r : running) {
        out["daemons"].push_back({{"name", r.name},
                                  {"pid", r.pid},
                                  {"endpoint", r.endpoint},
                                  {"metrics", json_or_null(metrics_address_of(r.pid))},
                                  {"started", false}});
      }
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      std::fprintf(stderr, "palisade: the cluster in %s is already up%s\n", flags.dir.c_str(),
                   flags.metrics || !flags.log_format.empty()
                       ? " (--metrics and --log-format apply to the daemons `up` starts: `cluster down` first)"
                       : "");
      std::printf("%s\n", flags.cluster_file().c_str());
    }
    return kExitOk;
  }

  LocalClusterOptions options;
  options.dir = flags.dir;
  options.lockd = flags.lockd;
  options.replicas = flags.replicas;
  options.base_port = flags.base_port;
  options.reuse_cluster_file = true;
  options.secure = !flags.insecure;
  options.metrics = flags.metrics;
  options.log_format = flags.log_format;
  options.detached = true;
  options.start_timeout = 30s;
  // Replicas that drifted (one was down) converge without `palisade repair`.
  options.replica_args = {"--anti-entropy-interval", "1m"};
  for (const DaemonRecord& r : running) options.adopt.push_back({r.name, r.pid, r.start_time, r.endpoint});
  auto cluster = LocalCluster::start(options);
  if (!cluster.is_ok()) {
    if (!existing) forget_new_cluster(flags);
    return report_error("cluster up", cluster.status());
  }
  LocalCluster& c = *cluster.value();

  struct Up {
    DaemonRecord record;
    bool started = false;  // by this run; else it was running
    bool paused = false;
    std::string metrics;  // HOST:PORT of /metrics; empty: none
  };
  std::vector<Up> daemons;
  std::vector<DaemonRecord> to_write;
  std::string started_names;
  auto record = [&](Daemon& d) {
    Up u{{d.name(), d.pid(), process_start_time(d.pid()).value_or(0), d.endpoint()},
         !d.adopted(),
         d.paused(),
         d.metrics_address()};
    if (u.started) started_names += (started_names.empty() ? "" : ", ") + d.name();
    to_write.push_back(u.record);
    daemons.push_back(std::move(u));
  };
  for (uint32_t id : c.lockd_ids()) record(c.lockd(id));
  for (size_t i = 0; i < c.replica_count(); ++i) record(c.replica(i));
  if (Status s = write_daemon_records(flags.records_path(), to_write); !s.is_ok()) {
    return report_error("cluster up", s);  // the cluster object kills the daemons it started
  }
  const auto master = c.master_id();
  c.release();
  const size_t adopted = running.size();

  if (common.json()) {
    nlohmann::json out{{"dir", c.options().dir}, {"cluster_file", c.cluster_file()}, {"reused", existing},
                       {"already_up", false}};
    out["master"] = master ? nlohmann::json("lockd-" + std::to_string(*master)) : nlohmann::json(nullptr);
    out["started"] = nlohmann::json::array();
    for (const Up& u : daemons) {
      out["daemons"].push_back({{"name", u.record.name},
                                {"pid", u.record.pid},
                                {"endpoint", u.record.endpoint},
                                {"metrics", json_or_null(u.metrics)},
                                {"started", u.started},
                                {"paused", u.paused}});
      if (u.started) out["started"].push_back(u.record.name);
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  if (adopted > 0) {
    std::printf("started %s of the cluster in %s (%zu of %zu daemons were running)\n", started_names.c_str(),
                c.options().dir.c_str(), adopted, daemons.size());
  } else {
    std::printf("%s a cluster in %s: %zu lockd, %zu replicas\n", existing ? "started again" : "started",
                c.options().dir.c_str(), c.lockd_ids().size(), c.replica_count());
  }
  for (const Up& u : daemons) {
    std::printf("  %-10s pid %-7d %s%s%s\n", u.record.name.c_str(), static_cast<int>(u.record.pid),
                u.record.endpoint.c_str(), u.metrics.empty() ? "" : ("  metrics http://" + u.metrics).c_str(),
                u.started  ? (adopted > 0 ? "  started" : "")
                : u.paused ? "  was running, PAUSED"
                           : "  was running");
  }
  if (master) std::printf("master: lockd-%u\n", *master);
  std::printf("logs: %s/*.log; stop it with: palisade cluster down%s\n", c.options().dir.c_str(),
              flags.dir == default_cluster_dir() ? "" : (" --dir " + flags.dir).c_str());
  std::printf("%s\n", c.cluster_file().c_str());
  return kExitOk;
}

int down(const ClusterFlags& flags, const CommonOptions& common) {
  auto records = read_daemon_records(flags.records_path());
  if (!records.is_ok()) return report_error("cluster down", records.status());
  const auto running = alive(records.value());
  const size_t killed = stop_daemons(running, 10s);
  std::error_code ec;
  fs::remove(flags.records_path(), ec);
  bool purged = false;
  if (flags.purge && fs::exists(flags.cluster_file())) {  // only a directory that holds a cluster
    fs::remove_all(flags.dir, ec);
    if (ec) return report_error("cluster down", Status(Code::kStorageError, "cannot remove " + flags.dir + ": " + ec.message()));
    purged = true;
  }
  if (common.json()) {
    nlohmann::json out{{"dir", flags.dir}, {"stopped", running.size()}, {"killed", killed}, {"purged", purged}};
    std::printf("%s\n", out.dump(2).c_str());
  } else if (running.empty()) {
    std::printf("no daemons of %s were running%s\n", flags.dir.c_str(), purged ? "; removed it" : "");
  } else {
    std::printf("stopped %zu daemons of %s%s%s\n", running.size(), flags.dir.c_str(),
                killed > 0 ? (" (" + std::to_string(killed) + " needed SIGKILL)").c_str() : "",
                purged ? "; removed it" : "");
  }
  return kExitOk;
}

int status(const ClusterFlags& flags, const CommonOptions& common) {
  auto records = read_daemon_records(flags.records_path());
  if (!records.is_ok()) return report_error("cluster status", records.status());
  if (records.value().empty()) {
    if (common.json()) {
      std::printf("%s\n", nlohmann::json{{"dir", flags.dir}, {"daemons", nlohmann::json::array()}}.dump(2).c_str());
    } else {
      std::printf("no cluster was started in %s\n", flags.dir.c_str());
    }
    return kExitUnavailable;
  }
  zmq::context_t ctx(1);
  nlohmann::json daemons = nlohmann::json::array();
  HealthCounts counts;
  bool any_metrics = false;
  std::string cluster_id;  // the daemons must answer as this cluster's
  std::optional<Credentials> credentials;
  if (auto config = load_cluster_file(flags.cluster_file()); config.is_ok()) {
    counts.read_quorum = config.value().read_quorum;
    counts.write_quorum = config.value().write_quorum;
    cluster_id = config.value().cluster_id;
    const std::string key = config.value().identities.empty() ? "" : flags.admin_key();
    if (auto loaded = load_client_credentials(config.value(), key); loaded.is_ok()) {
      credentials = std::move(loaded).value();
    }
  }
  for (const DaemonRecord& r : records.value()) {
    std::string state = !is_alive(r) ? "exited" : is_paused(r) ? "paused" : "running";
    std::string role;
    std::optional<uint64_t> epoch;
    if (state == "running") {
      if (r.name.starts_with("lockd-")) {
        auto reply =
            transport::call_lockd_endpoint(ctx, r.endpoint, wire::LockStatusRequest{}, 500ms, cluster_id, credentials);
        role = !reply                             ? "not answering"
               : reply->status.code() == Code::kWrongCluster ? kOtherCluster
               : reply->status.is_ok()           ? reply->role
                                                 : "not answering";
        if (reply && reply->status.is_ok()) epoch = reply->epoch;
      } else {
        client::ReplicaConnection conn(ctx, r.endpoint, credentials);
        auto reply = conn.call({.id = 0, .body = wire::PingRequest{}, .cluster = cluster_id}, 500);
        role = !reply.is_ok()                                          ? "not answering"
               : reply.value().status.code() == Code::kWrongCluster ? kOtherCluster
               : reply.value().status.is_ok()                       ? "answering"
                                                                    : "not answering";
      }
    }
    const bool answering = state == "running" && role != "not answering" && role != kOtherCluster;
    if (r.name.starts_with("lockd-")) {
      ++counts.lockd;
      counts.lockd_answering += answering ? 1 : 0;
      counts.master = counts.master || role == "master";
    } else {
      ++counts.replicas;
      counts.replicas_answering += answering ? 1 : 0;
    }
    const std::string metrics = state == "exited" ? "" : metrics_address_of(r.pid);
    any_metrics = any_metrics || !metrics.empty();
    nlohmann::json d{{"name", r.name},         {"pid", r.pid}, {"state", state},
                     {"endpoint", r.endpoint}, {"role", role}, {"metrics", json_or_null(metrics)}};
    if (epoch) {
      const EpochParts p = epoch_parts(*epoch);
      d.update({{"epoch", *epoch}, {"epoch_round", p.round}, {"epoch_node", p.node}});
    }
    daemons.push_back(d);
  }
  const Health health = health_of(counts);
  if (common.json()) {
    std::printf("%s\n", nlohmann::json{{"dir", flags.dir}, {"cluster_file", flags.cluster_file()},
                                       {"healthy", health == Health::kHealthy}, {"state", health_name(health)},
                                       {"daemons", daemons}}
                            .dump(2)
                            .c_str());
  } else {
    std::printf("%s (%s)\n", flags.cluster_file().c_str(), health_name(health));
    // The METRICS column only when a daemon serves them (cluster up --metrics).
    const int metrics_width = any_metrics ? 22 : 0;
    std::printf("  %-10s %-8s %-8s %-24s %-*s%s\n", "NAME", "PID", "STATE", "ENDPOINT", metrics_width,
                any_metrics ? "METRICS" : "", "ROLE");
    for (const auto& d : daemons) {
      std::string role = d["role"].get<std::string>();
      if (d.contains("epoch")) role += ", epoch " + format_epoch(d["epoch"].get<uint64_t>());
      const std::string metrics = d["metrics"].is_null() ? (any_metrics ? "-" : "") : d["metrics"].get<std::string>();
      std::printf("  %-10s %-8d %-8s %-24s %-*s%s\n", d["name"].get<std::string>().c_str(), d["pid"].get<int>(),
                  d["state"].get<std::string>().c_str(), d["endpoint"].get<std::string>().c_str(), metrics_width,
                  metrics.c_str(), role.c_str());
    }
  }
  return health == Health::kUnavailable ? kExitUnavailable : kExitOk;
}

}  // namespace

void add_cluster_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto* cluster = app.add_subcommand("cluster", "Start, stop, inspect and resize a local cluster on this machine");
  cluster->require_subcommand(1);
  auto flags = std::make_shared<ClusterFlags>();
  flags->dir = default_cluster_dir();
  auto add_dir = [&](CLI::App* sub) {
    sub->add_option("--dir", flags->dir, "The cluster's directory: cluster file, key, data and logs")
        ->capture_default_str();
  };

  auto* up_cmd = cluster->add_subcommand(
      "up",
      "Start lockd nodes and replicas in the background (of a cluster already there, those not running); "
      "print the cluster file's path last");
  add_dir(up_cmd);
  auto* lockd = up_cmd->add_option("--lockd", flags->lockd, "Lock group nodes (3 or 5 tolerate 1 or 2 failures)")
                    ->check(CLI::Range(1, 7))
                    ->capture_default_str();
  auto* replicas = up_cmd->add_option("--replicas", flags->replicas, "Store replicas")
                       ->check(CLI::Range(1, 15))
                       ->capture_default_str();
  auto* base_port = up_cmd->add_option("--base-port", flags->base_port,
                                       "First port: lockd nodes on P, P+1, ..., replicas on the ports after them "
                                       "(default: free ports)")
                        ->check(CLI::Range(1024, 65535));
  up_cmd->add_flag("--insecure", flags->insecure,
                   "Plaintext links and no keys: anything that reaches the ports can talk to the daemons "
                   "(they log it). Default: CurveZMQ, with a key file per daemon and keys/admin.key for "
                   "this command line");
  up_cmd->add_flag("--metrics", flags->metrics,
                   "Every daemon started serves /metrics, /healthz and /readyz (--metrics-listen) on 127.0.0.1: "
                   "with --base-port P, on the ports after the daemons' (P+N, ... for N daemons, lockd nodes "
                   "first), else on free ports; `cluster status` shows them");
  up_cmd->add_option("--log-format", flags->log_format, "The daemons' log format (--log-format): text or json")
      ->check(CLI::IsMember({"text", "json"}));
  up_cmd->callback([flags, &common, &exit_code, lockd, replicas, base_port] {
    exit_code = up(*flags, common,
                   {.lockd = lockd->count() > 0,
                    .replicas = replicas->count() > 0,
                    .base_port = base_port->count() > 0,
                    .insecure = flags->insecure});
  });

  auto* down_cmd = cluster->add_subcommand("down", "Stop exactly the daemons `cluster up` started (SIGTERM)");
  add_dir(down_cmd);
  down_cmd->add_flag("--purge", flags->purge, "Also remove the directory: data, logs, key and cluster file");
  down_cmd->callback([flags, &common, &exit_code] { exit_code = down(*flags, common); });

  auto* status_cmd = cluster->add_subcommand("status", "Show the local cluster's daemons: pid, state, role");
  add_dir(status_cmd);
  status_cmd->callback([flags, &common, &exit_code] { exit_code = status(*flags, common); });

  add_cluster_node_commands(*cluster, common, exit_code);
  add_cluster_replace_command(*cluster, common, exit_code);
}

}  // namespace palisade::cli
