#include "tests/unit/msgpack_builder.h"

#include <utility>

namespace palisade::test {

Value u64(uint64_t v) {
  return [v](Packer& pk) { pk.pack_uint64(v); };
}
Value i64(int64_t v) {
  return [v](Packer& pk) { pk.pack_int64(v); };
}
Value boolean(bool v) {
  return [v](Packer& pk) { pk.pack(v); };
}
Value str(std::string s) {
  return [s](Packer& pk) {
    pk.pack_str(static_cast<uint32_t>(s.size()));
    pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
  };
}
Value bin(std::string s) {
  return [s](Packer& pk) {
    pk.pack_bin(static_cast<uint32_t>(s.size()));
    pk.pack_bin_body(s.data(), static_cast<uint32_t>(s.size()));
  };
}
Value nil() {
  return [](Packer& pk) { pk.pack_nil(); };
}
Value raw(std::string bytes) {
  return [bytes](Packer& pk) { pk.pack_bin_body(bytes.data(), static_cast<uint32_t>(bytes.size())); };
}
Value map_value(Fields fields) {
  return [fields](Packer& pk) {
    pk.pack_map(static_cast<uint32_t>(fields.size()));
    for (const Field& f : fields) {
      str(f.name)(pk);
      f.pack(pk);
    }
  };
}
Value array_value(std::vector<Value> items) {
  return [items](Packer& pk) {
    pk.pack_array(static_cast<uint32_t>(items.size()));
    for (const auto& item : items) item(pk);
  };
}

std::string map_of(const Fields& fields) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  map_value(fields)(pk);
  return {buf.data(), buf.size()};
}

Fields with(Fields fields, const std::string& name, Value value) {
  for (Field& f : fields) {
    if (f.name == name) {
      f.pack = std::move(value);
      return fields;
    }
  }
  fields.push_back({name, std::move(value)});
  return fields;
}
Fields without(Fields fields, const std::string& name) {
  std::erase_if(fields, [&](const Field& f) { return f.name == name; });
  return fields;
}
Fields plus(Fields fields, const Fields& more) {
  for (const Field& f : more) fields.push_back(f);
  return fields;
}

}  // namespace palisade::test
