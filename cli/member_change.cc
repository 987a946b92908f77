#include "cli/member_change.h"

#include <set>
#include <thread>

#include <zmq.hpp>

#include "transport/lockd_call.h"
#include "config/cluster_keys.h"

namespace palisade::cli {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class Group {
 public:
  explicit Group(const ClusterAccess& access) : access_(access) {}

  Result<MemberView> view(std::chrono::milliseconds per_call) {
    MemberView v;
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
    return transport::call_lockd_endpoint(ctx_, endpoint, body, timeout, access_.config.cluster_id,
                                          access_.credentials);
  }

 private:
  const ClusterAccess& access_;
  zmq::context_t ctx_;
};

// The new membership, or BadRequest naming what is wrong with the ids.
Result<std::vector<wire::MemberInfo>> changed(const MemberView& v, MemberChange change,
                                              const std::vector<uint32_t>& ids, const ClusterConfig& config) {
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
    Status s = change == MemberChange::kAdd                ? add(ids[i])
               : change == MemberChange::kRemove || i == 0 ? remove(ids[i])
                                                           : add(ids[i]);
    if (!s.is_ok()) return s;
  }
  if (next.empty()) return Status(Code::kBadRequest, "the lock group cannot have no members");
  // Each node's public key on a secure cluster, so that clients that learn
  // the new members from the group can reach them.
  const std::map<std::string, std::string> keys = server_keys(config);
  std::vector<wire::MemberInfo> out;
  for (const auto& [id, address] : next) {
    auto key = keys.find(address);
    std::string known;  // else the key the group has for it
    for (const auto& m : v.members) {
      if (m.id == id && m.address == address) known = m.key;
    }
    out.push_back({id, address, key == keys.end() ? known : key->second});
  }
  return out;
}

}  // namespace

Result<MemberView> read_members(const ClusterAccess& access, std::chrono::milliseconds per_call) {
  return Group(access).view(per_call);
}

Result<MemberView> await_members(const ClusterAccess& access, std::chrono::milliseconds timeout) {
  Group group(access);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto v = group.view(1000ms);
    if (v.is_ok() || Clock::now() + 500ms >= deadline) return v;
    std::this_thread::sleep_for(500ms);
  }
}

Result<wire::LockReply> call_master(const ClusterAccess& access, const wire::LockRequestBody& body,
                                    std::chrono::milliseconds timeout) {
  Group group(access);
  const auto deadline = Clock::now() + timeout;
  auto left = [&] { return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()); };
  while (Clock::now() < deadline) {
    auto v = await_members(access, left());
    if (!v.is_ok()) return v.status();
    auto reply = group.call(v.value().master_endpoint, body, left());
    if (!reply) break;
    if (reply->status.code() != Code::kNotMaster) return *std::move(reply);
    std::this_thread::sleep_for(200ms);
  }
  return Status(Code::kTimeout, "the master did not answer in time");
}

Result<MemberView> change_members(const ClusterAccess& access, MemberChange change, const std::vector<uint32_t>& ids,
                                  std::chrono::milliseconds timeout) {
  Group group(access);
  const auto deadline = Clock::now() + timeout;
  auto left = [&] { return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()); };
  Status last(Code::kUnavailable, "no master answered");
  while (Clock::now() < deadline) {
    auto v = await_members(access, left());
    if (!v.is_ok()) return v.status();
    auto next = changed(v.value(), change, ids, access.config);
    if (!next.is_ok()) return next.status();
    auto reply = group.call(v.value().master_endpoint,
                            wire::SetMembersRequest{.version = v.value().version, .nodes = next.value()}, left());
    if (!reply) return Status(Code::kTimeout, "the master did not answer in time");
    const Code code = reply->status.code();
    // not_master: the master stepped down (an election, its own removal);
    // stale: another change came first. Either way, look again.
    if (code == Code::kNotMaster || code == Code::kStale) {
      last = reply->status;
      std::this_thread::sleep_for(200ms);
      continue;
    }
    if (!reply->status.is_ok()) return reply->status;
    return MemberView{.master_endpoint = v.value().master_endpoint,
                      .version = reply->members_version,
                      .members = next.value()};
  }
  return last;
}

}  // namespace palisade::cli
