// Reads a MessagePack map into typed fields with the checks every message needs:
// required fields present, types right, sizes within limits, no unknown or
// duplicate fields. The first problem found becomes status(); later reads do nothing.
// Internal to the codecs; never seen by public headers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

#include "palisade/status.h"
#include "palisade/timestamp.h"

namespace palisade::wire {

enum class Need { kRequired, kOptional };

class FieldReader {
 public:
  // `map` must outlive the reader. `what` names the message in error texts.
  FieldReader(const msgpack::object& map, std::string_view what);

  void set_what(std::string_view what) { what_ = what; }
  bool has(std::string_view name) const;
  void u64(std::string_view name, uint64_t& out, Need need);
  void boolean(std::string_view name, bool& out, Need need);
  // Accepts MessagePack str or bin; longer than `max_bytes` is TooLarge.
  void bytes(std::string_view name, std::string& out, size_t max_bytes, Need need);
  // The raw value of a field whose shape the caller checks (lists, nested maps).
  const msgpack::object* object(std::string_view name, Need need) { return take(name, need); }
  // 16-byte bin in the encoding of FencedTimestamp::encode.
  void timestamp(std::string_view name, FencedTimestamp& out, Need need);

  // Records a problem the caller found in a field's value (first problem wins).
  void fail(Code code, std::string message);

  // Status of all reads so far, plus BadRequest for any field nobody read.
  Status finish();
  const Status& status() const { return status_; }

 private:
  struct Field {
    std::string_view name;
    const msgpack::object* value;
    bool used = false;
  };
  // The field called `name`, marked used; nullptr (and maybe an error) when absent.
  const msgpack::object* take(std::string_view name, Need need);

  std::string what_;
  std::vector<Field> fields_;
  Status status_;
};

}  // namespace palisade::wire
