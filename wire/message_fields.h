// One field of a message map, written and read: a name, then its value.
// Internal to the codecs.
#pragma once

#include <cstdint>
#include <msgpack.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "wire/field_reader.h"
#include "palisade/status.h"
#include "palisade/timestamp.h"

namespace palisade::wire {

void pack_u64_field(msgpack::packer<msgpack::sbuffer>& pk, std::string_view name, uint64_t value);
void pack_bool_field(msgpack::packer<msgpack::sbuffer>& pk, std::string_view name, bool value);
// As MessagePack str.
void pack_text_field(msgpack::packer<msgpack::sbuffer>& pk, std::string_view name, std::string_view text);
// As MessagePack bin.
void pack_bytes_field(msgpack::packer<msgpack::sbuffer>& pk, std::string_view name, std::string_view bytes);
void pack_timestamp_field(msgpack::packer<msgpack::sbuffer>& pk, std::string_view name, const FencedTimestamp& ts);

// An unsigned integer field of at most 2^32-1 (BadRequest when larger).
void read_u32(FieldReader& r, std::string_view name, uint32_t& out, Need need);

// The optional field `name`: a list of at most `max_items` maps, each one read
// into a new element of `out` by `read_item(reader, element)` (its reader names
// it `item_what` in errors, and refuses fields it did not read). BadRequest
// otherwise: "field 'NAME' must be a list of at most N NAME".
template <typename T, typename ReadItem>
void read_map_list(FieldReader& r, std::string_view name, size_t max_items, std::string_view item_what,
                   std::vector<T>& out, ReadItem read_item) {
  const msgpack::object* list = r.object(name, Need::kOptional);
  if (list == nullptr) return;
  if (list->type != msgpack::type::ARRAY || list->via.array.size > max_items) {
    return r.fail(Code::kBadRequest, "field '" + std::string(name) + "' must be a list of at most " +
                                         std::to_string(max_items) + " " + std::string(name));
  }
  for (uint32_t i = 0; i < list->via.array.size; ++i) {
    FieldReader item(list->via.array.ptr[i], item_what);
    read_item(item, out.emplace_back());
    if (Status s = item.finish(); !s.is_ok()) return r.fail(s.code(), s.message());
  }
}

}  // namespace palisade::wire
