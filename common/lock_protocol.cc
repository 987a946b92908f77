#include "common/lock_protocol.h"

#include <limits>

#include "common/sequencer.h"

namespace palisade::wire {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

constexpr std::string_view kReplyType = "reply";
constexpr size_t kMaxModeBytes = 16;        // "exclusive"
constexpr size_t kMaxRoleBytes = 16;        // "candidate"
constexpr size_t kMaxEndpointBytes = 1024;  // a ZeroMQ endpoint
constexpr size_t kMaxStatusLocks = 1000;    // LockReply::locks

std::string to_string(const msgpack::sbuffer& buf) { return {buf.data(), buf.size()}; }

struct RequestEncoder {
  Packer& pk;
  uint64_t id;

  void epoch_and_session(uint32_t body_fields, std::string_view type, uint64_t epoch, uint64_t session) const {
    write_envelope(pk, 3 + 2 + body_fields, id, type);
    pack_text(pk, "epoch");
    pk.pack_uint64(epoch);
    pack_text(pk, "session");
    pk.pack_uint64(session);
  }

  void operator()(const FindMasterRequest&) const { write_envelope(pk, 3, id, "find_master"); }
  void operator()(const OpenSessionRequest& r) const {
    // lease_ms only when chosen: a request for the default is what masters
    // from before per-session leases accept.
    write_envelope(pk, r.lease_ms != 0 ? 5 : 4, id, "open_session");
    pack_text(pk, "epoch");
    pk.pack_uint64(r.epoch);
    if (r.lease_ms != 0) {
      pack_text(pk, "lease_ms");
      pk.pack_uint64(r.lease_ms);
    }
  }
  void operator()(const KeepAliveRequest& r) const { epoch_and_session(0, "keep_alive", r.epoch, r.session); }
  void operator()(const CloseSessionRequest& r) const { epoch_and_session(0, "close_session", r.epoch, r.session); }
  void operator()(const AcquireRequest& r) const {
    epoch_and_session(5, "acquire", r.epoch, r.session);
    pack_text(pk, "call");
    pk.pack_uint64(r.call);
    pack_text(pk, "lock");
    pack_text(pk, r.lock);
    pack_text(pk, "mode");
    pack_text(pk, mode_name(r.mode));
    pack_text(pk, "lock_delay_ms");
    pk.pack_uint64(r.lock_delay_ms);
    pack_text(pk, "wait_ms");
    pk.pack_uint64(r.wait_ms);
  }
  void operator()(const ReleaseRequest& r) const {
    epoch_and_session(2, "release", r.epoch, r.session);
    pack_text(pk, "call");
    pk.pack_uint64(r.call);
    pack_text(pk, "lock");
    pack_text(pk, r.lock);
  }
  void operator()(const CheckSequencerRequest& r) const {
    write_envelope(pk, 4, id, "check_sequencer");
    pack_text(pk, "sequencer");
    pack_text(pk, r.sequencer);
  }
  void operator()(const LockStatusRequest&) const { write_envelope(pk, 3, id, "lock_status"); }
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

// Reads the fields of a request of `type` into `out`.
Status read_body(const std::string& type, FieldReader& r, const Limits& limits, LockRequestBody& out) {
  if (type == "find_master") {
    out = FindMasterRequest{};
    return Status::ok();
  }
  if (type == "lock_status") {
    out = LockStatusRequest{};
    return Status::ok();
  }
  if (type == "open_session") {
    OpenSessionRequest o;
    r.u64("epoch", o.epoch, Need::kRequired);
    r.u64("lease_ms", o.lease_ms, Need::kOptional);
    out = o;
    return Status::ok();
  }
  if (type == "keep_alive") {
    KeepAliveRequest k;
    r.u64("epoch", k.epoch, Need::kRequired);
    r.u64("session", k.session, Need::kRequired);
    out = k;
    return Status::ok();
  }
  if (type == "close_session") {
    CloseSessionRequest c;
    r.u64("epoch", c.epoch, Need::kRequired);
    r.u64("session", c.session, Need::kRequired);
    out = c;
    return Status::ok();
  }
  if (type == "acquire") {
    AcquireRequest a;
    r.u64("epoch", a.epoch, Need::kRequired);
    r.u64("session", a.session, Need::kRequired);
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
    r.u64("epoch", rl.epoch, Need::kRequired);
    r.u64("session", rl.session, Need::kRequired);
    r.u64("call", rl.call, Need::kRequired);
    read_lock_name(r, rl.lock, limits);
    out = std::move(rl);
    return Status::ok();
  }
  if (type == "check_sequencer") {
    CheckSequencerRequest c;
    r.bytes("sequencer", c.sequencer, kMaxSequencerBytes, Need::kRequired);
    out = std::move(c);
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
  return n;
}

void pack_u64_field(Packer& pk, std::string_view name, uint64_t value) {
  pack_text(pk, name);
  pk.pack_uint64(value);
}

void pack_lock_info(Packer& pk, const LockInfo& l) {
  pk.pack_map(6);
  pack_text(pk, "name");
  pack_text(pk, l.name);
  pack_text(pk, "mode");
  pack_text(pk, mode_name(l.mode));
  pack_u64_field(pk, "token", l.token);
  pack_text(pk, "holders");
  pk.pack_array(static_cast<uint32_t>(l.holders.size()));
  for (uint64_t h : l.holders) pk.pack_uint64(h);
  pack_u64_field(pk, "waiters", l.waiters);
  pack_u64_field(pk, "delay_ms", l.delay_ms);
}

void read_u32(FieldReader& r, std::string_view name, uint32_t& out, Need need) {
  uint64_t v = 0;
  r.u64(name, v, need);
  if (!r.status().is_ok()) return;
  if (v > std::numeric_limits<uint32_t>::max()) {
    return r.fail(Code::kBadRequest, "field '" + std::string(name) + "' must be at most 2^32-1");
  }
  out = static_cast<uint32_t>(v);
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

void read_lock_info(FieldReader& r, const Limits& limits, LockInfo& l) {
  r.bytes("name", l.name, limits.max_lock_bytes, Need::kRequired);
  read_mode(r, "mode", l.mode, Need::kRequired);
  r.u64("token", l.token, Need::kRequired);
  read_holders(r, l.holders);
  r.u64("waiters", l.waiters, Need::kRequired);
  r.u64("delay_ms", l.delay_ms, Need::kRequired);
}

void read_locks(FieldReader& r, const Limits& limits, std::vector<LockInfo>& out) {
  const msgpack::object* list = r.object("locks", Need::kOptional);
  if (list == nullptr) return;
  if (list->type != msgpack::type::ARRAY || list->via.array.size > kMaxStatusLocks) {
    return r.fail(Code::kBadRequest,
                  "field 'locks' must be a list of at most " + std::to_string(kMaxStatusLocks) + " locks");
  }
  for (uint32_t i = 0; i < list->via.array.size; ++i) {
    FieldReader lr(list->via.array.ptr[i], "lock");
    read_lock_info(lr, limits, out.emplace_back());
    if (Status s = lr.finish(); !s.is_ok()) return r.fail(s.code(), s.message());
  }
}

}  // namespace

std::string encode_lock_request(const LockRequest& request) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  std::visit(RequestEncoder{pk, request.id}, request.body);
  return to_string(buf);
}

std::string encode_lock_reply(const LockReply& reply) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  write_envelope(pk, reply_field_count(reply), reply.id, kReplyType);
  pack_status(pk, reply.status);
  pack_u64_field(pk, "epoch", reply.epoch);
  pack_u64_field(pk, "master", reply.master);
  if (!reply.master_endpoint.empty()) {
    pack_text(pk, "master_endpoint");
    pack_text(pk, reply.master_endpoint);
  }
  if (reply.session != 0) pack_u64_field(pk, "session", reply.session);
  if (reply.lease_ms != 0) pack_u64_field(pk, "lease_ms", reply.lease_ms);
  if (reply.token != 0) pack_u64_field(pk, "token", reply.token);
  if (has_mode(reply)) {
    pack_text(pk, "mode");
    pack_text(pk, mode_name(reply.mode));
  }
  if (!reply.sequencer.empty()) {
    pack_text(pk, "sequencer");
    pack_text(pk, reply.sequencer);
  }
  if (reply.current) {
    pack_text(pk, "current");
    pk.pack(true);
  }
  if (reply.released) {
    pack_text(pk, "released");
    pk.pack(true);
  }
  if (reply.node != 0) pack_u64_field(pk, "node", reply.node);
  if (!reply.role.empty()) {
    pack_text(pk, "role");
    pack_text(pk, reply.role);
  }
  if (reply.applied_slot != 0) pack_u64_field(pk, "applied_slot", reply.applied_slot);
  if (reply.sessions != 0) pack_u64_field(pk, "sessions", reply.sessions);
  if (!reply.locks.empty()) {
    pack_text(pk, "locks");
    pk.pack_array(static_cast<uint32_t>(reply.locks.size()));
    for (const LockInfo& l : reply.locks) pack_lock_info(pk, l);
  }
  return to_string(buf);
}

Result<LockRequest> decode_lock_request(std::string_view bytes, const Limits& limits, uint64_t* id_out) {
  auto opened = open_envelope(bytes, limits.max_message_bytes(), id_out);
  if (!opened.is_ok()) return opened.status();
  Envelope& env = opened.value();
  FieldReader& r = *env.fields;
  // Built in place: moving a LockRequest into a Result trips GCC 12's
  // -Wmaybe-uninitialized (a false positive on the variant's alternatives).
  Result<LockRequest> request{LockRequest{}};
  request.value().id = env.id;
  if (Status s = read_body(env.type, r, limits, request.value().body); !s.is_ok()) return s;
  if (Status s = r.finish(); !s.is_ok()) return s;
  return request;
}

Result<LockReply> decode_lock_reply(std::string_view bytes, size_t max_bytes) {
  auto opened = open_envelope(bytes, max_bytes, nullptr, /*max_list=*/4096);  // status: up to 1000 locks
  if (!opened.is_ok()) return opened.status();
  Envelope& env = opened.value();
  if (env.type != kReplyType) return Status(Code::kUnknownType, "expected a reply, got '" + env.type + "'");
  FieldReader& r = *env.fields;
  const Limits limits;
  LockReply reply;
  reply.id = env.id;
  StatusFields status;
  status.read(r, max_bytes);
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
  Status s = r.finish();
  if (!s.is_ok()) return s;
  if (Status parsed = status.parse(&reply.status); !parsed.is_ok()) return parsed;
  return reply;
}

}  // namespace palisade::wire
