#include "tests/unit/bad_request_checks.h"

#include <catch2/catch.hpp>
#include <random>

#include "tests/support/printers.h"
#include "tests/unit/hex_text.h"
#include "tests/unit/random_bytes.h"

namespace palisade::test {
namespace {

void check_malformed(const std::string& bytes, const RequestDecoder& decode) {
  INFO(hex_head(bytes));
  Decoded d = decode(bytes, wire::Limits{});
  CHECK(d.code == Code::kMalformed);
  CHECK(d.id_out == 0);
  CHECK_FALSE(d.message.empty());
}

std::string packed(const Value& value) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  value(pk);
  return {buf.data(), buf.size()};
}

// `valid` with an unknown field "pad" that makes it exactly `size` bytes long.
std::string padded_to(const Fields& valid, size_t size) {
  const size_t bare = map_of(with(valid, "pad", bin(""))).size();
  REQUIRE(size > bare + 4);
  // The bin's header grows with its length: from 2 bytes to 3 or 5.
  for (size_t header_growth : {0, 1, 3}) {
    std::string bytes = map_of(with(valid, "pad", bin(std::string(size - bare - header_growth, 'p'))));
    if (bytes.size() == size) return bytes;
  }
  FAIL("no padding makes the message " << size << " bytes long");
  return {};
}

}  // namespace

std::vector<WireCase> envelope_cases(const Fields& valid, uint64_t id) {
  Fields twice = valid;
  twice.push_back({"id", u64(id)});
  return {
      {"valid", valid, Code::kOk, id},
      {"missing id", without(valid, "id"), Code::kBadRequest, 0},
      {"missing v", without(valid, "v"), Code::kBadRequest, id},
      {"missing type", without(valid, "type"), Code::kBadRequest, id},
      {"id as string", with(valid, "id", str(std::to_string(id))), Code::kBadRequest, 0},
      {"negative id", with(valid, "id", i64(-1)), Code::kBadRequest, 0},
      {"v as string", with(valid, "v", str("1")), Code::kBadRequest, id},
      {"type as int", with(valid, "type", u64(1)), Code::kBadRequest, id},
      {"version 2", with(valid, "v", u64(2)), Code::kUnsupportedVersion, id},
      {"version 0", with(valid, "v", u64(0)), Code::kUnsupportedVersion, id},
      {"unknown type", with(valid, "type", str("frobnicate")), Code::kUnknownType, id},
      {"reply type in a request", with(valid, "type", str("reply")), Code::kUnknownType, id},
      {"type name over 32 bytes", with(valid, "type", str(std::string(33, 'w'))), Code::kTooLarge, id},
      {"duplicate id", twice, Code::kMalformed, 0},
      {"unknown field", with(valid, "colour", str("blue")), Code::kBadRequest, id},
      {"largest id", with(valid, "id", u64(UINT64_MAX)), Code::kOk, UINT64_MAX},
  };
}

std::vector<WireCase> bad_request_cases(uint64_t id, const std::vector<NamedFields>& cases) {
  std::vector<WireCase> out;
  for (const NamedFields& c : cases) out.push_back({c.name, c.fields, Code::kBadRequest, id});
  return out;
}

void check_cases(const std::vector<WireCase>& cases, const RequestDecoder& decode) {
  for (const WireCase& c : cases) {
    DYNAMIC_SECTION(c.name) {
      Decoded d = decode(map_of(c.fields), wire::Limits{});
      INFO(d.message);
      CHECK(d.code == c.code);
      CHECK(d.id_out == c.id_out);
      if (c.code != Code::kOk) CHECK_FALSE(d.message.empty());
    }
  }
}

void check_not_messagepack_is_malformed(const RequestDecoder& decode) {
  for (const std::string& bytes : {std::string("\xc1"), std::string("hello"), std::string()}) {
    check_malformed(bytes, decode);
  }
}

void check_not_a_map_is_malformed(const RequestDecoder& decode) {
  for (const Value& value : {array_value({u64(1), u64(2), u64(3)}), u64(5), str("write"), nil()}) {
    check_malformed(packed(value), decode);
  }
  // A map whose field name is not a string.
  msgpack::sbuffer int_key;
  Packer pk(int_key);
  pk.pack_map(1);
  pk.pack_uint64(1);
  pk.pack_uint64(2);
  check_malformed(std::string(int_key.data(), int_key.size()), decode);
}

void check_every_truncation_is_malformed(const std::string& valid, const RequestDecoder& decode) {
  REQUIRE(decode(valid, wire::Limits{}).code == Code::kOk);
  for (size_t len = 0; len < valid.size(); ++len) {
    INFO("first " << len << " of " << valid.size() << " bytes");
    check_malformed(valid.substr(0, len), decode);
  }
}

void check_trailing_bytes_are_malformed(const std::string& valid, const RequestDecoder& decode) {
  for (const std::string& tail : {std::string(1, '\0'), std::string("\xc0"), std::string("\x01\x02\x03"), valid}) {
    INFO("tail " << hex_head(tail));
    check_malformed(valid + tail, decode);
  }
}

void check_whole_message_limit(const Fields& valid, const RequestDecoder& decode) {
  // Small limits; every field within its own limit, the message over the total.
  // The padding field is unknown, so without the total check this would be BadRequest.
  wire::Limits small;
  small.max_key_bytes = 8;
  small.max_value_bytes = 8;
  small.max_lock_bytes = 8;
  Decoded d = decode(padded_to(valid, small.max_message_bytes() + 1), small);
  CHECK(d.code == Code::kTooLarge);
  CHECK(d.id_out == 0);
  CHECK(decode(padded_to(valid, small.max_message_bytes()), small).code == Code::kBadRequest);
  // Also far over the limit with default limits.
  const wire::Limits limits;
  CHECK(decode(std::string(limits.max_message_bytes() + 1, '\x90'), limits).code == Code::kTooLarge);
}

void check_nesting_limit(const Fields& valid, const std::string& field, const RequestDecoder& decode) {
  const wire::Limits limits;
  for (size_t depth : {size_t{5}, size_t{16}, size_t{1000}, size_t{100'000}}) {
    INFO("depth " << depth);
    // field: [[[...[1]...]]]
    std::string nested(depth, '\x91');
    nested += '\x01';
    CHECK(decode(map_of(with(valid, field, raw(nested))), limits).code == Code::kTooLarge);
    // A bare nest of arrays, with no envelope at all.
    CHECK(decode(nested, limits).code == Code::kTooLarge);
    // And of maps.
    std::string maps;
    for (size_t i = 0; i < depth; ++i) maps += "\x81\xa1k";
    maps += '\x01';
    CHECK(decode(maps, limits).code == Code::kTooLarge);
  }
  // Within the depth limit, a nested value is just the wrong type.
  CHECK(decode(map_of(with(valid, field, raw("\x91\x91\x01"))), limits).code == Code::kBadRequest);
}

void check_huge_declared_sizes(const Fields& valid, const std::string& field, const RequestDecoder& decode,
                               const ReplyDecoder& decode_reply) {
  struct Case {
    const char* name;
    std::string bytes;
    Code code;
  };
  const std::vector<Case> cases = {
      // Over the entry-count limits: refused before anything is allocated.
      {"map32 of 2^32-1 entries", std::string("\xdf\xff\xff\xff\xff", 5), Code::kTooLarge},
      {"array32 of 2^32-1 entries", std::string("\xdd\xff\xff\xff\xff", 5), Code::kTooLarge},
      {"map16 of 65535 entries", std::string("\xde\xff\xff", 3), Code::kTooLarge},
      {"map32 of 65 entries", std::string("\xdf\x00\x00\x00\x41", 5), Code::kTooLarge},
      // Within the limits, but the entries are missing.
      {"map32 of 64 entries", std::string("\xdf\x00\x00\x00\x40", 5), Code::kMalformed},
      // Strings and binaries must be there in full before their size is judged.
      {"str32 of 4 GiB", std::string("\xdb\xff\xff\xff\xff", 5), Code::kMalformed},
      {"bin32 of 4 GiB", std::string("\xc6\xff\xff\xff\xff", 5), Code::kMalformed},
      {"map with a str32 of 4 GiB", std::string("\x81\xdb\xff\xff\xff\xff", 6), Code::kMalformed},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      Decoded d = decode(c.bytes, wire::Limits{});
      INFO(d.message);
      CHECK(d.code == c.code);
      CHECK(d.id_out == 0);
      CHECK(decode_reply(c.bytes).code() == c.code);
    }
  }
  SECTION("inside a valid envelope") {
    for (const char* declared : {"\xdf\xff\xff\xff\xff", "\xdd\xff\xff\xff\xff"}) {
      CHECK(decode(map_of(with(valid, field, raw(std::string(declared, 5)))), wire::Limits{}).code == Code::kTooLarge);
    }
  }
}

bool is_decode_error(Code code) {
  return code == Code::kMalformed || code == Code::kBadRequest || code == Code::kTooLarge ||
         code == Code::kUnknownType || code == Code::kUnsupportedVersion;
}

void check_random_garbage_is_refused(uint64_t seed, const RequestDecoder& decode, const ReplyDecoder& decode_reply) {
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const wire::Limits limits;
  for (int i = 0; i < 50'000; ++i) {
    std::string bytes = random_bytes(rng, 80);
    // Often start like a map, so that decoding gets past the first byte.
    if (!bytes.empty() && i % 2 == 0) bytes[0] = static_cast<char>(0x80 | (rng() % 16));
    INFO("case " << i << ": " << hex_head(bytes));
    Decoded d = decode(bytes, limits);
    REQUIRE(d.code != Code::kOk);
    REQUIRE(is_decode_error(d.code));
    REQUIRE_FALSE(d.message.empty());
    Status reply = decode_reply(bytes);
    REQUIRE_FALSE(reply.is_ok());
    REQUIRE(is_decode_error(reply.code()));
  }
}

void for_each_mutation(uint64_t seed, const std::vector<std::string>& valid, int count,
                       const std::function<void(const std::string& bytes)>& check) {
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < count; ++i) {
    std::string bytes = valid[rng() % valid.size()];
    for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    INFO("case " << i << ": " << hex_head(bytes));
    check(bytes);
  }
}

}  // namespace palisade::test
