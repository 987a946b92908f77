// `palisade cluster add lockd` and `palisade cluster remove lockd-ID`: a lock
// group node added to, or taken out of, a local cluster that runs (`cluster
// up`), without restarting the others. The cluster file changes (written
// aside, then renamed), every daemon reads it again on SIGHUP, and the
// membership changes through the lock group's log, as `palisade member`
// changes it (cli/member_change.h).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "cli/cluster_node.h"
#include "cli/command.h"
#include "cli/daemon_records.h"
#include "cli/files.h"
#include "cli/local_cluster.h"
#include "cli/local_cluster_file.h"
#include "transport/lockd_call.h"
#include "cli/member_change.h"
#include "cli/process.h"

namespace palisade::cli {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kAdd = "cluster add";
constexpr std::string_view kRemove = "cluster remove";
// How long a node may take to learn the change that made (or unmade) it a member.
constexpr auto kLearnTimeout = 15s;

std::vector<uint32_t> ids_of(const std::vector<wire::MemberInfo>& members) {
  std::vector<uint32_t> ids;
  for (const auto& m : members) ids.push_back(m.id);
  return ids;
}

std::string list(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

// Takes lockd `id` out of the cluster file (its entry, its identity; written
// aside and renamed) and its key file, then has the daemons `running` read
// the file again.
Status forget_lockd(const NodeFlags& flags, ClusterConfig config, uint32_t id,
                    const std::vector<DaemonRecord>& running) {
  const std::string name = "lockd-" + std::to_string(id);
  remove_lockd_node(config, id);
  if (Status s = replace_file(flags.cluster_file(), cluster_file_text(config), 0644); !s.is_ok()) return s;
  std::error_code ec;
  fs::remove(flags.dir + "/keys/" + name + ".key", ec);
  reload_daemons(running, kReloadTimeout);
  return Status::ok();
}

// Asks node `endpoint` until it has applied membership `version` (it knows
// whether it is a member); its last status reply, nullopt when it never
// answered.
std::optional<wire::LockReply> wait_until_learned(const ClusterAccess& access, const std::string& endpoint,
                                                  uint64_t version) {
  zmq::context_t ctx(1);
  std::optional<wire::LockReply> last;
  const auto deadline = Clock::now() + kLearnTimeout;
  while (Clock::now() < deadline) {
    auto reply = transport::call_lockd_endpoint(ctx, endpoint, wire::LockStatusRequest{}, 500ms,
                                                access.config.cluster_id, access.credentials);
    if (reply && reply->status.is_ok()) {
      last = reply;
      if (reply->members_version >= version) break;
    }
    std::this_thread::sleep_for(50ms);
  }
  return last;
}

std::optional<uint32_t> master_of(const MemberView& view) {
  for (const auto& [id, role] : view.roles) {
    if (role == "master") return id;
  }
  return std::nullopt;
}

// A new lockd node in the cluster file: the next id, a free port, on a
// secure cluster a key pair and identity; nullopt once it reported why not.
struct NewNode {
  uint32_t id = 0;
  std::string name;
  std::string endpoint;
  ClusterConfig config;  // the file's, with the node
};

std::optional<NewNode> write_new_node(const NodeFlags& flags, ClusterConfig config, int& exit_code) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(flags.dir, ec)) names.push_back(entry.path().filename().string());
  const auto id = next_lockd_id(config, names);
  const auto endpoint = unused_endpoint(config, free_endpoints(4));
  if (!id || !endpoint) {
    exit_code = report_failure(kAdd, !id ? "no lockd id is left: they go up to 255" : "found no free port on 127.0.0.1",
                               kExitFailure);
    return std::nullopt;
  }
  const std::string name = "lockd-" + std::to_string(*id);
  std::optional<Identity> identity;
  if (!config.identities.empty()) {  // a secure cluster: a key pair for it, as `cluster up` makes
    auto written = write_daemon_key(flags.dir, name, "lockd");
    if (!written.is_ok()) {
      exit_code = report_error(kAdd, written.status());
      return std::nullopt;
    }
    identity = std::move(written).value();
  }
  add_lockd_node(config, {*id, *endpoint}, identity);
  if (Status s = replace_file(flags.cluster_file(), cluster_file_text(config), 0644); !s.is_ok()) {
    fs::remove(flags.dir + "/keys/" + name + ".key", ec);
    exit_code = report_error(kAdd, s);
    return std::nullopt;
  }
  return NewNode{*id, name, *endpoint, std::move(config)};
}

// Starts the node as `cluster up` starts lockd nodes, with the flags the
// running ones have (`like`'s log flags, metrics when any daemon serves
// them), and records it in DIR/daemons. Its record and metrics address.
Result<std::pair<DaemonRecord, std::string>> start_new_node(const NodeFlags& flags, const NewNode& node,
                                                            const std::vector<DaemonRecord>& records,
                                                            const DaemonRecord& like) {
  LocalClusterOptions options;
  options.dir = flags.dir;
  options.metrics =
      std::ranges::any_of(alive(records), [](const DaemonRecord& r) { return !metrics_address_of(r.pid).empty(); });
  options.log_format = flag_of(like.pid, "--log-format");
  if (std::string level = flag_of(like.pid, "--log-level"); !level.empty()) options.log_level = level;
  options.detached = true;
  auto cluster = LocalCluster::open(options);  // kills what it started unless released
  if (!cluster.is_ok()) return cluster.status();
  Daemon& daemon = cluster.value()->lockd(node.id);
  daemon.start(true);
  if (Status s = daemon.wait_ready(30s); !s.is_ok()) return s;
  const DaemonRecord record{node.name, daemon.pid(), process_start_time(daemon.pid()).value_or(0), node.endpoint};
  std::vector<DaemonRecord> with = records;
  with.push_back(record);
  if (Status s = write_daemon_records(flags.records_path(), with); !s.is_ok()) return s;
  cluster.value()->release();
  return std::make_pair(record, daemon.metrics_address());
}

int add(const NodeFlags& flags, const CommonOptions& common) {
  if (flags.kind == "replica") return change_local_replicas(ReplicaChangeKind::kAdd, flags, common);
  int exit_code = kExitOk;
  auto found = find_cluster(flags, common, kAdd, exit_code);
  if (!found) return exit_code;
  const std::vector<DaemonRecord> running = alive(found->records);
  const auto lockd_running =
      std::ranges::find_if(running, [](const DaemonRecord& r) { return lockd_id_of(r.name).has_value(); });
  if (lockd_running == running.end()) {
    return report_failure(
        kAdd, "the cluster in " + flags.dir + " is not up: start it with `palisade cluster up" + flags.dir_flag() + "`",
        kExitUnavailable);
  }
  // Without a master nothing could make the node a member: change nothing.
  if (auto members = await_members(found->access, flags.timeout); !members.is_ok()) {
    return report_error(kAdd, members.status());
  }
  auto node = write_new_node(flags, found->access.config, exit_code);
  if (!node) return exit_code;
  // The others learn its address and key (and let it connect) before it starts.
  warn_late(kAdd, reload_daemons(running, kReloadTimeout));
  auto started = start_new_node(flags, *node, found->records, *lockd_running);
  if (!started.is_ok()) {
    Status undone = forget_lockd(flags, node->config, node->id, running);
    return report_failure(
        kAdd,
        node->name + " did not start" +
            (undone.is_ok() ? ", and is out of the cluster file again"
                            : ", and could not be taken out of the cluster file: " + undone.to_string()) +
            " (its log: " + flags.dir + "/" + node->name + ".log): " + started.status().to_string(),
        exit_code_for(started.status()));
  }
  const auto& [record, metrics] = started.value();

  auto access = access_to(flags, common);
  auto done = access.is_ok() ? change_members(access.value(), MemberChange::kAdd, {node->id}, flags.timeout)
                             : Result<MemberView>(access.status());
  if (!done.is_ok()) {
    return report_failure(kAdd,
                          node->name + " runs (pid " + std::to_string(record.pid) + ", " + node->endpoint +
                              ") but is not a member of the lock group: " + done.status().to_string() +
                              "; make it one with `palisade" + flags.cluster_flag() + " member add " +
                              std::to_string(node->id) + "` (with an admin's key), or take it out again with " +
                              "`palisade cluster remove " + node->name + flags.dir_flag() + "`",
                          exit_code_for(done.status()));
  }
  const uint64_t version = done.value().version;
  const auto learned = wait_until_learned(access.value(), node->endpoint, version);
  const std::string role = learned && learned->members_version >= version ? learned->role : "catching up";
  const std::vector<uint32_t> members = ids_of(done.value().members);
  const std::string log = flags.dir + "/" + node->name + ".log";
  if (common.json()) {
    nlohmann::json out{{"dir", flags.dir},
                       {"cluster_file", flags.cluster_file()},
                       {"name", node->name},
                       {"id", node->id},
                       {"endpoint", node->endpoint},
                       {"pid", record.pid},
                       {"metrics", metrics.empty() ? nlohmann::json(nullptr) : nlohmann::json(metrics)},
                       {"role", role},
                       {"log", log},
                       {"members_version", version},
                       {"members", members}};
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("added %s to the cluster in %s: pid %d, %s%s\n", node->name.c_str(), flags.dir.c_str(),
              static_cast<int>(record.pid), node->endpoint.c_str(),
              metrics.empty() ? "" : (", metrics http://" + metrics).c_str());
  std::printf("lock group members, version %llu: %s (%s: %s)\n", static_cast<unsigned long long>(version),
              list(members).c_str(), node->name.c_str(), role.c_str());
  std::printf("log: %s\n", log.c_str());
  return kExitOk;
}

// Why `cluster remove` may not take lockd `id` out of the cluster (a usage
// error), or empty.
std::string unremovable(const NodeFlags& flags, const ClusterConfig& config, uint32_t id) {
  if (config.lockd_node(id) == nullptr) {
    std::string nodes;
    for (const LockdNode& n : config.lockd) nodes += (nodes.empty() ? "" : ", ") + ("lockd-" + std::to_string(n.id));
    return flags.name + " is not a node of the cluster in " + flags.dir + " (its lockd nodes: " + nodes + ")";
  }
  if (config.lockd.size() == 1) {
    return flags.name + " is the cluster's last lockd node, and a lock group needs one; to remove the whole " +
           "cluster: `palisade cluster down --purge" + flags.dir_flag() + "`";
  }
  return {};
}

struct Removed {
  uint32_t id = 0;
  bool was_member = false;
  MemberView members{};  // after the change
  std::optional<uint32_t> master{};
  std::optional<DaemonRecord> record{};  // its, in DIR/daemons
  bool stopped = false;
  size_t killed = 0;
};

int print_removed(const NodeFlags& flags, const Removed& r, const CommonOptions& common) {
  const std::string data_dir = flags.dir + "/" + flags.name;
  const std::string log = data_dir + ".log";
  const std::vector<uint32_t> ids = ids_of(r.members.members);
  const std::string master = r.master ? "lockd-" + std::to_string(*r.master) : "";
  if (common.json()) {
    nlohmann::json out{{"dir", flags.dir},
                       {"cluster_file", flags.cluster_file()},
                       {"name", flags.name},
                       {"id", r.id},
                       {"was_member", r.was_member},
                       {"members_version", r.members.version},
                       {"members", ids},
                       {"master", master.empty() ? nlohmann::json(nullptr) : nlohmann::json(master)},
                       {"pid", r.record ? nlohmann::json(r.record->pid) : nlohmann::json(nullptr)},
                       {"stopped", r.stopped},
                       {"killed", r.killed > 0},
                       {"purged", flags.purge},
                       {"data_dir", data_dir},
                       {"log", log}};
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s %s the lock group: members %s, version %llu; master: %s\n", flags.name.c_str(),
              r.was_member ? "left" : "was not a member of", list(ids).c_str(),
              static_cast<unsigned long long>(r.members.version),
              master.empty() ? "none yet (`palisade member list` shows it)" : master.c_str());
  if (r.stopped) {
    std::printf("stopped %s (pid %d%s); ", flags.name.c_str(), static_cast<int>(r.record->pid),
                r.killed > 0 ? ", with SIGKILL" : "");
  } else {
    std::printf("%s was not running; ", flags.name.c_str());
  }
  std::printf("took it out of %s and %s\n", flags.cluster_file().c_str(), flags.records_path().c_str());
  std::printf("%s its data %s and log %s%s\n", flags.purge ? "removed" : "kept", data_dir.c_str(), log.c_str(),
              flags.purge ? "" : " (--purge removes them)");
  return kExitOk;
}

int remove(const NodeFlags& flags, const CommonOptions& common) {
  const auto id = lockd_id_of(flags.name);
  if (!id && flags.name.starts_with("replica-"))
    return change_local_replicas(ReplicaChangeKind::kRemove, flags, common);
  if (!id) {
    return report_failure(
        kRemove,
        "'" + flags.name + "' is not a lockd node's name: give lockd-ID, as `palisade cluster status` lists them",
        kExitUsage);
  }
  int exit_code = kExitOk;
  auto found = find_cluster(flags, common, kRemove, exit_code);
  if (!found) return exit_code;
  const ClusterConfig& config = found->access.config;
  if (std::string why = unremovable(flags, config, *id); !why.empty()) return report_failure(kRemove, why, kExitUsage);

  Removed r{.id = *id};
  std::vector<DaemonRecord> kept;
  for (const DaemonRecord& d : found->records) {
    if (d.name == flags.name) {
      r.record = d;
    } else {
      kept.push_back(d);
    }
  }
  const bool running = r.record && is_alive(*r.record);
  // Out of the members first: the group stops counting on it before it stops.
  auto members = await_members(found->access, flags.timeout);
  if (!members.is_ok()) return report_error(kRemove, members.status());
  r.members = members.value();
  r.master = master_of(r.members);
  r.was_member = std::ranges::any_of(r.members.members, [&](const wire::MemberInfo& m) { return m.id == *id; });
  if (r.was_member) {
    auto done = change_members(found->access, MemberChange::kRemove, {*id}, flags.timeout);
    if (!done.is_ok() && done.status().code() == Code::kBadRequest) {
      return report_failure(kRemove, done.status().message(), kExitUsage);  // no members would be left
    }
    if (!done.is_ok()) return report_error(kRemove, done.status());
    r.members = done.value();
    // Once it learnt it, its log says it was removed.
    if (running) wait_until_learned(found->access, config.lockd_node(*id)->endpoint, r.members.version);
  }
  r.stopped = running;
  r.killed = running ? stop_daemons({*r.record}, 10s) : 0;
  if (Status s = write_daemon_records(flags.records_path(), kept); !s.is_ok()) return report_error(kRemove, s);
  if (Status s = forget_lockd(flags, config, *id, alive(kept)); !s.is_ok()) return report_error(kRemove, s);
  if (r.master == *id) {  // it handed over: say who leads now
    auto access = access_to(flags, common);
    auto led = access.is_ok() ? await_members(access.value(), flags.timeout) : Result<MemberView>(access.status());
    r.master = led.is_ok() ? master_of(led.value()) : std::nullopt;
  }
  if (flags.purge) {
    std::error_code ec;
    fs::remove_all(flags.dir + "/" + flags.name, ec);
    fs::remove(flags.dir + "/" + flags.name + ".log", ec);
  }
  return print_removed(flags, r, common);
}

}  // namespace

void add_cluster_node_commands(CLI::App& cluster, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<NodeFlags>();
  flags->dir = default_cluster_dir();
  auto common_flags = [&](CLI::App* sub) {
    sub->add_option("--dir", flags->dir, "The cluster's directory: cluster file, key, data and logs")
        ->capture_default_str();
    add_duration_option(sub, "--timeout", flags->timeout, false,
                        "How long to wait for the master to apply the membership change (default 30s)");
  };

  auto* add_cmd = cluster.add_subcommand(
      "add", "Add a lockd node or a replica to the running local cluster: it starts, and becomes a member");
  add_cmd->add_option("KIND", flags->kind, "What to add: lockd or replica")
      ->required()
      ->check(CLI::IsMember({"lockd", "replica"}));
  common_flags(add_cmd);
  add_cmd->footer(
      "It gives the node the next unused id and a free port on 127.0.0.1 (on a secure cluster, a key pair in "
      "DIR/keys), adds its [[lockd]] entry to DIR/cluster.toml, sends every running daemon SIGHUP (they read the "
      "file again: none restarts), starts it with --join and the flags the others run with, and makes it a member "
      "as `palisade member add` does. Exit status: 0 added; 2 bad arguments; 4 no cluster, not up, or no master; "
      "6 the master did not answer in time; 9 the key's identity is not an admin. When it runs but could not be "
      "made a member, it says so and how to finish or undo it. A replica is added as `palisade member add "
      "--replica` adds one (the replica set grows, W becomes the larger of W and a majority): it gets the next "
      "unused name (replica-N), a free port, a key and a data directory, goes into DIR/cluster.toml as a spare, "
      "starts, is filled and joins the set; a replica that does not join is stopped and taken out again.");
  add_cmd->callback([flags, &common, &exit_code] { exit_code = add(absolute(*flags), common); });

  auto* remove_cmd = cluster.add_subcommand(
      "remove", "Take a lockd node or a replica out of the local cluster: out of its group, then stopped");
  remove_cmd->add_option("NAME", flags->name, "The node, as `cluster status` names it: lockd-ID or replica-N")
      ->required();
  common_flags(remove_cmd);
  remove_cmd->add_flag("--purge", flags->purge, "Also remove its data directory and log (kept by default)");
  remove_cmd->footer(
      "It makes the node leave the lock group's members (as `palisade member remove`; a master hands over first), "
      "stops it (SIGTERM), and takes it out of DIR/daemons and DIR/cluster.toml with its identity and key; the "
      "other daemons get SIGHUP. A node that is not a member (an add that did not finish) is only stopped and taken "
      "out. A replica leaves the replica set as `palisade member remove --replica` removes one (W never falls; "
      "every other replica must answer), then stops and leaves DIR/daemons and the file. Exit status: 0 removed; "
      "2 not a node of the cluster, the last lockd node, or a removal the quorum rules refuse; 4 no cluster or no "
      "master; 6 the master did not answer in time; 9 the key's identity is not an admin.");
  remove_cmd->callback([flags, &common, &exit_code] { exit_code = remove(absolute(*flags), common); });
}

}  // namespace palisade::cli
