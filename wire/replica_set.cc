#include "wire/replica_set.h"

#include <exception>
#include <set>

#include <msgpack.hpp>

namespace palisade::wire {
namespace {

constexpr size_t kMaxAddressBytes = 1024;  // a ZeroMQ endpoint, as for members
constexpr size_t kCurveKeyChars = 40;  // a Z85 CURVE public key

Status bad(std::string message) { return Status(Code::kBadRequest, "replica set: " + std::move(message)); }

void pack_text(msgpack::packer<msgpack::sbuffer>& pk, std::string_view text) {
  pk.pack_str(static_cast<uint32_t>(text.size()));
  pk.pack_str_body(text.data(), static_cast<uint32_t>(text.size()));
}

bool is_text(const msgpack::object& o) { return o.type == msgpack::type::STR; }
bool is_uint(const msgpack::object& o) { return o.type == msgpack::type::POSITIVE_INTEGER; }
std::string text_of(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

Result<ReplicaInfo> decode_replica(const msgpack::object& o) {
  if (o.type != msgpack::type::ARRAY || o.via.array.size != 4) {
    return bad("a replica is not a list [id, address, key, receipt_id]");
  }
  const msgpack::object* f = o.via.array.ptr;
  if (!is_uint(f[0]) || !is_text(f[1]) || !is_text(f[2]) || !is_uint(f[3])) {
    return bad("a replica's fields have the wrong types");
  }
  if (f[0].via.u64 > kMaxReplicaId) return bad("replica id " + std::to_string(f[0].via.u64) + " is not in 1..255");
  return ReplicaInfo{static_cast<uint32_t>(f[0].via.u64), text_of(f[1]), text_of(f[2]), f[3].via.u64};
}

}  // namespace

std::string_view phase_name(ReplicaPhase phase) { return phase == ReplicaPhase::kPaused ? "paused" : "serving"; }

Status check_replicas(const std::vector<ReplicaInfo>& replicas, uint32_t write_quorum, uint32_t read_quorum) {
  if (replicas.empty()) return bad("it must name at least one replica");
  if (replicas.size() > kMaxReplicas) {
    return bad(std::to_string(replicas.size()) + " replicas, more than " + std::to_string(kMaxReplicas));
  }
  std::set<std::string_view> addresses;
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaInfo& r = replicas[i];
    const std::string id = std::to_string(r.id);
    if (r.id == 0 || r.id > kMaxReplicaId) return bad("replica id " + id + " is not in 1..255");
    if (i > 0 && r.id <= replicas[i - 1].id) return bad("replica ids must increase (replica " + id + ")");
    if (r.address.empty()) return bad("replica " + id + " has no address");
    if (r.address.size() > kMaxAddressBytes) return bad("replica " + id + "'s address is over 1024 bytes");
    if (!addresses.insert(r.address).second) return bad("address '" + r.address + "' is listed twice");
    if (!r.key.empty() && r.key.size() != kCurveKeyChars) {
      return bad("replica " + id + "'s key must be 40 characters of Z85");
    }
  }
  // Every read quorum must meet every write quorum, or a read could miss an
  // acknowledged write (docs/consistency.md).
  const size_t n = replicas.size();
  if (write_quorum < 1 || write_quorum > n || read_quorum < 1 || read_quorum > n || read_quorum + write_quorum <= n) {
    return bad("quorums W " + std::to_string(write_quorum) + " and R " + std::to_string(read_quorum) + " of " +
               std::to_string(n) + " replicas cannot meet: each must be 1..N and R + W > N");
  }
  return Status::ok();
}

std::string encode_replica_set(const ReplicaSet& set) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(5);
  pk.pack_uint64(set.version);
  pack_text(pk, phase_name(set.phase));
  pk.pack_array(static_cast<uint32_t>(set.replicas.size()));
  for (const ReplicaInfo& r : set.replicas) {
    pk.pack_array(4);
    pk.pack_uint64(r.id);
    pack_text(pk, r.address);
    pack_text(pk, r.key);
    pk.pack_uint64(r.receipt_id);
  }
  pk.pack_uint64(set.write_quorum);
  pk.pack_uint64(set.read_quorum);
  return {buf.data(), buf.size()};
}

Result<ReplicaSet> decode_replica_set(std::string_view bytes) {
  msgpack::object_handle handle;
  try {
    // Limits of the input's own size never refuse a record and stop a forged
    // length from allocating more than the input justifies.
    const size_t n = bytes.size();
    msgpack::unpack_limit limit(/*array=*/n, /*map=*/0, /*str=*/n, /*bin=*/0, /*ext=*/0, /*depth=*/3);
    size_t offset = 0;
    handle = msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
    if (offset != bytes.size()) return bad("trailing bytes after the record");
  } catch (const std::exception&) {
    return bad("not MessagePack within the record's limits");
  }
  const msgpack::object& o = handle.get();
  if (o.type != msgpack::type::ARRAY || o.via.array.size != 5) {
    return bad("not a list [version, phase, replicas, write_quorum, read_quorum]");
  }
  const msgpack::object* f = o.via.array.ptr;
  if (!is_uint(f[0]) || !is_text(f[1]) || f[2].type != msgpack::type::ARRAY || !is_uint(f[3]) || !is_uint(f[4])) {
    return bad("its fields have the wrong types");
  }
  ReplicaSet set;
  set.version = f[0].via.u64;
  const std::string phase = text_of(f[1]);
  if (phase == phase_name(ReplicaPhase::kPaused)) {
    set.phase = ReplicaPhase::kPaused;
  } else if (phase != phase_name(ReplicaPhase::kServing)) {
    return bad("unknown phase '" + phase + "'");
  }
  if (f[2].via.array.size > kMaxReplicas) return bad("more than 64 replicas");
  for (uint32_t i = 0; i < f[2].via.array.size; ++i) {
    auto replica = decode_replica(f[2].via.array.ptr[i]);
    if (!replica.is_ok()) return replica.status();
    set.replicas.push_back(std::move(replica).value());
  }
  if (f[3].via.u64 > kMaxReplicas || f[4].via.u64 > kMaxReplicas) return bad("a quorum over 64");
  set.write_quorum = static_cast<uint32_t>(f[3].via.u64);
  set.read_quorum = static_cast<uint32_t>(f[4].via.u64);
  if (Status s = check_replicas(set.replicas, set.write_quorum, set.read_quorum); !s.is_ok()) return s;
  return set;
}

}  // namespace palisade::wire
