#include "wire/lock_protocol.h"

#include <array>

#include "wire/config_certificate.h"
#include "wire/message_codec.h"
#include "wire/message_fields.h"
#include "wire/sequencer.h"

namespace palisade::wire {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

constexpr size_t kMaxModeBytes = 16;        // "exclusive"
constexpr size_t kMaxRoleBytes = 16;        // "candidate"
constexpr size_t kMaxEndpointBytes = 1024;  // a ZeroMQ endpoint
constexpr size_t kCurveKeyChars = 40;  // a Z85 CURVE public key

// A list of {id, address, key} maps (key only on a secure cluster).
void pack_members(Packer& pk, std::string_view name, const std::vector<MemberInfo>& members) {
  pack_text(pk, name);
  pk.pack_array(static_cast<uint32_t>(members.size()));
  for (const MemberInfo& m : members) {
    pk.pack_map(m.key.empty() ? 2 : 3);
    pack_u64_field(pk, "id", m.id);
    pack_text_field(pk, "address", m.address);
    if (!m.key.empty()) pack_text_field(pk, "key", m.key);
  }
}

void read_members(FieldReader& r, std::string_view name, std::vector<MemberInfo>& out) {
  read_map_list(r, name, kMaxMembers, "member", out, [](FieldReader& mr, MemberInfo& m) {
    read_u32(mr, "id", m.id, Need::kRequired);
    mr.bytes("address", m.address, kMaxEndpointBytes, Need::kRequired);
    mr.bytes("key", m.key, kCurveKeyChars, Need::kOptional);
    if (!m.key.empty() && m.key.size() != kCurveKeyChars)
      mr.fail(Code::kBadRequest, "a member's key must be 40 characters of Z85");
  });
}

// {id, address, key, receipt_id}, key and receipt_id only when set.
void pack_replicas(Packer& pk, const std::vector<ReplicaInfo>& replicas) {
  pack_text(pk, "replicas");
  pk.pack_array(static_cast<uint32_t>(replicas.size()));
  for (const ReplicaInfo& r : replicas) {
    pk.pack_map(2 + (r.key.empty() ? 0 : 1) + (r.receipt_id == 0 ? 0 : 1));
    pack_u64_field(pk, "id", r.id);
    pack_text_field(pk, "address", r.address);
    if (!r.key.empty()) pack_text_field(pk, "key", r.key);
    if (r.receipt_id != 0) pack_u64_field(pk, "receipt_id", r.receipt_id);
  }
}

// Reads what the map says; check_replicas judges the values.
void read_replicas(FieldReader& r, std::vector<ReplicaInfo>& out) {
  read_map_list(r, "replicas", kMaxReplicas, "replica", out, [](FieldReader& rr, ReplicaInfo& replica) {
    read_u32(rr, "id", replica.id, Need::kRequired);
    rr.bytes("address", replica.address, kMaxEndpointBytes, Need::kRequired);
    rr.bytes("key", replica.key, kCurveKeyChars, Need::kOptional);
    rr.u64("receipt_id", replica.receipt_id, Need::kOptional);
  });
}

struct RequestEncoder : RequestEncoderBase {
  void epoch_and_session(uint32_t body_fields, std::string_view type, uint64_t epoch, uint64_t session) const {
    head(3 + 2 + body_fields, type);
    pack_u64_field(pk, "epoch", epoch);
    pack_u64_field(pk, "session", session);
  }

  void operator()(const FindMasterRequest&) const { head(3, "find_master"); }
  void operator()(const OpenSessionRequest& r) const {
    // lease_ms only when chosen: a request for the default is what masters
    // from before per-session leases accept.
    head(4 + (r.lease_ms != 0 ? 1 : 0) + (r.members_version != 0 ? 1 : 0), "open_session");
    pack_u64_field(pk, "epoch", r.epoch);
    if (r.lease_ms != 0) pack_u64_field(pk, "lease_ms", r.lease_ms);
    if (r.members_version != 0) pack_u64_field(pk, "members_version", r.members_version);
  }
  void operator()(const KeepAliveRequest& r) const {
    epoch_and_session(r.members_version != 0 ? 1 : 0, "keep_alive", r.epoch, r.session);
    if (r.members_version != 0) pack_u64_field(pk, "members_version", r.members_version);
  }
  void operator()(const CloseSessionRequest& r) const { epoch_and_session(0, "close_session", r.epoch, r.session); }
  void operator()(const AcquireRequest& r) const {
    epoch_and_session(5, "acquire", r.epoch, r.session);
    pack_u64_field(pk, "call", r.call);
    pack_text_field(pk, "lock", r.lock);
    pack_text_field(pk, "mode", mode_name(r.mode));
    pack_u64_field(pk, "lock_delay_ms", r.lock_delay_ms);
    pack_u64_field(pk, "wait_ms", r.wait_ms);
  }
  void operator()(const ReleaseRequest& r) const {
    epoch_and_session(2, "release", r.epoch, r.session);
    pack_u64_field(pk, "call", r.call);
    pack_text_field(pk, "lock", r.lock);
  }
  void operator()(const CheckSequencerRequest& r) const {
    head(4, "check_sequencer");
    pack_text_field(pk, "sequencer", r.sequencer);
  }
  void operator()(const LockStatusRequest& r) const {
    head(r.after.empty() ? 3 : 4, "lock_status");
    if (!r.after.empty()) pack_text_field(pk, "after", r.after);
  }
  void operator()(const SetMembersRequest& r) const {
    head(5, "set_members");
    pack_u64_field(pk, "version", r.version);
    pack_members(pk, "nodes", r.nodes);
  }
  void operator()(const SetReplicasRequest& r) const {
    const bool paused = r.phase == ReplicaPhase::kPaused;
    head(paused ? 8 : 7, "set_replicas");
    pack_u64_field(pk, "version", r.version);
    pack_replicas(pk, r.replicas);
    pack_u64_field(pk, "write_quorum", r.write_quorum);
    pack_u64_field(pk, "read_quorum", r.read_quorum);
    if (paused) pack_text_field(pk, "phase", phase_name(r.phase));
  }
  void operator()(const GetReplicasRequest&) const { head(3, "get_replicas"); }
  void operator()(const CurrentGrantRequest& r) const {
    head(4, "current_grant");
    pack_text_field(pk, "lock", r.lock);
  }
};

void read_mode(FieldReader& r, std::string_view field, LockMode& out, Need need) {
  std::string name;
  if (!r.has(field) && need == Need::kOptional) return;
  r.bytes(field, name, kMaxModeBytes, need);
  if (!r.status().is_ok()) return;
  auto mode = mode_from_name(name);
  if (!mode) return r.fail(Code::kBadRequest, "field '" + std::string(field) + "' must be \"exclusive\" or \"shared\", not '" + name + "'");
  out = *mode;
}

// A lock name in a request: required, 1 to max_lock_bytes bytes.
void read_lock_name(FieldReader& r, std::string& out, const Limits& limits) {
  r.bytes("lock", out, limits.max_lock_bytes, Need::kRequired);
  if (r.status().is_ok() && out.empty()) r.fail(Code::kBadRequest, "field 'lock' must not be empty");
}

// The epoch and session of a call that touches a session.
void read_epoch_and_session(FieldReader& r, uint64_t& epoch, uint64_t& session) {
  r.u64("epoch", epoch, Need::kRequired);
  r.u64("session", session, Need::kRequired);
}

// A call that carries nothing but its epoch and session (keep_alive, close_session).
template <typename Call>
Status read_session_call(FieldReader& r, LockRequestBody& out) {
  Call c;
  read_epoch_and_session(r, c.epoch, c.session);
  out = c;
  return Status::ok();
}

// Reads the fields of a request of `type` into `out`.
Status read_body(const std::string& type, FieldReader& r, const Limits& limits, LockRequestBody& out) {
  if (type == "find_master") {
    out = FindMasterRequest{};
    return Status::ok();
  }
  if (type == "lock_status") {
    LockStatusRequest s;
    r.bytes("after", s.after, limits.max_lock_bytes, Need::kOptional);
    out = s;
    return Status::ok();
  }
  if (type == "open_session") {
    OpenSessionRequest o;
    r.u64("epoch", o.epoch, Need::kRequired);
    r.u64("lease_ms", o.lease_ms, Need::kOptional);
    r.u64("members_version", o.members_version, Need::kOptional);
    out = o;
    return Status::ok();
  }
  if (type == "keep_alive") {
    KeepAliveRequest k;
    read_epoch_and_session(r, k.epoch, k.session);
    r.u64("members_version", k.members_version, Need::kOptional);
    out = k;
    return Status::ok();
  }
  if (type == "close_session") return read_session_call<CloseSessionRequest>(r, out);
  if (type == "acquire") {
    AcquireRequest a;
    read_epoch_and_session(r, a.epoch, a.session);
    r.u64("call", a.call, Need::kRequired);
    read_lock_name(r, a.lock, limits);
    read_mode(r, "mode", a.mode, Need::kRequired);
    r.u64("lock_delay_ms", a.lock_delay_ms, Need::kOptional);
    r.u64("wait_ms", a.wait_ms, Need::kOptional);
    if (r.status().is_ok() && a.lock_delay_ms > kMaxLockDelayMs) {
      return Status(Code::kBadRequest, "lock_delay_ms " + std::to_string(a.lock_delay_ms) + " is over the maximum " +
                                           std::to_string(kMaxLockDelayMs) + " ms");
    }
    out = std::move(a);
    return Status::ok();
  }
  if (type == "release") {
    ReleaseRequest rl;
    read_epoch_and_session(r, rl.epoch, rl.session);
    r.u64("call", rl.call, Need::kRequired);
    read_lock_name(r, rl.lock, limits);
    out = std::move(rl);
    return Status::ok();
  }
  if (type == "set_members") {
    SetMembersRequest m;
    r.u64("version", m.version, Need::kRequired);
    if (!r.has("nodes") && r.status().is_ok()) return Status(Code::kBadRequest, "missing field 'nodes'");
    read_members(r, "nodes", m.nodes);
    if (!r.status().is_ok()) return Status::ok();  // the reader's error is the answer
    if (m.nodes.empty()) return Status(Code::kBadRequest, "field 'nodes' must name at least one node");
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      const MemberInfo& n = m.nodes[i];
      if (n.id == 0 || n.id > kMaxMembers) {
        return Status(Code::kBadRequest, "node id " + std::to_string(n.id) + " is not in 1..255");
      }
      if (i > 0 && n.id <= m.nodes[i - 1].id) return Status(Code::kBadRequest, "node ids must increase");
      if (n.address.empty()) return Status(Code::kBadRequest, "node " + std::to_string(n.id) + " has no address");
    }
    out = std::move(m);
    return Status::ok();
  }
  if (type == "set_replicas") {
    SetReplicasRequest m;
    r.u64("version", m.version, Need::kRequired);
    if (!r.has("replicas") && r.status().is_ok()) return Status(Code::kBadRequest, "missing field 'replicas'");
    read_replicas(r, m.replicas);
    read_u32(r, "write_quorum", m.write_quorum, Need::kRequired);
    read_u32(r, "read_quorum", m.read_quorum, Need::kRequired);
    std::string phase;
    r.bytes("phase", phase, 16, Need::kOptional);
    if (!r.status().is_ok()) return Status::ok();  // the reader's error is the answer
    if (phase == phase_name(ReplicaPhase::kPaused)) {
      m.phase = ReplicaPhase::kPaused;
    } else if (r.has("phase") && phase != phase_name(ReplicaPhase::kServing)) {
      return Status(Code::kBadRequest, "field 'phase' must be \"serving\" or \"paused\"");
    }
    if (Status s = check_replicas(m.replicas, m.write_quorum, m.read_quorum); !s.is_ok()) return s;
    out = std::move(m);
    return Status::ok();
  }
  if (type == "get_replicas") {
    out = GetReplicasRequest{};
    return Status::ok();
  }
  if (type == "check_sequencer") {
    CheckSequencerRequest c;
    r.bytes("sequencer", c.sequencer, kMaxSequencerBytes, Need::kRequired);
    out = std::move(c);
    return Status::ok();
  }
  if (type == "current_grant") {
    CurrentGrantRequest g;
    read_lock_name(r, g.lock, limits);
    out = std::move(g);
    return Status::ok();
  }
  return Status(Code::kUnknownType, "unknown message type '" + type + "'");
}

// mode is meaningful with a grant: written with a token, or when it is not the default.
bool has_mode(const LockReply& reply) { return reply.token != 0 || reply.mode != LockMode::kExclusive; }

uint32_t reply_field_count(const LockReply& reply) {
  uint32_t n = 6;  // v, id, type, code, epoch, master
  if (!reply.status.message().empty()) ++n;
  if (!reply.master_endpoint.empty()) ++n;
  if (reply.session != 0) ++n;
  if (reply.lease_ms != 0) ++n;
  if (reply.token != 0) ++n;
  if (has_mode(reply)) ++n;
  if (!reply.sequencer.empty()) ++n;
  if (reply.current) ++n;
  if (reply.released) ++n;
  if (reply.node != 0) ++n;
  if (!reply.role.empty()) ++n;
  if (reply.applied_slot != 0) ++n;
  if (reply.sessions != 0) ++n;
  if (!reply.locks.empty()) ++n;
  if (reply.members_version != 0) ++n;
  if (!reply.members.empty()) ++n;
  if (!reply.config.empty()) ++n;
  return n;
}

void pack_lock_info(Packer& pk, const LockInfo& l) {
  pk.pack_map(l.identities.empty() ? 6 : 7);
  pack_text_field(pk, "name", l.name);
  pack_text_field(pk, "mode", mode_name(l.mode));
  pack_u64_field(pk, "token", l.token);
  pack_text(pk, "holders");
  pk.pack_array(static_cast<uint32_t>(l.holders.size()));
  for (uint64_t h : l.holders) pk.pack_uint64(h);
  if (!l.identities.empty()) {
    pack_text(pk, "holder_identities");
    pk.pack_array(static_cast<uint32_t>(l.identities.size()));
    for (const std::string& identity : l.identities) pack_text(pk, identity);
  }
  pack_u64_field(pk, "waiters", l.waiters);
  pack_u64_field(pk, "delay_ms", l.delay_ms);
}

void read_holders(FieldReader& r, std::vector<uint64_t>& out) {
  const msgpack::object* list = r.object("holders", Need::kRequired);
  if (list == nullptr) return;
  if (list->type != msgpack::type::ARRAY) return r.fail(Code::kBadRequest, "field 'holders' must be a list");
  for (uint32_t i = 0; i < list->via.array.size; ++i) {
    const msgpack::object& h = list->via.array.ptr[i];
    if (h.type != msgpack::type::POSITIVE_INTEGER) {
      return r.fail(Code::kBadRequest, "field 'holders' must list non-negative integers");
    }
    out.push_back(h.via.u64);
  }
}

// Optional: a list of texts, one per holder (of the holders read before it).
void read_holder_identities(FieldReader& r, const LockInfo& l, std::vector<std::string>& out) {
  const msgpack::object* list = r.object("holder_identities", Need::kOptional);
  if (list == nullptr) return;
  if (list->type != msgpack::type::ARRAY || list->via.array.size != l.holders.size()) {
    return r.fail(Code::kBadRequest, "field 'holder_identities' must be a list of one text per holder");
  }
  for (uint32_t i = 0; i < list->via.array.size; ++i) {
    const msgpack::object& id = list->via.array.ptr[i];
    if (id.type != msgpack::type::STR || id.via.str.size > kMaxIdentityBytes) {
      return r.fail(Code::kBadRequest, "field 'holder_identities' must list texts of at most " +
                                           std::to_string(kMaxIdentityBytes) + " bytes");
    }
    out.emplace_back(id.via.str.ptr, id.via.str.size);
  }
}

void read_lock_info(FieldReader& r, const Limits& limits, LockInfo& l) {
  r.bytes("name", l.name, limits.max_lock_bytes, Need::kRequired);
  read_mode(r, "mode", l.mode, Need::kRequired);
  r.u64("token", l.token, Need::kRequired);
  read_holders(r, l.holders);
  read_holder_identities(r, l, l.identities);
  r.u64("waiters", l.waiters, Need::kRequired);
  r.u64("delay_ms", l.delay_ms, Need::kRequired);
}

void read_locks(FieldReader& r, const Limits& limits, std::vector<LockInfo>& out) {
  read_map_list(r, "locks", kMaxStatusLocks, "lock", out,
                [&](FieldReader& lr, LockInfo& l) { read_lock_info(lr, limits, l); });
}

}  // namespace

std::string_view request_type(const LockRequestBody& body) {
  static constexpr std::array<std::string_view, 12> kNames = {
      "find_master",     "open_session", "keep_alive",  "close_session", "acquire",      "release",
      "check_sequencer", "lock_status",  "set_members", "set_replicas",  "get_replicas", "current_grant"};
  static_assert(kNames.size() == std::variant_size_v<LockRequestBody>);
  return kNames[body.index()];
}

std::string encode_lock_request(const LockRequest& request) {
  return encode_request_with<RequestEncoder>(request);
}

std::string encode_lock_reply(const LockReply& reply) {
  return encode_message([&](Packer& pk) {
    write_reply_head(pk, reply_field_count(reply), reply.id, reply.status);
    pack_u64_field(pk, "epoch", reply.epoch);
    pack_u64_field(pk, "master", reply.master);
    if (!reply.master_endpoint.empty()) pack_text_field(pk, "master_endpoint", reply.master_endpoint);
    if (reply.session != 0) pack_u64_field(pk, "session", reply.session);
    if (reply.lease_ms != 0) pack_u64_field(pk, "lease_ms", reply.lease_ms);
    if (reply.token != 0) pack_u64_field(pk, "token", reply.token);
    if (has_mode(reply)) pack_text_field(pk, "mode", mode_name(reply.mode));
    if (!reply.sequencer.empty()) pack_text_field(pk, "sequencer", reply.sequencer);
    if (reply.current) pack_bool_field(pk, "current", true);
    if (reply.released) pack_bool_field(pk, "released", true);
    if (reply.node != 0) pack_u64_field(pk, "node", reply.node);
    if (!reply.role.empty()) pack_text_field(pk, "role", reply.role);
    if (reply.applied_slot != 0) pack_u64_field(pk, "applied_slot", reply.applied_slot);
    if (reply.sessions != 0) pack_u64_field(pk, "sessions", reply.sessions);
    if (!reply.locks.empty()) {
      pack_text(pk, "locks");
      pk.pack_array(static_cast<uint32_t>(reply.locks.size()));
      for (const LockInfo& l : reply.locks) pack_lock_info(pk, l);
    }
    if (reply.members_version != 0) pack_u64_field(pk, "members_version", reply.members_version);
    if (!reply.members.empty()) pack_members(pk, "members", reply.members);
    if (!reply.config.empty()) pack_text_field(pk, "config", reply.config);
  });
}

Result<LockRequest> decode_lock_request(std::string_view bytes, const Limits& limits, uint64_t* id_out) {
  return decode_request_with<LockRequest>(
      bytes, limits.max_message_bytes(), id_out,
      [&](const std::string& type, FieldReader& r, LockRequestBody& body) { return read_body(type, r, limits, body); });
}

Result<LockReply> decode_lock_reply(std::string_view bytes, size_t max_bytes) {
  // A status reply lists up to 1000 locks.
  const ReplyLimits reply_limits{.max_bytes = max_bytes, .max_list = 4096, .max_message_bytes = max_bytes};
  return decode_reply_with<LockReply>(bytes, reply_limits, [](FieldReader& r, LockReply& reply) {
    const Limits limits;
    r.u64("epoch", reply.epoch, Need::kRequired);
    read_u32(r, "master", reply.master, Need::kRequired);
    r.bytes("master_endpoint", reply.master_endpoint, kMaxEndpointBytes, Need::kOptional);
    r.u64("session", reply.session, Need::kOptional);
    r.u64("lease_ms", reply.lease_ms, Need::kOptional);
    r.u64("token", reply.token, Need::kOptional);
    read_mode(r, "mode", reply.mode, Need::kOptional);
    r.bytes("sequencer", reply.sequencer, kMaxSequencerBytes, Need::kOptional);
    r.boolean("current", reply.current, Need::kOptional);
    r.boolean("released", reply.released, Need::kOptional);
    read_u32(r, "node", reply.node, Need::kOptional);
    r.bytes("role", reply.role, kMaxRoleBytes, Need::kOptional);
    r.u64("applied_slot", reply.applied_slot, Need::kOptional);
    r.u64("sessions", reply.sessions, Need::kOptional);
    read_locks(r, limits, reply.locks);
    r.u64("members_version", reply.members_version, Need::kOptional);
    read_members(r, "members", reply.members);
    r.bytes("config", reply.config, kMaxConfigCertificateBytes, Need::kOptional);
  });
}

}  // namespace palisade::wire
