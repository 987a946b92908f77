// `palisade status`: the lock group as each node sees it (role, epoch as
// ROUND.NODE, applied slot, sessions; the master's locks with holders and
// tokens) and each replica: whether it answers, its keys and its fence floors
// (the `stats` request). Healthy, degraded or unavailable (cli/health.h):
// exit 0 unless unavailable.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "client/replica_connection.h"
#include "cli/command.h"
#include "cli/health.h"
#include "cli/reachable.h"
#include "cli/replica_record.h"
#include "transport/lockd_call.h"

namespace palisade::cli {
namespace {

using namespace std::chrono_literals;

// Floors listed per replica in text; -o json carries all the replica sent.
constexpr size_t kTextFloors = 10;

// The raw epoch (a ballot, as the lock group sends it) and its round and node.
nlohmann::json epoch_json(uint64_t epoch) {
  const EpochParts p = epoch_parts(epoch);
  return {{"epoch", epoch}, {"epoch_round", p.round}, {"epoch_node", p.node}};
}

// One replica as JSON: reachable, and what its stats say. A replica that
// answers without stats (one older than the request: unknown_type; a disk
// error; one of another cluster: wrong_cluster) is reachable, with
// "stats_error" saying why; "own_cluster" is false for the last.
nlohmann::json replica_json(zmq::context_t& ctx, const std::string& endpoint, bool refused, const std::string& cluster,
                            const std::optional<Credentials>& credentials) {
  client::ReplicaConnection conn(ctx, endpoint, credentials);
  auto reply = refused ? Result<wire::ReplicaReply>(Status(Code::kUnavailable, "refused"))
                       : conn.call({.id = 0, .body = wire::StatsRequest{}, .cluster = cluster}, 1000);
  nlohmann::json out{{"endpoint", endpoint}, {"reachable", reply.is_ok()},
                     {"own_cluster", reply.is_ok() && reply.value().status.code() != Code::kWrongCluster}};
  for (const char* field : {"keys", "floor_count", "floors", "floors_cut", "data_bytes", "format", "insecure",
                            "config_version", "config_paused"}) {
    out[field] = nullptr;
  }
  if (!reply.is_ok()) return out;
  if (!reply.value().stats) {
    out["stats_error"] = reply.value().status.is_ok() ? "no stats in the reply" : reply.value().status.to_string();
    return out;
  }
  const wire::ReplicaStats& s = *reply.value().stats;
  nlohmann::json floors = nlohmann::json::object();
  for (const auto& [lock, floor] : s.floors) floors[lock] = floor;
  out.update({{"keys", s.keys},
              {"floor_count", s.floor_count},
              {"floors", floors},
              {"floors_cut", s.floors.size() < s.floor_count},
              {"data_bytes", s.data_bytes},
              {"format", s.format},
              {"insecure", s.insecure},
              {"config_version", s.config_version},
              {"config_paused", s.config_paused}});
  return out;
}

// "answering, 3 keys, 2 floors", then the highest floors, one a line.
void print_replica(const nlohmann::json& r) {
  const char* endpoint = r["endpoint"].get_ref<const std::string&>().c_str();
  if (!r["reachable"].get<bool>()) {
    std::printf("  %-24s not answering\n", endpoint);
    return;
  }
  if (r["keys"].is_null()) {
    std::printf("  %-24s %s: %s\n", endpoint, r["own_cluster"].get<bool>() ? "answering, no stats" : "another cluster's",
                r["stats_error"].get_ref<const std::string&>().c_str());
    return;
  }
  const uint64_t config = r["config_version"].get<uint64_t>();
  const std::string set = config == 0 ? ""
                                      : ", replica set version " + std::to_string(config) +
                                            (r["config_paused"].get<bool>() ? " (paused)" : "");
  std::printf("  %-24s answering, %llu keys, %llu floors, %.1f MB of data%s%s\n", endpoint,
              r["keys"].get<unsigned long long>(), r["floor_count"].get<unsigned long long>(),
              static_cast<double>(r["data_bytes"].get<uint64_t>()) / 1e6, set.c_str(),
              r["insecure"].get<bool>() ? ", INSECURE: no cluster key, any fencing token accepted" : "");
  std::vector<std::pair<uint64_t, std::string>> floors;
  for (const auto& [lock, floor] : r["floors"].items()) floors.emplace_back(floor.get<uint64_t>(), lock);
  std::sort(floors.begin(), floors.end(), std::greater<>());
  for (size_t i = 0; i < floors.size() && i < kTextFloors; ++i) {
    std::printf("    floor %-20s %llu\n", floors[i].second.c_str(), static_cast<unsigned long long>(floors[i].first));
  }
  const uint64_t more = r["floor_count"].get<uint64_t>() - std::min<uint64_t>(floors.size(), kTextFloors);
  if (more > 0) std::printf("    ... %llu more floors (-o json lists up to %zu)\n", static_cast<unsigned long long>(more), wire::kMaxStatsFloors);
}

int run(const CommonOptions& common) {
  auto file = load_cluster(common);
  if (!file.is_ok()) return report_cluster_error("status", file.status());
  // The replicas shown are the set the lock group records, when it records
  // one: the file's list may name replicas replaced since, or none at all.
  std::string replicas_unknown;
  auto loaded = with_recorded_replicas(file.value(), 1000ms);
  if (!loaded.is_ok()) {
    replicas_unknown = loaded.status().message();
    loaded = file.value();
  }
  const ClusterConfig& config = loaded.value().config;
  zmq::context_t ctx(1);

  nlohmann::json nodes = nlohmann::json::array();
  std::optional<wire::LockReply> master;
  std::string master_endpoint;
  // Who refuses connections is known at once: not asked, not waited for.
  std::vector<std::string> all;
  for (const LockdNode& n : config.lockd) all.push_back(n.endpoint);
  all.insert(all.end(), config.replicas.begin(), config.replicas.end());
  const std::vector<std::string> refused = refusing(all, 1000ms);
  auto is_refused = [&](const std::string& e) { return std::find(refused.begin(), refused.end(), e) != refused.end(); };
  size_t lockd_answering = 0;
  for (const LockdNode& n : config.lockd) {
    auto reply = is_refused(n.endpoint)
                     ? std::nullopt
                     : transport::call_lockd_endpoint(ctx, n.endpoint, wire::LockStatusRequest{}, 1000ms,
                                                      config.cluster_id, loaded.value().credentials);
    nlohmann::json node{{"id", n.id}, {"endpoint", n.endpoint}, {"reachable", reply.has_value()}, {"role", nullptr},
                        {"applied_slot", nullptr}, {"sessions", nullptr}, {"epoch", nullptr},
                        {"epoch_round", nullptr}, {"epoch_node", nullptr}, {"error", nullptr}};
    // A node that answers with an error (wrong_cluster: it is another
    // cluster's) is reachable but not counted as answering.
    if (reply && !reply->status.is_ok()) {
      node["error"] = reply->status.to_string();
    } else if (reply) {
      ++lockd_answering;
      node.update({{"role", reply->role}, {"applied_slot", reply->applied_slot}, {"sessions", reply->sessions}});
      node.update(epoch_json(reply->epoch));
      if (reply->role == "master" && (!master || reply->epoch > master->epoch)) {
        master = reply;
        master_endpoint = n.endpoint;
      }
    }
    nodes.push_back(node);
  }
  nlohmann::json locks = nlohmann::json::array();
  bool locks_complete = true;
  if (master) {
    // A reply lists kMaxStatusLocks locks at most: a full one asks for the rest.
    std::vector<wire::LockInfo> page = std::move(master->locks);
    for (;;) {
      for (const wire::LockInfo& l : page) {
        locks.push_back({{"name", l.name},
                         {"mode", std::string(mode_name(l.mode))},
                         {"token", l.token},
                         {"holders", l.holders},
                         {"holder_identities", l.identities},
                         {"waiters", l.waiters},
                         {"delay_ms", l.delay_ms}});
      }
      if (page.size() < wire::kMaxStatusLocks) break;
      auto next =
          transport::call_lockd_endpoint(ctx, master_endpoint, wire::LockStatusRequest{.after = page.back().name},
                                         1000ms, config.cluster_id, loaded.value().credentials);
      if (!next || !next->status.is_ok()) {
        locks_complete = false;
        break;
      }
      page = std::move(next->locks);
    }
  }

  nlohmann::json replicas = nlohmann::json::array();
  int answering = 0;
  for (const std::string& endpoint : config.replicas) {
    replicas.push_back(
        replica_json(ctx, endpoint, is_refused(endpoint), config.cluster_id, loaded.value().credentials));
    answering += replicas.back()["own_cluster"].get<bool>() ? 1 : 0;
  }
  const int majority = static_cast<int>(config.replicas.size()) / 2 + 1;
  const int write_quorum = config.write_quorum != 0 ? config.write_quorum : majority;
  const Health health = health_of({.master = master.has_value(),
                                   .lockd_answering = lockd_answering,
                                   .lockd = config.lockd.size(),
                                   .replicas_answering = static_cast<size_t>(answering),
                                   .replicas = config.replicas.size(),
                                   .read_quorum = config.read_quorum,
                                   .write_quorum = config.write_quorum});
  const bool healthy = health == Health::kHealthy;
  const int exit_code = health == Health::kUnavailable ? kExitUnavailable : kExitOk;
  // The cluster file decides: its identities make every link CurveZMQ.
  const bool curve = !config.identities.empty();
  const std::string connected_as = loaded.value().credentials ? loaded.value().credentials->identity : "";
  // The master lists only the locks a non-admin's own sessions hold.
  const bool own_locks_only = curve && !config.permissions().may_inspect(connected_as);

  if (common.json()) {
    nlohmann::json out{{"cluster_file", config.path},
                       {"group", config.group},
                       {"healthy", healthy},
                       {"state", health_name(health)},
                       {"links", curve ? "curve" : "plaintext"},
                       {"identity", curve ? nlohmann::json(connected_as) : nlohmann::json(nullptr)}};
    // Without a master, what only a master knows is null, not a default.
    out["lock_group"] = {{"master", master ? nlohmann::json(master->node) : nlohmann::json(nullptr)},
                         {"nodes", nodes},
                         {"locks", master ? locks : nlohmann::json(nullptr)},
                         {"locks_complete", master ? nlohmann::json(locks_complete) : nlohmann::json(nullptr)},
                         {"own_locks_only", own_locks_only},
                         {"epoch", nullptr},
                         {"epoch_round", nullptr},
                         {"epoch_node", nullptr}};
    if (master) out["lock_group"].update(epoch_json(master->epoch));
    out["replicas"] = replicas;
    if (!replicas_unknown.empty()) out["replicas_error"] = replicas_unknown;
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return exit_code;
  }
  std::printf("cluster %s (group '%s'): %s\n", config.path.c_str(), config.group.c_str(), health_name(health));
  if (curve) {
    std::printf("links: CurveZMQ, %zu identities listed; connected as '%s'\n", config.identities.size(),
                connected_as.c_str());
  } else {
    std::printf("links: plaintext, INSECURE: the cluster file lists no identities, so anyone who reaches the "
                "daemons can read their traffic and send them requests\n");
  }
  std::printf("\nlock group: %s\n", master ? ("master lockd-" + std::to_string(master->node) + ", epoch " +
                                              format_epoch(master->epoch) + ", " + std::to_string(master->sessions) +
                                              " sessions")
                                                 .c_str()
                                           : "no master answers");
  std::printf("  %-4s %-24s %-10s %-8s %-8s %s\n", "ID", "ENDPOINT", "ROLE", "EPOCH", "SLOT", "SESSIONS");
  for (const auto& n : nodes) {
    if (!n["reachable"].get<bool>()) {
      std::printf("  %-4u %-24s %s\n", n["id"].get<unsigned>(), n["endpoint"].get<std::string>().c_str(),
                  "not answering");
      continue;
    }
    if (!n["error"].is_null()) {
      std::printf("  %-4u %-24s %s\n", n["id"].get<unsigned>(), n["endpoint"].get<std::string>().c_str(),
                  n["error"].get_ref<const std::string&>().c_str());
      continue;
    }
    std::printf("  %-4u %-24s %-10s %-8s %-8llu %llu\n", n["id"].get<unsigned>(),
                n["endpoint"].get<std::string>().c_str(), n["role"].get<std::string>().c_str(),
                format_epoch(n["epoch"].get<uint64_t>()).c_str(), n["applied_slot"].get<unsigned long long>(),
                n["sessions"].get<unsigned long long>());
  }
  if (master) {
    const char* holders_are = locks.empty() ? ""
                              : curve       ? " (holders are identity#session)"
                                            : " (holders are session ids)";
    std::printf("\nlocks: %zu%s%s%s\n", locks.size(), holders_are,
                own_locks_only ? ", only those this identity holds (the whole list takes the admin role)" : "",
                locks_complete ? "" : "; more locks, but the master did not answer for them");
    for (const auto& l : locks) {
      std::string holders;
      const auto& identities = l["holder_identities"];
      for (size_t i = 0; i < l["holders"].size(); ++i) {
        if (!holders.empty()) holders += ",";
        if (i < identities.size()) holders += identities[i].get<std::string>() + "#";
        holders += std::to_string(l["holders"][i].get<uint64_t>());
      }
      std::printf("  %-24s %-9s token %-8llu holders [%s]%s%s\n", l["name"].get<std::string>().c_str(),
                  l["mode"].get<std::string>().c_str(), l["token"].get<unsigned long long>(), holders.c_str(),
                  l["waiters"].get<uint64_t>() > 0 ? (" waiters " + std::to_string(l["waiters"].get<uint64_t>())).c_str() : "",
                  l["delay_ms"].get<uint64_t>() > 0
                      ? (" lock-delay " + format_duration(std::chrono::milliseconds(l["delay_ms"].get<uint64_t>()))).c_str()
                      : "");
    }
  }
  if (!replicas_unknown.empty()) {
    std::printf("\nreplicas: unknown: %s\n", replicas_unknown.c_str());
    return exit_code;
  }
  std::printf("\nreplicas: %d of %zu answer (write quorum %d)\n", answering, config.replicas.size(), write_quorum);
  for (const auto& r : replicas) print_replica(r);
  return exit_code;
}

}  // namespace

void add_status_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto* status = app.add_subcommand("status", "Show the lock group (master, epoch, sessions, locks) and the replicas (keys, fence floors)");
  status->callback([&common, &exit_code] { exit_code = run(common); });
}

}  // namespace palisade::cli
