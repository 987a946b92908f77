// A hand-rolled MessagePack map builder, for messages the encoders never write:
// the codec tests start from a valid message's fields and replace, drop or add
// one to make each kind of bad input.
#pragma once

#include <cstdint>
#include <functional>
#include <msgpack.hpp>
#include <string>
#include <vector>

namespace palisade::test {

using Packer = msgpack::packer<msgpack::sbuffer>;
// Writes one MessagePack value.
using Value = std::function<void(Packer&)>;

struct Field {
  std::string name;
  Value pack;
};
using Fields = std::vector<Field>;

Value u64(uint64_t v);
Value i64(int64_t v);
Value boolean(bool v);
Value str(std::string s);
Value bin(std::string s);
Value nil();
// Bytes written as they are (possibly not even MessagePack).
Value raw(std::string bytes);
// A map or a list, for nesting inside another map.
Value map_value(Fields fields);
Value array_value(std::vector<Value> items);

// The bytes of one map of `fields`, in their order.
std::string map_of(const Fields& fields);

// `fields` with `name` set to `value` (in place when present, else added last).
Fields with(Fields fields, const std::string& name, Value value);
// `fields` without `name`.
Fields without(Fields fields, const std::string& name);
// `fields` followed by `more`.
Fields plus(Fields fields, const Fields& more);

}  // namespace palisade::test
