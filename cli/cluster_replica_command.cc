// `palisade cluster replace replica-N`, `cluster add replica` and `cluster
// remove replica-N`: the replica set of a running local cluster changed
// while the cluster serves, as docs/operations.md tells an operator to do by
// hand. A new replica gets the next unused name, a free port, its own data
// directory and key; it goes into the cluster file as a spare (written aside,
// then renamed; the daemons read it again on SIGHUP) and starts; `member
// replace|add --replica` (cli/replica_set_change.h) moves the set to it. A
// replica that leaves (`member replace|remove --replica`) stops, and the file
// lists the set as it is then.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/cluster_node.h"
#include "cli/command.h"
#include "cli/daemon_records.h"
#include "cli/files.h"
#include "cli/local_cluster.h"
#include "cli/local_cluster_file.h"
#include "cli/process.h"
#include "cli/replica_record.h"
#include "cli/replica_set_change.h"

namespace palisade::cli {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::string_view kReplace = "cluster replace";

std::string_view command_of(ReplicaChangeKind kind) {
  switch (kind) {
    case ReplicaChangeKind::kReplace:
      return kReplace;
    case ReplicaChangeKind::kAdd:
      return "cluster add";
    case ReplicaChangeKind::kRemove:
      return "cluster remove";
  }
  return kReplace;
}

// The replica named `name` in the cluster file (local_replica_name): its endpoint.
std::optional<std::string> endpoint_named(const ClusterConfig& config, const std::string& name) {
  for (size_t i = 0; i < config.replicas.size(); ++i) {
    if (local_replica_name(config, config.replicas[i], i) == name) return config.replicas[i];
  }
  return std::nullopt;
}

std::string replica_names(const ClusterConfig& config) {
  std::string out;
  for (size_t i = 0; i < config.replicas.size(); ++i) {
    out += (out.empty() ? "" : ", ") + local_replica_name(config, config.replicas[i], i);
  }
  return out;
}

// Writes `config` as the cluster file and has the daemons `running` read it again.
Status rewrite(std::string_view what, const NodeFlags& flags, const ClusterConfig& config,
               const std::vector<DaemonRecord>& running) {
  if (Status s = replace_file(flags.cluster_file(), cluster_file_text(config), 0644); !s.is_ok()) return s;
  warn_late(what, reload_daemons(running, kReloadTimeout));
  return Status::ok();
}

// The new replica in the cluster file, as a spare, with its key.
struct Joining {
  std::string name;
  std::string endpoint;
  ClusterConfig config;  // the file's, with it
};

Result<Joining> write_joining(const NodeFlags& flags, ClusterConfig config) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(flags.dir, ec)) names.push_back(entry.path().filename().string());
  const std::string name = next_replica_name(config, names);
  const auto endpoint = unused_endpoint(config, free_endpoints(4));
  if (!endpoint) return Status(Code::kUnavailable, "found no free port on 127.0.0.1");
  auto identity = write_daemon_key(flags.dir, name, "replica");
  if (!identity.is_ok()) return identity.status();
  add_spare_replica(config, *endpoint, identity.value());
  if (Status s = replace_file(flags.cluster_file(), cluster_file_text(config), 0644); !s.is_ok()) {
    fs::remove(flags.dir + "/keys/" + name + ".key", ec);
    return s;
  }
  return Joining{name, *endpoint, std::move(config)};
}

// Starts the new replica as `cluster up` starts replicas, with the flags
// `like` (a running replica) has, and records it in DIR/daemons.
Result<DaemonRecord> start_joining(const NodeFlags& flags, const Joining& joining,
                                   const std::vector<DaemonRecord>& records, const DaemonRecord& like) {
  LocalClusterOptions options;
  options.dir = flags.dir;
  options.metrics = !metrics_address_of(like.pid).empty();
  options.log_format = flag_of(like.pid, "--log-format");
  if (std::string level = flag_of(like.pid, "--log-level"); !level.empty()) options.log_level = level;
  if (std::string every = flag_of(like.pid, "--anti-entropy-interval"); !every.empty()) {
    options.replica_args = {"--anti-entropy-interval", every};
  }
  options.detached = true;
  auto cluster = LocalCluster::open(options);  // kills what it started unless released
  if (!cluster.is_ok()) return cluster.status();
  Daemon* daemon = cluster.value()->daemon(joining.name);
  if (daemon == nullptr) return Status(Code::kInternal, joining.name + " is not in " + flags.cluster_file());
  daemon->start(true);
  if (Status s = daemon->wait_ready(30s); !s.is_ok()) return s;
  const DaemonRecord record{joining.name, daemon->pid(), process_start_time(daemon->pid()).value_or(0),
                            joining.endpoint};
  std::vector<DaemonRecord> with = records;
  with.push_back(record);
  if (Status s = write_daemon_records(flags.records_path(), with); !s.is_ok()) return s;
  cluster.value()->release();
  return record;
}

// Stops the daemon `name` of `records` (SIGTERM, SIGKILL after 10 s); the others.
std::vector<DaemonRecord> stop_named(const std::vector<DaemonRecord>& records, const std::string& name) {
  std::vector<DaemonRecord> others;
  for (const DaemonRecord& d : records) {
    if (d.name == name) {
      stop_daemons({d}, 10s);
    } else {
      others.push_back(d);
    }
  }
  return others;
}

// Takes the new replica out again after a replacement that did not happen:
// stopped, out of DIR/daemons and the cluster file, its key and data gone.
void undo_joining(std::string_view what, const NodeFlags& flags, const Joining& joining,
                  const std::vector<DaemonRecord>& records, const std::vector<DaemonRecord>& running) {
  (void)write_daemon_records(flags.records_path(), stop_named(records, joining.name));
  ClusterConfig config = joining.config;
  remove_replica(config, joining.endpoint);
  (void)rewrite(what, flags, config, running);
  std::error_code ec;
  fs::remove(flags.dir + "/keys/" + joining.name + ".key", ec);
  fs::remove_all(flags.dir + "/" + joining.name, ec);
}

// What changed: `joining` (none for a removal) and `leaving` (none for an addition).
int print_changed(ReplicaChangeKind kind, const NodeFlags& flags, const std::optional<Joining>& joining,
                  const std::optional<std::string>& leaving, const ChangeReport& r, const CommonOptions& common) {
  const std::string data_dir = flags.dir + "/" + flags.name;
  if (common.json()) {
    nlohmann::json out{{"dir", flags.dir},
                       {"cluster_file", flags.cluster_file()},
                       {"replica_set_version", r.record.set.version},
                       {"write_quorum", r.record.set.write_quorum},
                       {"read_quorum", r.record.set.read_quorum},
                       {"took_ms", r.took.count()},
                       {"paused_ms", r.paused_for.count()},
                       {"bytes_moved", r.bytes_moved()}};
    if (leaving) {  // the replica that left
      const std::string left = kind == ReplicaChangeKind::kRemove ? "removed" : "replaced";
      out[left] = flags.name;
      out[left + "_endpoint"] = *leaving;
      out["purged"] = flags.purge;
    }
    if (joining) {
      out["name"] = joining->name;
      out["endpoint"] = joining->endpoint;
      out["log"] = flags.dir + "/" + joining->name + ".log";
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  const std::string what = kind == ReplicaChangeKind::kAdd ? "added " + joining->name + " (" + joining->endpoint + ")"
                           : kind == ReplicaChangeKind::kRemove ? "removed " + flags.name + " (" + *leaving + ")"
                                                                : "replaced " + flags.name + " (" + *leaving + ") by " +
                                                                      joining->name + " (" + joining->endpoint + ")";
  std::printf("%s in %lld ms (writes paused %lld ms), %llu bytes moved\n", what.c_str(),
              static_cast<long long>(r.took.count()), static_cast<long long>(r.paused_for.count()),
              static_cast<unsigned long long>(r.bytes_moved()));
  std::printf("replica set version %llu: %zu replicas, W=%u R=%u\n",
              static_cast<unsigned long long>(r.record.set.version), r.record.set.replicas.size(),
              r.record.set.write_quorum, r.record.set.read_quorum);
  if (leaving) {
    std::printf("stopped %s and took it out of %s\n", flags.name.c_str(), flags.cluster_file().c_str());
    std::printf("%s its data %s and log %s.log%s\n", flags.purge ? "removed" : "kept", data_dir.c_str(),
                data_dir.c_str(), flags.purge ? "" : " (--purge removes them)");
  }
  return kExitOk;
}

}  // namespace

int change_local_replicas(ReplicaChangeKind kind, const NodeFlags& flags, const CommonOptions& common) {
  const std::string_view kWhat = command_of(kind);
  int exit_code = kExitOk;
  auto found = find_cluster(flags, common, kWhat, exit_code);
  if (!found) return exit_code;
  const ClusterConfig& config = found->access.config;
  if (config.identities.empty()) {
    return report_failure(kWhat,
                          "the cluster in " + flags.dir +
                              " was started --insecure: it names its replicas by their place in the cluster file, "
                              "which a change of the set alters; change its replicas by hand (docs/operations.md)",
                          kExitUsage);
  }
  std::optional<std::string> leaving;
  if (kind != ReplicaChangeKind::kAdd) {
    leaving = endpoint_named(config, flags.name);
    if (!leaving) {
      return report_failure(kWhat,
                            "'" + flags.name + "' is not a replica of the cluster in " + flags.dir +
                                " (its replicas: " + replica_names(config) + ")",
                            kExitUsage);
    }
  }
  const std::vector<DaemonRecord> running = alive(found->records);
  const auto like = std::ranges::find_if(running, [](const DaemonRecord& r) { return r.name.starts_with("replica-"); });
  const bool lockd_up =
      std::ranges::any_of(running, [](const DaemonRecord& r) { return r.name.starts_with("lockd-"); });
  if (like == running.end() || !lockd_up) {
    return report_failure(
        kWhat,
        "the cluster in " + flags.dir + " is not up: start it with `palisade cluster up" + flags.dir_flag() + "`",
        kExitUnavailable);
  }
  auto record = read_replica_record(found->access.config, found->access.credentials, 2s);
  if (!record.is_ok()) return report_error(kWhat, record.status());
  uint32_t old_id = 0;
  if (leaving) {
    const auto member = std::ranges::find_if(record.value().set.replicas,
                                             [&](const wire::ReplicaInfo& r) { return r.address == *leaving; });
    if (member == record.value().set.replicas.end()) {
      return report_failure(kWhat,
                            flags.name + " (" + *leaving + ") is not in replica set version " +
                                std::to_string(record.value().set.version) + " (see `palisade member list`)",
                            kExitUsage);
    }
    old_id = member->id;
  }
  // The quorums, checked before anything starts.
  if (auto quorums = quorums_after(kind, record.value().set, {}); !quorums.is_ok()) {
    return report_failure(kWhat, quorums.status().message(), kExitUsage);
  }

  std::optional<Joining> joining;
  std::vector<DaemonRecord> records = found->records;
  if (kind != ReplicaChangeKind::kRemove) {
    auto written = write_joining(flags, config);
    if (!written.is_ok()) return report_error(kWhat, written.status());
    joining = written.value();
    warn_late(kWhat, reload_daemons(running, kReloadTimeout));  // they let it connect
    auto started = start_joining(flags, *joining, found->records, *like);
    if (!started.is_ok()) {
      undo_joining(kWhat, flags, *joining, found->records, running);
      return report_failure(kWhat,
                            joining->name + " did not start (its log: " + flags.dir + "/" + joining->name +
                                ".log): " + started.status().to_string(),
                            exit_code_for(started.status()));
    }
    records.push_back(started.value());
  }

  auto access = access_to(flags, common);
  if (!access.is_ok()) {
    if (joining) undo_joining(kWhat, flags, *joining, records, running);
    return report_error(kWhat, access.status());
  }
  ReplicaSetChange change{.kind = kind, .old_id = old_id, .new_endpoint = joining ? joining->endpoint : ""};
  if (!common.json()) change.progress = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
  auto changed = change_replica_set(access.value(), change);
  if (!changed.is_ok()) {
    if (joining) undo_joining(kWhat, flags, *joining, records, running);
    const Code code = changed.status().code();
    return report_failure(kWhat,
                          "the replica set did not change" +
                              (joining ? " (" + joining->name + " is gone again)" : std::string()) + ": " +
                              changed.status().to_string(),
                          code == Code::kBadRequest ? kExitUsage : exit_code_for(changed.status()));
  }

  // The new set serves: the replica that left stops, and the file says so.
  ClusterConfig after = joining ? joining->config : config;
  if (leaving && joining) {
    swap_replica(after, *leaving, joining->endpoint);
  } else if (joining) {
    admit_spare_replica(after, joining->endpoint);
  } else {
    remove_replica(after, *leaving);
  }
  const std::vector<DaemonRecord> kept = leaving ? stop_named(records, flags.name) : records;
  if (Status s = write_daemon_records(flags.records_path(), kept); !s.is_ok()) return report_error(kWhat, s);
  if (Status s = rewrite(kWhat, flags, after, alive(kept)); !s.is_ok()) return report_error(kWhat, s);
  if (leaving) {
    std::error_code ec;
    fs::remove(flags.dir + "/keys/" + flags.name + ".key", ec);
    if (flags.purge) {
      fs::remove_all(flags.dir + "/" + flags.name, ec);
      fs::remove(flags.dir + "/" + flags.name + ".log", ec);
    }
  }
  return print_changed(kind, flags, joining, leaving, changed.value(), common);
}

void add_cluster_replace_command(CLI::App& cluster, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<NodeFlags>();
  flags->dir = default_cluster_dir();
  auto* cmd = cluster.add_subcommand(
      "replace", "Replace a replica of the running local cluster by a new one, while the cluster serves");
  cmd->add_option("NAME", flags->name, "The replica, as `cluster status` names it: replica-N")->required();
  cmd->add_option("--dir", flags->dir, "The cluster's directory: cluster file, key, data and logs")
      ->capture_default_str();
  cmd->add_flag("--purge", flags->purge, "Also remove the old replica's data directory and log (kept by default)");
  cmd->footer(
      "The new replica gets the next unused name (replica-N) and a free port on 127.0.0.1, a key pair in DIR/keys "
      "and its own data directory. It goes into DIR/cluster.toml as a spare, the running daemons read the file "
      "again (SIGHUP), it starts with the flags the other replicas run with, and the replica set moves to it as "
      "`palisade member replace --replica` moves it: filled while the set serves, writes paused for a moment, "
      "filled again. Then the old replica stops, and the file lists the new one in its place. When the set does "
      "not move, the new replica is stopped and taken out again, and the old set serves. It connects as `member` "
      "does (--key, $PALISADE_KEY, else DIR/keys/admin.key). Exit status: 0 replaced; 2 not a replica of the "
      "cluster, or a cluster started --insecure; 4 no cluster, not up, or too few replicas answer; 6 no answer "
      "in time; 9 the key's identity is not an admin; 1 another failure (the old set serves).");
  cmd->callback([flags, &common, &exit_code] {
    exit_code = change_local_replicas(ReplicaChangeKind::kReplace, absolute(*flags), common);
  });
}

}  // namespace palisade::cli
