#include "wire/message_fields.h"

#include <limits>

#include "wire/envelope.h"

namespace palisade::wire {

void pack_u64_field(msgpack::packer<msgpack::sbuffer>& pk, std::string_view name, uint64_t value) {
  pack_text(pk, name);
  pk.pack_uint64(value);
}

void pack_bool_field(msgpack::packer<msgpack::sbuffer>& pk, std::string_view name, bool value) {
  pack_text(pk, name);
  pk.pack(value);
}

void pack_text_field(msgpack::packer<msgpack::sbuffer>& pk, std::string_view name, std::string_view text) {
  pack_text(pk, name);
  pack_text(pk, text);
}

void pack_bytes_field(msgpack::packer<msgpack::sbuffer>& pk, std::string_view name, std::string_view bytes) {
  pack_text(pk, name);
  pack_bytes(pk, bytes);
}

void pack_timestamp_field(msgpack::packer<msgpack::sbuffer>& pk, std::string_view name, const FencedTimestamp& ts) {
  pack_text(pk, name);
  pack_timestamp(pk, ts);
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

}  // namespace palisade::wire
