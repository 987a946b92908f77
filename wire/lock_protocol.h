// Messages between clients and palisade-lockd (docs/protocol.md, "Lock group").
// One request, one reply, matched by id. Calls that touch a session carry the
// epoch the client knows; a master refuses an older one with stale_epoch and
// the current epoch, and a node that is not master answers not_master with the
// master it knows of.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "wire/envelope.h"
#include "wire/replica_set.h"
#include "palisade/lock_mode.h"
#include "palisade/status.h"

namespace palisade::wire {

// The longest identity name (base/identity.h) a message carries.
constexpr size_t kMaxIdentityBytes = 64;
constexpr uint64_t kMaxLockDelayMs = 60'000;  // lock-delay: at most 60 s (docs/design.md "Sessions and leases")
// The session lease a client may choose (OpenSessionRequest::lease_ms); the
// master also asks for at least twice its heartbeat_ms. Shorter leases mean
// KeepAlives (a third of the lease apart) faster than the group's own
// heartbeats and jeopardy after one slow round trip; longer ones keep the locks
// of a dead client from everybody for too long.
constexpr uint64_t kMinSessionLeaseMs = 1'000;
constexpr uint64_t kMaxSessionLeaseMs = 600'000;

// Who is master? Any node answers (ok, or not_master with a hint).
struct FindMasterRequest {
  friend bool operator==(const FindMasterRequest&, const FindMasterRequest&) = default;
};
struct OpenSessionRequest {
  uint64_t epoch = 0;
  // The session lease the client wants; 0 (and absent on the wire): the
  // cluster's session_lease_ms. Checked by the master, not by the codec.
  uint64_t lease_ms = 0;
  // The lock group's membership version the client knows (0, absent on the
  // wire: none); the reply carries the members when the node's is newer.
  uint64_t members_version = 0;
  friend bool operator==(const OpenSessionRequest&, const OpenSessionRequest&) = default;
};
struct KeepAliveRequest {
  uint64_t epoch = 0;
  uint64_t session = 0;
  uint64_t members_version = 0;  // as in OpenSessionRequest
  friend bool operator==(const KeepAliveRequest&, const KeepAliveRequest&) = default;
};
struct CloseSessionRequest {
  uint64_t epoch = 0;
  uint64_t session = 0;
  friend bool operator==(const CloseSessionRequest&, const CloseSessionRequest&) = default;
};
// `call` numbers a session's acquire and release calls, increasing; a retry
// repeats its number. A call of a lock older than one already applied for the
// session is a late duplicate and changes nothing (stale): a release delayed in
// the network cannot free a later grant of the same lock.
struct AcquireRequest {
  uint64_t epoch = 0;
  uint64_t session = 0;
  std::string lock;
  LockMode mode = LockMode::kExclusive;
  uint64_t lock_delay_ms = 0;  // at most kMaxLockDelayMs
  uint64_t wait_ms = 0;        // 0: answer busy at once when the lock is taken
  uint64_t call = 0;
  friend bool operator==(const AcquireRequest&, const AcquireRequest&) = default;
};
struct ReleaseRequest {
  uint64_t epoch = 0;
  uint64_t session = 0;
  std::string lock;
  uint64_t call = 0;
  friend bool operator==(const ReleaseRequest&, const ReleaseRequest&) = default;
};
// Is this sequencer's grant still the lock's current one?
struct CheckSequencerRequest {
  std::string sequencer;
  friend bool operator==(const CheckSequencerRequest&, const CheckSequencerRequest&) = default;
};
// The group as this node sees it (any node answers; the master knows best).
// A reply lists at most kMaxStatusLocks locks, by name, from the first after
// `after` (empty: from the first): ask again after the last one for the rest.
constexpr size_t kMaxStatusLocks = 1000;
struct LockStatusRequest {
  std::string after{};
  friend bool operator==(const LockStatusRequest&, const LockStatusRequest&) = default;
};

// A node of the lock group's membership: its id and where it is reached.
constexpr size_t kMaxMembers = 255;
struct MemberInfo {
  uint32_t id = 0;  // 1..255
  std::string address;
  // Its CURVE public key (Z85, 40 characters) on a secure cluster, else
  // empty: how a client that learns the node from the group reaches it.
  std::string key{};
  friend bool operator==(const MemberInfo&, const MemberInfo&) = default;
};
// Makes `nodes` the lock group's members (docs/design.md "Membership"), if
// the membership is still at `version` (a status reply's members_version):
// two operators' changes cannot both apply. Master only, admin only; the
// reply comes once the change is chosen and applied.
struct SetMembersRequest {
  uint64_t version = 0;
  std::vector<MemberInfo> nodes;  // ids increasing, 1 to kMaxMembers of them
  friend bool operator==(const SetMembersRequest&, const SetMembersRequest&) = default;
};

// Makes `replicas` the replica set the lock group records (serving), if its
// record is still at `version` (0: none yet, the cluster file's list stands).
// Master only, admin only; the reply carries the new record's certificate.
// The codec refuses a set wire::check_replicas refuses.
struct SetReplicasRequest {
  uint64_t version = 0;
  std::vector<ReplicaInfo> replicas;
  uint32_t write_quorum = 0;
  uint32_t read_quorum = 0;
  // Paused: the replicas refuse writes and fences while one of them is
  // replaced; the master ends a pause that lasts too long (LockServiceOptions).
  ReplicaPhase phase = ReplicaPhase::kServing;
  friend bool operator==(const SetReplicasRequest&, const SetReplicasRequest&) = default;
};
// The replica set record as this node applied it, with its certificate (any
// node answers: the signature and version make a lagging node's answer safe).
struct GetReplicasRequest {
  friend bool operator==(const GetReplicasRequest&, const GetReplicasRequest&) = default;
};

// The lock's current grant as the master knows it: the reply's token and mode
// while it is held, no token while it is free (never granted, released, or in
// lock-delay). For observers: an election's candidates learn who leads.
struct CurrentGrantRequest {
  std::string lock;
  friend bool operator==(const CurrentGrantRequest&, const CurrentGrantRequest&) = default;
};

using LockRequestBody = std::variant<FindMasterRequest, OpenSessionRequest, KeepAliveRequest, CloseSessionRequest,
                                     AcquireRequest, ReleaseRequest, CheckSequencerRequest, LockStatusRequest,
                                     SetMembersRequest, SetReplicasRequest, GetReplicasRequest, CurrentGrantRequest>;

// The wire type of a request ("acquire", ...), for metrics and logs.
std::string_view request_type(const LockRequestBody& body);

struct LockRequest {
  uint64_t id = 0;
  LockRequestBody body;
  // The id of the cluster the sender means (base/cluster_id.h), on the wire
  // as "cluster"; empty: any. A node of another cluster answers wrong_cluster.
  std::string cluster{};
  friend bool operator==(const LockRequest&, const LockRequest&) = default;
};

// One lock in a status reply.
struct LockInfo {
  std::string name;
  LockMode mode = LockMode::kExclusive;
  uint64_t token = 0;
  std::vector<uint64_t> holders;  // session ids
  uint64_t waiters = 0;
  uint64_t delay_ms = 0;  // > 0: free, in lock-delay
  // The identity that opened each holder's session, as `holders`; empty on a
  // cluster without identities.
  std::vector<std::string> identities{};
  friend bool operator==(const LockInfo&, const LockInfo&) = default;
};

// One reply shape for every request; which fields are set depends on the
// request and the code (docs/protocol.md).
struct LockReply {
  uint64_t id = 0;
  Status status;
  uint64_t epoch = 0;           // every reply: the epoch this node knows
  uint32_t master = 0;          // every reply: the master's node id, 0 when unknown
  std::string master_endpoint;  // every reply: where to reach it, empty when unknown
  uint64_t session = 0;         // open_session
  uint64_t lease_ms = 0;        // open_session, keep_alive, acquire: the session's remaining lease
  uint64_t token = 0;  // acquire; current_grant while held
  LockMode mode = LockMode::kExclusive;  // acquire; current_grant while held
  std::string sequencer;        // acquire
  bool current = false;         // check_sequencer
  bool released = false;        // release: whether the session held the lock
  // status only:
  uint32_t node = 0;
  std::string role;             // "master", "follower", "candidate"
  uint64_t applied_slot = 0;
  uint64_t sessions = 0;
  std::vector<LockInfo> locks;  // at most kMaxStatusLocks, by name
  // status and set_members: the membership as this node applied it, and how
  // many changes made it (0: none yet, the cluster file's members); also
  // open_session and keep_alive when the request's members_version is older.
  uint64_t members_version = 0;
  std::vector<MemberInfo> members;  // status, and session replies as above
  // get_replicas, set_replicas: the replica set record's config certificate
  // (wire/config_certificate.h); empty while none is recorded.
  std::string config{};
};

std::string encode_lock_request(const LockRequest& request);
std::string encode_lock_reply(const LockReply& reply);
// On failure *id_out holds the request's id when it could be read, else 0.
Result<LockRequest> decode_lock_request(std::string_view bytes, const Limits& limits, uint64_t* id_out = nullptr);
Result<LockReply> decode_lock_reply(std::string_view bytes, size_t max_bytes);

}  // namespace palisade::wire
