// The lock group's members as the master reports them, and a change of them
// (docs/design.md "Membership"): one set_members request to the master naming
// the whole new membership and the version it replaces; the master proposes
// it through the log and answers once it is applied. `palisade member` and
// `palisade cluster add|remove` make their changes with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli/cluster_access.h"
#include "palisade/status.h"
#include "wire/lock_protocol.h"

namespace palisade::cli {

struct MemberView {
  std::string master_endpoint;
  uint64_t version = 0;  // how many changes made the membership; 0: the cluster file's
  std::vector<wire::MemberInfo> members;
  std::map<uint32_t, std::string> roles{};  // node id -> the role it reports itself
};

// Asks every node the cluster file lists (and every member any of them names)
// for its status; the master's answer is the membership. Unavailable when no
// node answers as master.
Result<MemberView> read_members(const ClusterAccess& access, std::chrono::milliseconds per_call);
// read_members, again until a master answers (an election may be under way)
// or `timeout` has passed.
Result<MemberView> await_members(const ClusterAccess& access, std::chrono::milliseconds timeout);

// Sends `body` to the master, found as read_members finds it, and again to
// the new one when it answers not_master (an election); the master's reply,
// whatever it says. Unavailable without a master, Timeout when none answered
// within `timeout`.
Result<wire::LockReply> call_master(const ClusterAccess& access, const wire::LockRequestBody& body,
                                    std::chrono::milliseconds timeout);

enum class MemberChange {
  kAdd,  // the nodes given
  kRemove,  // the nodes given
  kReplace,  // ids[0] out, ids[1] in, in one change
};

// Makes the change and returns the membership it made (roles empty).
// BadRequest, before anything is sent, for ids that do not fit the members
// (already a member, not one, not in the cluster file, none left); else the
// master's refusal, Unavailable without a master, Timeout when none answered
// within `timeout` (the change may still apply). A master that steps down
// or a change that came first (not_master, stale) is followed: the change is
// made to the membership as it is then.
Result<MemberView> change_members(const ClusterAccess& access, MemberChange change, const std::vector<uint32_t>& ids,
                                  std::chrono::milliseconds timeout);

}  // namespace palisade::cli
