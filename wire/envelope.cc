#include "wire/envelope.h"

#include "base/cluster_id.h"

namespace palisade::wire {
namespace {

constexpr size_t kMaxTypeBytes = 32;

Result<msgpack::object_handle> unpack_one(std::string_view bytes, size_t max_bytes, size_t max_list) {
  if (bytes.size() > max_bytes) {
    return Status(Code::kTooLarge, "message of " + std::to_string(bytes.size()) + " bytes (limit " +
                                       std::to_string(max_bytes) + ")");
  }
  // No palisade message nests deeper than a list of maps of lists, nor holds ext
  // types; no map has more than 64 fields (FieldReader's checks are quadratic).
  msgpack::unpack_limit limit(max_list, /*map=*/64, max_bytes, max_bytes, /*ext=*/0, /*depth=*/4);
  size_t offset = 0;
  msgpack::object_handle handle;
  try {
    handle = msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
  } catch (const msgpack::size_overflow& e) {
    return Status(Code::kTooLarge, std::string("message exceeds a decoding limit: ") + e.what());
  } catch (const msgpack::insufficient_bytes&) {
    return Status(Code::kMalformed, "truncated MessagePack");
  } catch (const std::exception& e) {
    return Status(Code::kMalformed, std::string("not MessagePack: ") + e.what());
  }
  if (offset != bytes.size()) {
    return Status(Code::kMalformed, std::to_string(bytes.size() - offset) + " trailing bytes after the message");
  }
  return handle;
}

}  // namespace

Result<Envelope> open_envelope(std::string_view bytes, size_t max_bytes, uint64_t* id_out, size_t max_list) {
  if (id_out != nullptr) *id_out = 0;
  auto unpacked = unpack_one(bytes, max_bytes, max_list);
  if (!unpacked.is_ok()) return unpacked.status();
  Envelope env;
  env.handle = std::move(unpacked).value();
  FieldReader& r = env.fields.emplace(env.handle.get(), "message");
  uint64_t version = 0;
  r.u64("id", env.id, Need::kRequired);
  if (id_out != nullptr && r.status().is_ok()) *id_out = env.id;
  r.u64("v", version, Need::kRequired);
  r.bytes("type", env.type, kMaxTypeBytes, Need::kRequired);
  if (!r.status().is_ok()) return r.status();
  if (version != kProtocolVersion) {
    return Status(Code::kUnsupportedVersion, "protocol version " + std::to_string(version) +
                                                 " is not supported (this node speaks " +
                                                 std::to_string(kProtocolVersion) + ")");
  }
  r.set_what(env.type + " message");
  return env;
}

void write_envelope(msgpack::packer<msgpack::sbuffer>& pk, uint32_t field_count, uint64_t id,
                    std::string_view type) {
  pk.pack_map(field_count);
  pack_text(pk, "v");
  pk.pack_uint64(kProtocolVersion);
  pack_text(pk, "id");
  pk.pack_uint64(id);
  pack_text(pk, "type");
  pack_text(pk, type);
}

void write_request_envelope(msgpack::packer<msgpack::sbuffer>& pk, uint32_t field_count, uint64_t id,
                            std::string_view cluster, std::string_view type) {
  write_envelope(pk, field_count + (cluster.empty() ? 0 : 1), id, type);
  if (cluster.empty()) return;
  pack_text(pk, "cluster");
  pack_bytes(pk, cluster);
}

void read_request_cluster(FieldReader& r, std::string& out) {
  r.bytes("cluster", out, kClusterIdBytes, Need::kOptional);
  if (r.status().is_ok() && r.has("cluster") && out.size() != kClusterIdBytes) {
    r.fail(Code::kBadRequest, "field 'cluster' must be the " + std::to_string(kClusterIdBytes) +
                                  " bytes of a cluster id, not " + std::to_string(out.size()));
  }
}

void pack_status(msgpack::packer<msgpack::sbuffer>& pk, const Status& status) {
  pack_text(pk, "code");
  pack_text(pk, code_name(status.code()));
  if (!status.message().empty()) {
    pack_text(pk, "message");
    pack_text(pk, status.message());
  }
}

void StatusFields::read(FieldReader& r, size_t max_message_bytes) {
  r.bytes("code", code, 32, Need::kRequired);
  r.bytes("message", message, max_message_bytes, Need::kOptional);
}

Status StatusFields::parse(Status* out) const {
  auto parsed = code_from_name(code);
  if (!parsed) return Status(Code::kBadRequest, "reply has unknown code '" + code + "'");
  *out = Status(*parsed, message);
  return Status::ok();
}

void pack_bytes(msgpack::packer<msgpack::sbuffer>& pk, std::string_view bytes) {
  pk.pack_bin(static_cast<uint32_t>(bytes.size()));
  pk.pack_bin_body(bytes.data(), static_cast<uint32_t>(bytes.size()));
}

void pack_text(msgpack::packer<msgpack::sbuffer>& pk, std::string_view text) {
  pk.pack_str(static_cast<uint32_t>(text.size()));
  pk.pack_str_body(text.data(), static_cast<uint32_t>(text.size()));
}

void pack_timestamp(msgpack::packer<msgpack::sbuffer>& pk, const FencedTimestamp& ts) {
  auto encoded = ts.encode();
  pk.pack_bin(FencedTimestamp::kEncodedSize);
  pk.pack_bin_body(reinterpret_cast<const char*>(encoded.data()), FencedTimestamp::kEncodedSize);
}

}  // namespace palisade::wire
