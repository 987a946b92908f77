// palisade member list | add ID... | remove ID... | replace OLD NEW: the lock
// group's members (docs/design.md "Membership"). A change goes to the master
// as one set_members request naming the whole new membership and the version
// it replaces; the master proposes it through the log and answers once it is
// applied. The nodes a change adds must be in the cluster file (their address).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "cli/command.h"
#include "cli/lockd_call.h"

namespace palisade::cli {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct MemberFlags {
  std::vector<uint32_t> ids;
  std::chrono::milliseconds timeout{30000};
};

// The membership as the master reports it, and where the master is.
struct View {
  std::string master_endpoint;
  uint64_t version = 0;
  std::vector<wire::MemberInfo> members;
  std::map<uint32_t, std::string> roles;  // node id -> its role, from its own status
};

class Group {
 public:
  explicit Group(const ClusterAccess& access) : access_(access) {}

  // Asks every node the cluster file lists (and every member any of them
  // names) for its status; the master's answer is the membership.
  Result<View> view(std::chrono::milliseconds per_call) {
    View v;
    std::set<std::string> asked;
    std::vector<std::string> endpoints;
    for (const LockdNode& n : access_.config.lockd) endpoints.push_back(n.endpoint);
    for (size_t i = 0; i < endpoints.size(); ++i) {
      if (!asked.insert(endpoints[i]).second) continue;
      auto reply = call(endpoints[i], wire::LockStatusRequest{}, per_call);
      if (!reply || !reply->status.is_ok()) continue;
      v.roles[reply->node] = reply->role;
      for (const wire::MemberInfo& m : reply->members) endpoints.push_back(m.address);
      if (reply->role == "master") {
        v.master_endpoint = endpoints[i];
        v.version = reply->members_version;
        v.members = reply->members;
      }
    }
    if (v.master_endpoint.empty()) {
      return Status(Code::kUnavailable, "no lock group node answered as master; is a majority of the members up?");
    }
    return v;
  }

  std::optional<wire::LockReply> call(const std::string& endpoint, const wire::LockRequestBody& body,
                                      std::chrono::milliseconds timeout) {
    return call_lockd_endpoint(ctx_, endpoint, body, timeout, access_.config.cluster_id, access_.credentials);
  }

 private:
  const ClusterAccess& access_;
  zmq::context_t ctx_;
};

std::string list_ids(const std::vector<wire::MemberInfo>& members) {
  std::string out;
  for (const auto& m : members) out += (out.empty() ? "" : ", ") + std::to_string(m.id);
  return out;
}

int print_view(const View& v, const CommonOptions& common) {
  if (common.json()) {
    nlohmann::json members = nlohmann::json::array();
    for (const auto& m : v.members) {
      auto role = v.roles.find(m.id);
      members.push_back({{"id", m.id},
                         {"address", m.address},
                         {"role", role == v.roles.end() ? nlohmann::json(nullptr) : nlohmann::json(role->second)}});
    }
    std::printf("%s\n", nlohmann::json{{"version", v.version}, {"members", members}}.dump().c_str());
    return kExitOk;
  }
  std::printf("lock group members, version %llu%s:\n", static_cast<unsigned long long>(v.version),
              v.version == 0 ? " (the cluster file's, never changed)" : "");
  for (const auto& m : v.members) {
    auto role = v.roles.find(m.id);
    std::printf("  %3u  %-32s %s\n", m.id, m.address.c_str(),
                role == v.roles.end() ? "not answering" : role->second.c_str());
  }
  return kExitOk;
}

enum class Change { kAdd, kRemove, kReplace };

constexpr std::string_view kWhat = "member";

// The new membership, or a usage error naming what is wrong with the ids.
Result<std::vector<wire::MemberInfo>> changed(const View& v, Change change, const std::vector<uint32_t>& ids,
                                              const ClusterConfig& config) {
  std::map<uint32_t, std::string> next;
  for (const auto& m : v.members) next[m.id] = m.address;
  auto add = [&](uint32_t id) -> Status {
    if (next.count(id)) return Status(Code::kBadRequest, "node " + std::to_string(id) + " is a member already");
    const LockdNode* n = config.lockd_node(id);
    if (n == nullptr) {
      return Status(Code::kBadRequest, "node " + std::to_string(id) + " is not in " + config.path +
                                           ": add its [[lockd]] entry (id and endpoint) first");
    }
    next[id] = n->endpoint;
    return Status::ok();
  };
  auto remove = [&](uint32_t id) -> Status {
    if (!next.erase(id)) return Status(Code::kBadRequest, "node " + std::to_string(id) + " is not a member");
    return Status::ok();
  };
  for (size_t i = 0; i < ids.size(); ++i) {
    Status s = change == Change::kAdd                ? add(ids[i])
               : change == Change::kRemove || i == 0 ? remove(ids[i])
                                                     : add(ids[i]);
    if (!s.is_ok()) return s;
  }
  if (next.empty()) return Status(Code::kBadRequest, "the lock group cannot have no members");
  std::vector<wire::MemberInfo> out;
  for (const auto& [id, address] : next) out.push_back({id, address});
  return out;
}

int run_change(Change change, const MemberFlags& flags, const CommonOptions& common) {
  if (change == Change::kReplace && flags.ids.size() != 2) {
    return report_failure(kWhat, "replace takes two node ids: the one to remove and the one to add", kExitUsage);
  }
  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error(kWhat, loaded.status());
  Group group(loaded.value());
  const auto deadline = Clock::now() + flags.timeout;
  Status last(Code::kUnavailable, "no master answered");
  // A master that steps down (an election, its own removal) answers
  // not_master: look again and ask the new one, until the timeout.
  while (Clock::now() < deadline) {
    auto v = group.view(1000ms);
    if (!v.is_ok()) {
      last = v.status();
      std::this_thread::sleep_for(500ms);
      continue;
    }
    auto next = changed(v.value(), change, flags.ids, loaded.value().config);
    if (!next.is_ok()) return report_failure(kWhat, next.status().message(), kExitUsage);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto reply = group.call(v.value().master_endpoint,
                            wire::SetMembersRequest{.version = v.value().version, .nodes = next.value()}, left);
    if (!reply) return report_error(kWhat, Status(Code::kTimeout, "the master did not answer in time"));
    const Code code = reply->status.code();
    // not_master: the master stepped down (an election, its own removal);
    // stale: another change came first. Either way, look again: the change
    // is applied to the membership as it is now.
    if (code == Code::kNotMaster || code == Code::kStale) {
      last = reply->status;
      std::this_thread::sleep_for(200ms);
      continue;
    }
    if (!reply->status.is_ok()) return report_error(kWhat, reply->status);
    View done{.master_endpoint = v.value().master_endpoint,
              .version = reply->members_version,
              .members = next.value(),
              .roles = {}};
    if (common.json()) return print_view(done, common);
    std::printf("lock group members, version %llu: %s\n", static_cast<unsigned long long>(done.version),
                list_ids(done.members).c_str());
    return kExitOk;
  }
  return report_error(kWhat, last);
}

int run_list(const CommonOptions& common) {
  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error(kWhat, loaded.status());
  Group group(loaded.value());
  auto v = group.view(1000ms);
  if (!v.is_ok()) return report_error(kWhat, v.status());
  return print_view(v.value(), common);
}

}  // namespace

void add_member_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto* sub = app.add_subcommand("member", "List or change the lock group's members (docs/operations.md)");
  sub->require_subcommand(1);
  sub->footer("A change names node ids of the cluster file's [[lockd]] entries; the master proposes it through the "
              "lock group's log and answers once it is applied. Admin only on a secure cluster. Exit status: 0 done, "
              "2 a bad id (not in the cluster file, already a member, not a member), 4 no master, 6 no answer in "
              "time (the change may still apply), 9 not an admin.");
  sub->add_subcommand("list", "The members, each with its address and role, and the membership's version")
      ->callback([&common, &exit_code] { exit_code = run_list(common); });
  struct Spec {
    const char* name;
    const char* help;
    const char* ids_help;
    Change change;
  };
  for (const Spec& spec : {
           Spec{"add", "Add nodes of the cluster file to the lock group", "The node ids to add", Change::kAdd},
           Spec{"remove", "Remove nodes from the lock group", "The node ids to remove", Change::kRemove},
           Spec{"replace", "Replace one node by another in one change", "OLD NEW: the node to remove, the one to add",
                Change::kReplace},
       }) {
    auto flags = std::make_shared<MemberFlags>();
    auto* change = sub->add_subcommand(spec.name, spec.help);
    change->add_option("IDS", flags->ids, spec.ids_help)->required()->check(CLI::Range(1, 255));
    add_duration_option(change, "--timeout", flags->timeout, false,
                        "How long to wait for the master to apply the change (default 30s)");
    const Change kind = spec.change;
    change->callback([flags, kind, &common, &exit_code] { exit_code = run_change(kind, *flags, common); });
  }
}

}  // namespace palisade::cli
