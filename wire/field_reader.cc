#include "wire/field_reader.h"

namespace palisade::wire {

FieldReader::FieldReader(const msgpack::object& map, std::string_view what) : what_(what) {
  if (map.type != msgpack::type::MAP) {
    fail(Code::kMalformed, what_ + " is not a MessagePack map");
    return;
  }
  fields_.reserve(map.via.map.size);
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv& kv = map.via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR) {
      fail(Code::kMalformed, what_ + " has a field name that is not a string");
      return;
    }
    std::string_view name(kv.key.via.str.ptr, kv.key.via.str.size);
    if (has(name)) {
      fail(Code::kMalformed, what_ + " has field '" + std::string(name) + "' twice");
      return;
    }
    fields_.push_back({name, &kv.val});
  }
}

void FieldReader::fail(Code code, std::string message) {
  if (status_.is_ok()) status_ = Status(code, std::move(message));
}

bool FieldReader::has(std::string_view name) const {
  for (const Field& f : fields_) {
    if (f.name == name) return true;
  }
  return false;
}

const msgpack::object* FieldReader::take(std::string_view name, Need need) {
  if (!status_.is_ok()) return nullptr;
  for (Field& f : fields_) {
    if (f.name == name) {
      f.used = true;
      return f.value;
    }
  }
  if (need == Need::kRequired) {
    fail(Code::kBadRequest, what_ + " lacks field '" + std::string(name) + "'");
  }
  return nullptr;
}

void FieldReader::u64(std::string_view name, uint64_t& out, Need need) {
  const msgpack::object* o = take(name, need);
  if (o == nullptr) return;
  if (o->type != msgpack::type::POSITIVE_INTEGER) {
    fail(Code::kBadRequest, "field '" + std::string(name) + "' of " + what_ +
                                " must be a non-negative integer");
    return;
  }
  out = o->via.u64;
}

void FieldReader::boolean(std::string_view name, bool& out, Need need) {
  const msgpack::object* o = take(name, need);
  if (o == nullptr) return;
  if (o->type != msgpack::type::BOOLEAN) {
    fail(Code::kBadRequest, "field '" + std::string(name) + "' of " + what_ + " must be a boolean");
    return;
  }
  out = o->via.boolean;
}

void FieldReader::bytes(std::string_view name, std::string& out, size_t max_bytes, Need need) {
  const msgpack::object* o = take(name, need);
  if (o == nullptr) return;
  std::string_view data;
  if (o->type == msgpack::type::BIN) {
    data = {o->via.bin.ptr, o->via.bin.size};
  } else if (o->type == msgpack::type::STR) {
    data = {o->via.str.ptr, o->via.str.size};
  } else {
    fail(Code::kBadRequest, "field '" + std::string(name) + "' of " + what_ + " must be bin or str");
    return;
  }
  if (data.size() > max_bytes) {
    fail(Code::kTooLarge, "field '" + std::string(name) + "' of " + what_ + " has " +
                              std::to_string(data.size()) + " bytes (limit " + std::to_string(max_bytes) + ")");
    return;
  }
  out.assign(data);
}

void FieldReader::timestamp(std::string_view name, FencedTimestamp& out, Need need) {
  const msgpack::object* o = take(name, need);
  if (o == nullptr) return;
  if (o->type != msgpack::type::BIN || o->via.bin.size != FencedTimestamp::kEncodedSize) {
    fail(Code::kBadRequest, "field '" + std::string(name) + "' of " + what_ + " must be bin of 16 bytes");
    return;
  }
  out = FencedTimestamp::decode(reinterpret_cast<const uint8_t*>(o->via.bin.ptr));
}

Status FieldReader::finish() {
  for (const Field& f : fields_) {
    if (!f.used) fail(Code::kBadRequest, what_ + " has unknown field '" + std::string(f.name) + "'");
  }
  return status_;
}

}  // namespace palisade::wire
