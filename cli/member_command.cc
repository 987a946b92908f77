// palisade member list | add ID... | remove ID... | replace OLD NEW: the lock
// group's members (docs/design.md "Membership"); `list` shows the replica set
// the lock group records too (config/replica_record.h). A change goes to the master
// as one set_members request naming the whole new membership and the version
// it replaces; the master proposes it through the log and answers once it is
// applied (cli/member_change.h makes it). The nodes a change adds must be in
// the cluster file (their address).
#include <chrono>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/member_change.h"
#include "cli/replica_record.h"
#include "cli/replica_set_change.h"

namespace palisade::cli {
namespace {

using namespace std::chrono_literals;

struct MemberFlags {
  std::vector<uint32_t> ids;
  std::chrono::milliseconds timeout{30000};
  std::optional<uint32_t> replica;  // replace --replica OLD --with ENDPOINT, remove --replica OLD
  std::string with;
  std::string replica_endpoint;  // add --replica ENDPOINT
  uint32_t write_quorum = 0, read_quorum = 0;  // add, remove: the new set's (0: the default)
};

std::string list_ids(const std::vector<wire::MemberInfo>& members) {
  std::string out;
  for (const auto& m : members) out += (out.empty() ? "" : ", ") + std::to_string(m.id);
  return out;
}

nlohmann::json replicas_json(const ReplicaRecord& r) {
  nlohmann::json replicas = nlohmann::json::array();
  for (const auto& info : r.set.replicas) {
    replicas.push_back({{"id", info.id},
                        {"address", info.address},
                        {"key", info.key.empty() ? nlohmann::json(nullptr) : nlohmann::json(info.key)}});
  }
  return {{"version", r.set.version},
          {"phase", wire::phase_name(r.set.phase)},
          {"write_quorum", r.set.write_quorum},
          {"read_quorum", r.set.read_quorum},
          {"checked", r.checked},
          {"replicas", replicas}};
}

void print_replicas(const ReplicaRecord& r) {
  if (r.set.version == 0 && r.set.replicas.empty()) {
    std::printf("replica set: none recorded, and the cluster file lists no [[replica]]\n");
  } else if (r.set.version == 0) {
    std::printf("replica set: none recorded, the cluster file's [[replica]] list stands (W=%u R=%u):\n",
                r.set.write_quorum, r.set.read_quorum);
  } else {
    std::printf("replica set, version %llu, %s (W=%u R=%u)%s:\n", static_cast<unsigned long long>(r.set.version),
                std::string(wire::phase_name(r.set.phase)).c_str(), r.set.write_quorum, r.set.read_quorum,
                r.checked ? "" : ", its signature not checked (the cluster file has no sequencer_public_key)");
  }
  for (const auto& info : r.set.replicas) std::printf("  %3u  %s\n", info.id, info.address.c_str());
}

int print_view(const MemberView& v, const CommonOptions& common, const ReplicaRecord* replicas = nullptr) {
  if (common.json()) {
    nlohmann::json members = nlohmann::json::array();
    for (const auto& m : v.members) {
      auto role = v.roles.find(m.id);
      members.push_back({{"id", m.id},
                         {"address", m.address},
                         {"key", m.key.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.key)},
                         {"role", role == v.roles.end() ? nlohmann::json(nullptr) : nlohmann::json(role->second)}});
    }
    nlohmann::json out{{"version", v.version}, {"members", members}};
    if (replicas != nullptr) out["replicas"] = replicas_json(*replicas);
    std::printf("%s\n", out.dump().c_str());
    return kExitOk;
  }
  std::printf("lock group members, version %llu%s:\n", static_cast<unsigned long long>(v.version),
              v.version == 0 ? " (the cluster file's, never changed)" : "");
  for (const auto& m : v.members) {
    auto role = v.roles.find(m.id);
    std::printf("  %3u  %-32s %s\n", m.id, m.address.c_str(),
                role == v.roles.end() ? "not answering" : role->second.c_str());
  }
  if (replicas != nullptr) print_replicas(*replicas);
  return kExitOk;
}

constexpr std::string_view kWhat = "member";

// `member replace|add|remove --replica`: the replica set changes (cli/replica_set_change.h).
int run_replica_change(MemberChange change, const MemberFlags& flags, const CommonOptions& common) {
  ReplicaSetChange c{.quorums = {flags.write_quorum, flags.read_quorum}};
  std::string done_what;
  switch (change) {
    case MemberChange::kReplace:
      if (!flags.ids.empty() || flags.with.empty()) {
        return report_failure(kWhat, "replace --replica OLD takes --with ENDPOINT, the new replica, and no node ids",
                              kExitUsage);
      }
      c = {.kind = ReplicaChangeKind::kReplace, .old_id = *flags.replica, .new_endpoint = flags.with};
      done_what = "replaced replica " + std::to_string(*flags.replica) + " by " + flags.with;
      break;
    case MemberChange::kAdd:
      c.kind = ReplicaChangeKind::kAdd;
      c.new_endpoint = flags.replica_endpoint;
      done_what = "added replica " + flags.replica_endpoint;
      break;
    case MemberChange::kRemove:
      c.kind = ReplicaChangeKind::kRemove;
      c.old_id = *flags.replica;
      done_what = "removed replica " + std::to_string(*flags.replica);
      break;
  }
  if (change != MemberChange::kReplace && !flags.ids.empty()) {
    return report_failure(kWhat, "--replica changes the replica set and takes no node ids", kExitUsage);
  }
  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error(kWhat, loaded.status());
  if (!common.json()) c.progress = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
  auto done = change_replica_set(loaded.value(), c);
  if (!done.is_ok()) {
    if (done.status().code() == Code::kBadRequest) return report_failure(kWhat, done.status().message(), kExitUsage);
    return report_error(kWhat, done.status());
  }
  const ChangeReport& r = done.value();
  if (common.json()) {
    nlohmann::json out = replicas_json(r.record);
    out["took_ms"] = r.took.count();
    out["paused_ms"] = r.paused_for.count();
    out["bytes_moved"] = r.bytes_moved();
    out["versions_sent"] = r.fill.versions_sent + r.paused_fill.versions_sent;
    out["floors_raised"] = r.fill.floors_raised + r.paused_fill.floors_raised;
    out["completed"] = r.paused_fill.completed;
    std::printf("%s\n", out.dump().c_str());
    return kExitOk;
  }
  std::printf("%s in %lld ms (writes paused %lld ms), %llu bytes moved\n", done_what.c_str(),
              static_cast<long long>(r.took.count()), static_cast<long long>(r.paused_for.count()),
              static_cast<unsigned long long>(r.bytes_moved()));
  print_replicas(r.record);
  return kExitOk;
}

int run_change(MemberChange change, const MemberFlags& flags, const CommonOptions& common) {
  if (flags.replica || !flags.replica_endpoint.empty()) return run_replica_change(change, flags, common);
  if (flags.ids.empty()) return report_failure(kWhat, "name the node ids", kExitUsage);
  if (change == MemberChange::kReplace && flags.ids.size() != 2) {
    return report_failure(kWhat, "replace takes two node ids: the one to remove and the one to add", kExitUsage);
  }
  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error(kWhat, loaded.status());
  auto done = change_members(loaded.value(), change, flags.ids, flags.timeout);
  if (!done.is_ok()) {
    // Ids that do not fit the members: said as they are, a usage error.
    if (done.status().code() == Code::kBadRequest) {
      return report_failure(kWhat, done.status().message(), kExitUsage);
    }
    return report_error(kWhat, done.status());
  }
  if (common.json()) return print_view(done.value(), common);
  std::printf("lock group members, version %llu: %s\n", static_cast<unsigned long long>(done.value().version),
              list_ids(done.value().members).c_str());
  return kExitOk;
}

int run_list(const CommonOptions& common) {
  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error(kWhat, loaded.status());
  auto v = read_members(loaded.value(), 1000ms);
  if (!v.is_ok()) return report_error(kWhat, v.status());
  auto replicas = read_replica_record(loaded.value().config, loaded.value().credentials, 1000ms);
  if (!replicas.is_ok()) return report_error(kWhat, replicas.status());
  return print_view(v.value(), common, &replicas.value());
}

}  // namespace

void add_member_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto* sub = app.add_subcommand("member", "List or change the lock group's members (docs/operations.md)");
  sub->require_subcommand(1);
  sub->footer("A change names node ids of the cluster file's [[lockd]] entries; the master proposes it through the "
              "lock group's log and answers once it is applied. Admin only on a secure cluster. Exit status: 0 done, "
              "2 a bad id (not in the cluster file, already a member, not a member), 4 no master, 6 no answer in "
              "time (the change may still apply), 9 not an admin.");
  sub->add_subcommand("list", "The members, each with its address and role, and the membership's version; then the "
                              "replica set the lock group records")
      ->callback([&common, &exit_code] { exit_code = run_list(common); });
  struct Spec {
    const char* name;
    const char* help;
    const char* ids_help;
    MemberChange change;
  };
  for (const Spec& spec : {
           Spec{"add", "Add nodes of the cluster file to the lock group", "The node ids to add", MemberChange::kAdd},
           Spec{"remove", "Remove nodes from the lock group", "The node ids to remove", MemberChange::kRemove},
           Spec{"replace", "Replace one node by another in one change", "OLD NEW: the node to remove, the one to add",
                MemberChange::kReplace},
       }) {
    auto flags = std::make_shared<MemberFlags>();
    auto* change = sub->add_subcommand(spec.name, spec.help);
    change->add_option("IDS", flags->ids, spec.ids_help)->check(CLI::Range(1, 255));
    if (spec.change == MemberChange::kReplace) {
      change
          ->add_option("--replica", flags->replica,
                       "Replace this replica (its id in `member list`) instead of a lock group node: the new one "
                       "is filled, writes and reads pause briefly, then the set changes")
          ->check(CLI::Range(1, 255));
      change->add_option(
          "--with", flags->with,
          "With --replica: the new replica's endpoint, a [[replica]] of the cluster file (spare = true)");
    } else {
      if (spec.change == MemberChange::kAdd) {
        change->add_option("--replica", flags->replica_endpoint,
                           "Add this replica to the replica set instead of a node to the lock group: its endpoint, a "
                           "[[replica]] of the cluster file (spare = true); it is filled, writes and reads pause "
                           "briefly, then the set changes");
      } else {
        change
            ->add_option("--replica", flags->replica,
                         "Remove this replica (its id in `member list`) from the replica set instead of a node from "
                         "the lock group: every replica that stays must answer; writes and reads pause briefly")
            ->check(CLI::Range(1, 255));
      }
      change
          ->add_option("--write-quorum", flags->write_quorum,
                       "With --replica: the new set's W (default: the larger of the old W and a majority; never "
                       "below the old W, nor above it + 1 for an addition)")
          ->check(CLI::Range(1, 64));
      change
          ->add_option("--read-quorum", flags->read_quorum,
                       "With --replica: the new set's R (default: the old R if R + W still exceeds N, else the "
                       "smallest that does)")
          ->check(CLI::Range(1, 64));
    }
    add_duration_option(change, "--timeout", flags->timeout, false,
                        "How long to wait for the master to apply the change (default 30s)");
    const MemberChange kind = spec.change;
    change->callback([flags, kind, &common, &exit_code] { exit_code = run_change(kind, *flags, common); });
  }
}

}  // namespace palisade::cli
