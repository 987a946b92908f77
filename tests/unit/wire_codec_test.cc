// The replica wire codec (docs/protocol.md, "Replica"): every request and reply
// round-trips, and every kind of bad input gets its own Code without crashing.
// Random cases come from fixed seeds so a failure reproduces.
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>
#include <msgpack.hpp>

#include "common/replica_protocol.h"
#include "palisade/timestamp.h"
#include "tests/support/printers.h"


namespace palisade {
namespace {

using wire::CommitRequest;
using wire::FenceRequest;
using wire::Limits;
using wire::PingRequest;
using wire::PurgeRequest;
using wire::ReadRequest;
using wire::ReplicaReply;
using wire::ReplicaRequest;
using wire::Version;
using wire::VersionState;
using wire::WriteRequest;

constexpr uint64_t kSeed = 0x31ce'0000'0001;
constexpr uint64_t kGarbageId = 0xdead'beef;  // what *id_out holds before a call

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < 64; ++i) {
    auto b = static_cast<uint8_t>(bytes[i]);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  if (bytes.size() > 64) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

// ---- A hand-rolled MessagePack map builder, for messages the encoder never writes.

using Packer = msgpack::packer<msgpack::sbuffer>;

struct Field {
  std::string name;
  std::function<void(Packer&)> pack;
};
using Fields = std::vector<Field>;

std::function<void(Packer&)> u64(uint64_t v) {
  return [v](Packer& pk) { pk.pack_uint64(v); };
}
std::function<void(Packer&)> i64(int64_t v) {
  return [v](Packer& pk) { pk.pack_int64(v); };
}
std::function<void(Packer&)> boolean(bool v) {
  return [v](Packer& pk) { pk.pack(v); };
}
std::function<void(Packer&)> str(std::string s) {
  return [s](Packer& pk) {
    pk.pack_str(static_cast<uint32_t>(s.size()));
    pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
  };
}
std::function<void(Packer&)> bin(std::string s) {
  return [s](Packer& pk) {
    pk.pack_bin(static_cast<uint32_t>(s.size()));
    pk.pack_bin_body(s.data(), static_cast<uint32_t>(s.size()));
  };
}
std::function<void(Packer&)> ts_bin(const FencedTimestamp& ts) {
  auto e = ts.encode();
  return bin(std::string(reinterpret_cast<const char*>(e.data()), e.size()));
}
// Bytes written as they are (possibly not even MessagePack).
std::function<void(Packer&)> raw(std::string bytes) {
  return [bytes](Packer& pk) { pk.pack_bin_body(bytes.data(), static_cast<uint32_t>(bytes.size())); };
}

// A map value (for nesting inside another map).
std::function<void(Packer&)> map_value(Fields fields) {
  return [fields](Packer& pk) {
    pk.pack_map(static_cast<uint32_t>(fields.size()));
    for (const Field& f : fields) {
      str(f.name)(pk);
      f.pack(pk);
    }
  };
}
std::function<void(Packer&)> array_value(std::vector<std::function<void(Packer&)>> items) {
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

const FencedTimestamp kTs{7, hlc::make(1'764'479'453'123, 4)};
constexpr uint64_t kId = 4242;

// The fields of a valid write, in the order the encoder writes them.
Fields write_fields() {
  return {{"v", u64(1)},         {"id", u64(kId)},   {"type", str("write")},     {"key", bin("k")},
          {"value", bin("val")}, {"tombstone", boolean(false)}, {"ts", ts_bin(kTs)}, {"lock", str("L")}};
}
const WriteRequest kWrite{"k", "val", false, kTs, "L"};

Fields with(Fields fields, const std::string& name, std::function<void(Packer&)> value) {
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

struct Decoded {
  Code code;
  uint64_t id_out;
  std::string message;
};

Decoded decode(std::string_view bytes, const Limits& limits = {}) {
  uint64_t id = kGarbageId;
  auto r = wire::decode_request(bytes, limits, &id);
  return {r.code(), id, r.status().message()};
}

// ---- Comparing replies (ReplicaReply has no operator==: Status has none).

void check_same_reply(const ReplicaReply& got, const ReplicaReply& want) {
  CHECK(got.id == want.id);
  CHECK(got.status.code() == want.status.code());
  CHECK(got.status.message() == want.status.message());
  CHECK(got.clock == want.clock);
  CHECK(got.floor == want.floor);
  CHECK(got.stored_ts == want.stored_ts);
  CHECK(got.versions == want.versions);
  CHECK(got.floors == want.floors);
  CHECK(got.applied == want.applied);
}

ReplicaReply round_trip_reply(const ReplicaReply& reply) {
  std::string bytes = wire::encode_reply(reply);
  INFO("bytes " << hex(bytes));
  auto decoded = wire::decode_reply(bytes, Limits{});
  INFO(decoded.status().to_string());
  REQUIRE(decoded.is_ok());
  // Encoding what was decoded gives the same bytes.
  CHECK(wire::encode_reply(decoded.value()) == bytes);
  return decoded.value();
}

void check_request_round_trip(const ReplicaRequest& request) {
  std::string bytes = wire::encode_request(request);
  INFO("bytes " << hex(bytes));
  uint64_t id = kGarbageId;
  auto decoded = wire::decode_request(bytes, Limits{}, &id);
  INFO(decoded.status().to_string());
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value() == request);
  CHECK(id == request.id);
  CHECK(wire::encode_request(decoded.value()) == bytes);
}

std::string random_bytes(std::mt19937_64& rng, size_t max_len) {
  std::string s(rng() % (max_len + 1), '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

FencedTimestamp random_ts(std::mt19937_64& rng) {
  return {rng() % 3 == 0 ? 0 : rng(), rng() % 5 == 0 ? UINT64_MAX : rng()};
}

// ---- Round trips.

TEST_CASE("wire: every request type round-trips", "[wire]") {
  const std::vector<std::pair<const char*, ReplicaRequest>> cases = {
      {"ping", {1, PingRequest{}}},
      {"ping with id 0", {0, PingRequest{}}},
      {"write", {2, kWrite}},
      {"write with binary key and value", {UINT64_MAX, WriteRequest{std::string("k\0\xff", 3), std::string("\0\x80v", 3), false, kTs, "lock"}}},
      {"unfenced write with empty value", {3, WriteRequest{"k", "", false, {0, 99}, ""}}},
      {"tombstone write", {4, WriteRequest{"k", "", true, kTs, "L"}}},
      {"committed write", {4, WriteRequest{"k", "v", false, kTs, "L", true}}},
      {"committed tombstone write", {4, WriteRequest{"k", "", true, kTs, "L", true}}},
      {"fence", {5, FenceRequest{"L", 9}}},
      {"fence with the largest token", {6, FenceRequest{"L", UINT64_MAX}}},
      {"fence with a sequencer", {6, FenceRequest{"L", 9, "ps1.abc.def"}}},
      {"write with a sequencer", {4, WriteRequest{"k", "v", false, kTs, "L", false, "ps1.abc.def"}}},
      {"committed tombstone with a sequencer", {4, WriteRequest{"k", "", true, kTs, "L", true, "ps1.x.y"}}},
      {"commit", {7, CommitRequest{"k", kTs}}},
      {"purge", {8, PurgeRequest{"k", {UINT64_MAX, UINT64_MAX}}}},
      {"read", {9, ReadRequest{"k"}}},
      {"read of the empty key", {10, ReadRequest{""}}},
      {"read with the floor of another lock", {11, ReadRequest{"k", "M"}}},
  };
  for (const auto& [name, request] : cases) {
    DYNAMIC_SECTION(name) { check_request_round_trip(request); }
  }
}

TEST_CASE("wire: random requests round-trip", "[wire]") {
  const uint64_t seed = kSeed + 1;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 5'000; ++i) {
    ReplicaRequest r;
    r.id = rng();
    std::string key = random_bytes(rng, 64);
    switch (rng() % 6) {
      case 0:
        r.body = PingRequest{};
        break;
      case 1: {
        bool tombstone = rng() % 3 == 0;
        r.body = WriteRequest{key, tombstone ? "" : random_bytes(rng, 300), tombstone, random_ts(rng), random_bytes(rng, 20),
                              rng() % 2 == 0};
        break;
      }
      case 2:
        r.body = FenceRequest{random_bytes(rng, 20), rng()};
        break;
      case 3:
        r.body = CommitRequest{key, random_ts(rng)};
        break;
      case 4:
        r.body = PurgeRequest{key, random_ts(rng)};
        break;
      default:
        r.body = ReadRequest{key, rng() % 2 == 0 ? "" : random_bytes(rng, 20)};
    }
    INFO("case " << i << ", body index " << r.body.index());
    check_request_round_trip(r);
  }
}

TEST_CASE("wire: our map builder writes what the encoder writes", "[wire]") {
  // The bad-input tests below edit hand-built messages; they start from this one.
  CHECK(map_of(write_fields()) == wire::encode_request({kId, kWrite}));
}

TEST_CASE("wire: every reply shape round-trips", "[wire]") {
  SECTION("ok") {
    ReplicaReply r;
    r.id = 11;
    r.clock = hlc::make(1'764'479'453'123, 9);
    check_same_reply(round_trip_reply(r), r);
  }
  SECTION("fence ok with the floor after") {
    ReplicaReply r;
    r.id = 12;
    r.clock = 5;
    r.floor = 9;
    check_same_reply(round_trip_reply(r), r);
  }
  SECTION("fenced with floor") {
    ReplicaReply r;
    r.id = 13;
    r.status = Status(Code::kFenced, "token 4 is below the fence floor 7 of lock 'L'");
    r.clock = 77;
    r.floor = 7;
    check_same_reply(round_trip_reply(r), r);
  }
  SECTION("stale with stored_ts") {
    ReplicaReply r;
    r.id = 14;
    r.status = Status(Code::kStale, "newer version stored");
    r.clock = 78;
    r.stored_ts = FencedTimestamp{3, hlc::make(100, 2)};
    check_same_reply(round_trip_reply(r), r);
  }
  SECTION("stale with a zero stored_ts") {
    ReplicaReply r;
    r.id = 15;
    r.status = Status(Code::kStale, "");
    r.stored_ts = FencedTimestamp{};
    check_same_reply(round_trip_reply(r), r);
  }
  SECTION("read: committed version with its lock's floor") {
    ReplicaReply r;
    r.id = 16;
    r.clock = 79;
    r.versions = {Version{kTs, "L", VersionState::kCommitted, false, std::string("v\0\xff", 3)}};
    r.floors = {{"L", 4}};
    check_same_reply(round_trip_reply(r), r);
  }
  SECTION("read: pending version without a lock") {
    ReplicaReply r;
    r.id = 17;
    r.versions = {Version{{0, 5}, "", VersionState::kPending, false, "value"}};
    check_same_reply(round_trip_reply(r), r);
  }
  SECTION("read: tombstone") {
    ReplicaReply r;
    r.id = 18;
    r.versions = {Version{kTs, "L", VersionState::kCommitted, true, ""}};
    check_same_reply(round_trip_reply(r), r);
  }
  SECTION("read: pending tombstone") {
    ReplicaReply r;
    r.id = 19;
    r.versions = {Version{kTs, "L", VersionState::kPending, true, ""}};
    check_same_reply(round_trip_reply(r), r);
  }
  SECTION("read: several versions, newest first, and several floors") {
    ReplicaReply r;
    r.id = 22;
    const FencedTimestamp older{kTs.token, kTs.hlc - 10};
    r.versions = {Version{{kTs.token + 1, 3}, "M", VersionState::kPending, false, "newest"},
                  Version{kTs, "L", VersionState::kPending, true, ""},
                  Version{older, "L", VersionState::kCommitted, false, "oldest"}};
    r.floors = {{"L", 7}, {"M", 8}, {"N", UINT64_MAX}};
    ReplicaReply got = round_trip_reply(r);
    check_same_reply(got, r);
    REQUIRE(got.newest() != nullptr);
    CHECK(got.newest()->value == "newest");
  }
  SECTION("read: not found") {
    ReplicaReply r;
    r.id = 20;
    r.clock = 1;
    ReplicaReply got = round_trip_reply(r);
    check_same_reply(got, r);
    CHECK(got.versions.empty());
    CHECK(got.newest() == nullptr);
  }
  SECTION("applied") {
    ReplicaReply r;
    r.id = 21;
    r.applied = true;
    check_same_reply(round_trip_reply(r), r);
  }
  SECTION("error replies of every code") {
    for (int c = 0; c <= static_cast<int>(Code::kInternal); ++c) {
      const auto code = static_cast<Code>(c);
      INFO("code " << code_name(code));
      ReplicaReply r = wire::error_reply(UINT64_MAX - static_cast<uint64_t>(c), Status(code, "because " + std::to_string(c)));
      check_same_reply(round_trip_reply(r), r);
    }
  }
}

TEST_CASE("wire: decode_reply rejects what is not a reply", "[wire]") {
  Limits limits;
  // A request is not a reply.
  CHECK(wire::decode_reply(wire::encode_request({1, PingRequest{}}), limits).code() == Code::kUnknownType);
  const Fields reply = {{"v", u64(1)}, {"id", u64(3)}, {"type", str("reply")}, {"code", str("ok")}, {"clock", u64(1)}};
  REQUIRE(wire::decode_reply(map_of(reply), limits).is_ok());
  CHECK(wire::decode_reply(map_of(with(reply, "code", str("no_such_code"))), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_reply(map_of(without(reply, "clock")), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_reply(map_of(without(reply, "code")), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_reply(map_of(with(reply, "extra", u64(1))), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_reply(map_of(with(reply, "v", u64(2))), limits).code() == Code::kUnsupportedVersion);
  CHECK(wire::decode_reply(map_of(with(reply, "stored_ts", bin("short"))), limits).code() == Code::kBadRequest);

  const Fields version = {{"ts", ts_bin(kTs)},
                          {"lock", str("L")},
                          {"state", str("committed")},
                          {"tombstone", boolean(false)},
                          {"value", bin("x")}};
  auto with_versions = [&](std::vector<std::function<void(Packer&)>> items) {
    return map_of(with(reply, "versions", array_value(std::move(items))));
  };
  auto read = wire::decode_reply(with_versions({map_value(version)}), limits);
  REQUIRE(read.is_ok());
  REQUIRE(read.value().versions.size() == 1);
  CHECK(read.value().versions[0] == Version{kTs, "L", VersionState::kCommitted, false, "x"});
  CHECK(wire::decode_reply(with_versions({map_value(with(version, "state", str("weird")))}), limits).code() ==
        Code::kBadRequest);
  CHECK(wire::decode_reply(with_versions({map_value(without(version, "value"))}), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_reply(with_versions({map_value(with(version, "extra", u64(1)))}), limits).code() ==
        Code::kBadRequest);
  CHECK(wire::decode_reply(with_versions({map_value(with(version, "ts", bin("short")))}), limits).code() ==
        Code::kBadRequest);
  CHECK(wire::decode_reply(with_versions({map_value(with(version, "tombstone", u64(0)))}), limits).code() ==
        Code::kBadRequest);
  // A version that is not a map: refused (its exact code is the codec's business).
  CHECK_FALSE(wire::decode_reply(with_versions({u64(5)}), limits).is_ok());
  // More versions than a replica keeps.
  std::vector<std::function<void(Packer&)>> too_many(Limits::kMaxVersionsPerKey + 1, map_value(version));
  CHECK(wire::decode_reply(with_versions(too_many), limits).code() == Code::kBadRequest);
  too_many.pop_back();
  CHECK(wire::decode_reply(with_versions(too_many), limits).is_ok());
  CHECK(wire::decode_reply(map_of(with(reply, "versions", u64(1))), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_reply(map_of(with(reply, "versions", map_value(version))), limits).code() == Code::kBadRequest);
  // Floors: lock name to non-negative integer.
  CHECK(wire::decode_reply(map_of(with(reply, "floors", map_value({{"L", u64(3)}}))), limits).is_ok());
  CHECK(wire::decode_reply(map_of(with(reply, "floors", map_value({{"L", str("3")}}))), limits).code() ==
        Code::kBadRequest);
  CHECK(wire::decode_reply(map_of(with(reply, "floors", map_value({{"L", i64(-3)}}))), limits).code() ==
        Code::kBadRequest);
  CHECK(wire::decode_reply(map_of(with(reply, "floors", map_value({{std::string(limits.max_lock_bytes + 1, 'L'), u64(3)}}))),
                           limits)
            .code() == Code::kBadRequest);
  CHECK(wire::decode_reply(map_of(with(reply, "floors", u64(3))), limits).code() == Code::kBadRequest);
  // Version fields belong inside "versions": at the top level they are unknown.
  Fields old_shape = reply;
  old_shape.push_back({"found", boolean(true)});
  for (const Field& f : version) old_shape.push_back(f);
  CHECK(wire::decode_reply(map_of(old_shape), limits).code() == Code::kBadRequest);
  std::string bytes = map_of(reply);
  CHECK(wire::decode_reply(bytes + '\x00', limits).code() == Code::kMalformed);
  CHECK(wire::decode_reply(bytes.substr(0, bytes.size() - 1), limits).code() == Code::kMalformed);
}

// ---- Bad input.

TEST_CASE("wire: random garbage never crashes and is never accepted", "[wire]") {
  const uint64_t seed = kSeed + 2;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const Limits limits;
  for (int i = 0; i < 50'000; ++i) {
    std::string bytes = random_bytes(rng, 80);
    // Often start like a map, so that decoding gets past the first byte.
    if (!bytes.empty() && i % 2 == 0) bytes[0] = static_cast<char>(0x80 | (rng() % 16));
    INFO("case " << i << ": " << hex(bytes));
    Decoded d = decode(bytes, limits);
    REQUIRE(d.code != Code::kOk);
    REQUIRE((d.code == Code::kMalformed || d.code == Code::kBadRequest || d.code == Code::kTooLarge ||
             d.code == Code::kUnknownType || d.code == Code::kUnsupportedVersion));
    REQUIRE_FALSE(d.message.empty());
    REQUIRE_FALSE(wire::decode_reply(bytes, limits).is_ok());
  }
}

std::string stale_reply_bytes() {
  ReplicaReply r;
  r.id = kId;
  r.status = Status(Code::kStale, "x");
  r.clock = 1;
  r.stored_ts = kTs;
  r.applied = true;
  return wire::encode_reply(r);
}

std::string read_reply_bytes() {
  ReplicaReply r;
  r.id = kId;
  r.clock = 1;
  r.versions = {Version{kTs, "L", VersionState::kCommitted, false, "v"},
                Version{{1, 2}, "M", VersionState::kPending, true, ""}};
  r.floors = {{"L", 3}, {"M", 4}};
  return wire::encode_reply(r);
}

TEST_CASE("wire: mutated valid messages never crash", "[wire]") {
  const uint64_t seed = kSeed + 3;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const Limits limits;
  const std::vector<std::string> valid = {
      wire::encode_request({kId, kWrite}),
      wire::encode_request({kId, WriteRequest{"k", "", true, kTs, "L"}}),
      wire::encode_request({kId, FenceRequest{"L", 3}}),
      wire::encode_request({kId, CommitRequest{"k", kTs}}),
      stale_reply_bytes(),
      read_reply_bytes(),
  };
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 50'000; ++i) {
    std::string bytes = valid[rng() % valid.size()];
    for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    INFO("case " << i << ": " << hex(bytes));
    Decoded d = decode(bytes, limits);
    auto reply = wire::decode_reply(bytes, limits);
    (d.code == Code::kOk ? accepted : rejected)++;
    if (d.code == Code::kOk) {
      // Whatever was accepted re-encodes to something that decodes the same.
      auto again = wire::decode_request(wire::encode_request(wire::decode_request(bytes, limits).value()), limits);
      REQUIRE(again.is_ok());
      REQUIRE(again.value() == wire::decode_request(bytes, limits).value());
    } else {
      REQUIRE_FALSE(d.message.empty());
    }
    if (!reply.is_ok()) REQUIRE_FALSE(reply.status().message().empty());
  }
  CHECK(accepted > 100);
  CHECK(rejected > 100);
}

TEST_CASE("wire: every truncation of a valid write is Malformed", "[wire]") {
  const std::string bytes = wire::encode_request({kId, kWrite});
  REQUIRE(decode(bytes).code == Code::kOk);
  for (size_t len = 0; len < bytes.size(); ++len) {
    INFO("first " << len << " of " << bytes.size() << " bytes");
    Decoded d = decode(bytes.substr(0, len));
    CHECK(d.code == Code::kMalformed);
    CHECK(d.id_out == 0);
  }
}

TEST_CASE("wire: trailing bytes are Malformed", "[wire]") {
  const std::string bytes = wire::encode_request({kId, kWrite});
  for (const std::string& tail : {std::string(1, '\0'), std::string("\xc0"), std::string("\x01\x02\x03"), bytes}) {
    INFO("tail " << hex(tail));
    Decoded d = decode(bytes + tail);
    CHECK(d.code == Code::kMalformed);
    CHECK(d.id_out == 0);
  }
}

TEST_CASE("wire: a message that is not a map is Malformed", "[wire]") {
  msgpack::sbuffer array_buf;
  Packer(array_buf).pack(std::vector<int>{1, 2, 3});
  msgpack::sbuffer int_buf;
  Packer(int_buf).pack_uint64(5);
  msgpack::sbuffer str_buf;
  Packer(str_buf).pack(std::string("write"));
  msgpack::sbuffer nil_buf;
  Packer(nil_buf).pack_nil();
  for (const msgpack::sbuffer* buf : {&array_buf, &int_buf, &str_buf, &nil_buf}) {
    std::string bytes(buf->data(), buf->size());
    INFO(hex(bytes));
    Decoded d = decode(bytes);
    CHECK(d.code == Code::kMalformed);
    CHECK(d.id_out == 0);
  }
  // Nor is a byte that is not MessagePack at all.
  CHECK(decode("\xc1").code == Code::kMalformed);
  // A map whose field name is not a string.
  msgpack::sbuffer int_key;
  Packer pk(int_key);
  pk.pack_map(1);
  pk.pack_uint64(1);
  pk.pack_uint64(2);
  CHECK(decode(std::string(int_key.data(), int_key.size())).code == Code::kMalformed);
}

TEST_CASE("wire: envelope problems and id_out", "[wire]") {
  struct Case {
    const char* name;
    Fields fields;
    Code code;
    uint64_t id_out;
  };
  const std::vector<Case> cases = {
      {"valid", write_fields(), Code::kOk, kId},
      {"missing id", without(write_fields(), "id"), Code::kBadRequest, 0},
      {"missing v", without(write_fields(), "v"), Code::kBadRequest, kId},
      {"missing type", without(write_fields(), "type"), Code::kBadRequest, kId},
      {"id as string", with(write_fields(), "id", str("4242")), Code::kBadRequest, 0},
      {"negative id", with(write_fields(), "id", i64(-1)), Code::kBadRequest, 0},
      {"v as string", with(write_fields(), "v", str("1")), Code::kBadRequest, kId},
      {"type as int", with(write_fields(), "type", u64(1)), Code::kBadRequest, kId},
      {"version 2", with(write_fields(), "v", u64(2)), Code::kUnsupportedVersion, kId},
      {"version 0", with(write_fields(), "v", u64(0)), Code::kUnsupportedVersion, kId},
      {"unknown type", with(write_fields(), "type", str("frobnicate")), Code::kUnknownType, kId},
      {"reply type in a request", with(write_fields(), "type", str("reply")), Code::kUnknownType, kId},
      {"type name over 32 bytes", with(write_fields(), "type", str(std::string(33, 'w'))), Code::kTooLarge, kId},
      {"duplicate field", [] { auto f = write_fields(); f.push_back({"key", bin("k2")}); return f; }(), Code::kMalformed, 0},
      {"duplicate id", [] { auto f = write_fields(); f.push_back({"id", u64(kId)}); return f; }(), Code::kMalformed, 0},
      {"unknown field", with(write_fields(), "colour", str("blue")), Code::kBadRequest, kId},
      {"largest id", with(write_fields(), "id", u64(UINT64_MAX)), Code::kOk, UINT64_MAX},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      Decoded d = decode(map_of(c.fields));
      INFO(d.message);
      CHECK(d.code == c.code);
      CHECK(d.id_out == c.id_out);
      if (c.code != Code::kOk) CHECK_FALSE(d.message.empty());
    }
  }
}

TEST_CASE("wire: wrong field types are BadRequest", "[wire]") {
  const Fields fence = {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("fence")}, {"lock", str("L")}, {"token", u64(3)}};
  const Fields commit = {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("commit")}, {"key", bin("k")}, {"ts", ts_bin(kTs)}};
  REQUIRE(decode(map_of(fence)).code == Code::kOk);
  REQUIRE(decode(map_of(commit)).code == Code::kOk);
  const auto ts_bytes = kTs.encode();
  const std::string ts16(reinterpret_cast<const char*>(ts_bytes.data()), ts_bytes.size());
  struct Case {
    const char* name;
    Fields fields;
  };
  const std::vector<Case> cases = {
      {"key as int", with(write_fields(), "key", u64(5))},
      {"key as bool", with(write_fields(), "key", boolean(true))},
      {"key as array", with(write_fields(), "key", raw("\x91\x01"))},
      {"value as int", with(write_fields(), "value", u64(5))},
      {"value missing", without(write_fields(), "value")},
      {"ts missing", without(write_fields(), "ts")},
      {"key missing", without(write_fields(), "key")},
      {"ts of 15 bytes", with(write_fields(), "ts", bin(ts16.substr(0, 15)))},
      {"ts of 17 bytes", with(write_fields(), "ts", bin(ts16 + "x"))},
      {"ts of 0 bytes", with(write_fields(), "ts", bin(""))},
      {"ts as str of 16 bytes", with(write_fields(), "ts", str(ts16))},
      {"ts as int", with(write_fields(), "ts", u64(12))},
      {"tombstone as int", with(write_fields(), "tombstone", u64(1))},
      {"tombstone as string", with(write_fields(), "tombstone", str("true"))},
      {"tombstone with a value", with(write_fields(), "tombstone", boolean(true))},
      {"lock as int", with(write_fields(), "lock", u64(1))},
      {"token as string", with(fence, "token", str("3"))},
      {"negative token", with(fence, "token", i64(-3))},
      // float64 3.0 written by hand: msgpack-c's packer would write an integral double as an integer.
      {"token as float", with(fence, "token", raw(std::string("\xcb\x40\x08\0\0\0\0\0\0", 9)))},
      {"token as float32", with(fence, "token", raw(std::string("\xca\x40\x40\0\0", 5)))},
      {"token missing", without(fence, "token")},
      {"fence lock missing", without(fence, "lock")},
      {"commit ts of 15 bytes", with(commit, "ts", bin(ts16.substr(0, 15)))},
      {"commit key as nil", with(commit, "key", [](Packer& pk) { pk.pack_nil(); })},
      {"ping with a field", {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("ping")}, {"key", bin("k")}}},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      Decoded d = decode(map_of(c.fields));
      INFO(d.message);
      CHECK(d.code == Code::kBadRequest);
      CHECK(d.id_out == kId);
      CHECK_FALSE(d.message.empty());
    }
  }
}

TEST_CASE("wire: size limits are TooLarge", "[wire]") {
  const Limits limits;
  SECTION("key") {
    const std::string at_limit(limits.max_key_bytes, 'k');
    CHECK(decode(map_of(with(write_fields(), "key", bin(at_limit))), limits).code == Code::kOk);
    CHECK(decode(map_of(with(write_fields(), "key", bin(at_limit + "k"))), limits).code == Code::kTooLarge);
    CHECK(decode(wire::encode_request({1, ReadRequest{at_limit + "k"}}), limits).code == Code::kTooLarge);
    CHECK(decode(wire::encode_request({1, CommitRequest{at_limit + "k", kTs}}), limits).code == Code::kTooLarge);
    CHECK(decode(wire::encode_request({1, PurgeRequest{at_limit + "k", kTs}}), limits).code == Code::kTooLarge);
  }
  SECTION("value") {
    const std::string at_limit(limits.max_value_bytes, 'v');
    CHECK(decode(map_of(with(write_fields(), "value", bin(at_limit))), limits).code == Code::kOk);
    Decoded d = decode(map_of(with(write_fields(), "value", bin(at_limit + "v"))), limits);
    CHECK(d.code == Code::kTooLarge);
    CHECK(d.id_out == kId);
  }
  SECTION("lock") {
    const std::string at_limit(limits.max_lock_bytes, 'L');
    CHECK(decode(wire::encode_request({1, FenceRequest{at_limit, 1}}), limits).code == Code::kOk);
    CHECK(decode(wire::encode_request({1, FenceRequest{at_limit + "L", 1}}), limits).code == Code::kTooLarge);
    CHECK(decode(map_of(with(write_fields(), "lock", str(at_limit + "L"))), limits).code == Code::kTooLarge);
  }
  SECTION("sequencer") {
    const std::string at_limit(Limits::kMaxSequencerBytes, 's');
    CHECK(decode(wire::encode_request({1, FenceRequest{"L", 1, at_limit}}), limits).code == Code::kOk);
    CHECK(decode(wire::encode_request({1, FenceRequest{"L", 1, at_limit + "s"}}), limits).code == Code::kTooLarge);
    CHECK(decode(map_of(with(write_fields(), "sequencer", str(at_limit))), limits).code == Code::kOk);
    CHECK(decode(map_of(with(write_fields(), "sequencer", str(at_limit + "s"))), limits).code == Code::kTooLarge);
    // The largest key, value, lock and sequencer fit in one message.
    WriteRequest w{std::string(limits.max_key_bytes, 'k'), std::string(limits.max_value_bytes, 'v'), false, kTs,
                   std::string(limits.max_lock_bytes, 'L'), true, at_limit};
    CHECK(decode(wire::encode_request({UINT64_MAX, w}), limits).code == Code::kOk);
  }
  SECTION("whole message") {
    // Small limits; every field within its own limit, the message over the total.
    // The padding field is unknown, so without the total check this would be BadRequest.
    Limits small;
    small.max_key_bytes = 8;
    small.max_value_bytes = 8;
    small.max_lock_bytes = 8;
    const std::string base = map_of(write_fields());
    const size_t pad = small.max_message_bytes() + 1 - base.size() - 3 /*"pad"*/ - 1 /*str header*/ - 3 /*bin16 header*/;
    // The map header grows by nothing: 9 entries still fit a fixmap.
    const std::string over = map_of(with(write_fields(), "pad", bin(std::string(pad, 'p'))));
    REQUIRE(over.size() == small.max_message_bytes() + 1);
    Decoded d = decode(over, small);
    CHECK(d.code == Code::kTooLarge);
    CHECK(d.id_out == 0);
    const std::string at_limit = map_of(with(write_fields(), "pad", bin(std::string(pad - 1, 'p'))));
    REQUIRE(at_limit.size() == small.max_message_bytes());
    CHECK(decode(at_limit, small).code == Code::kBadRequest);  // size fine; "pad" is unknown
    // Also far over the limit with default limits.
    CHECK(decode(std::string(limits.max_message_bytes() + 1, '\x90'), limits).code == Code::kTooLarge);
  }
}

TEST_CASE("wire: nesting beyond the depth limit is TooLarge", "[wire]") {
  for (size_t depth : {size_t{5}, size_t{16}, size_t{1000}, size_t{100'000}}) {
    INFO("depth " << depth);
    // key: [[[...[1]...]]]
    std::string nested(depth, '\x91');
    nested += '\x01';
    Decoded d = decode(map_of(with(write_fields(), "key", raw(nested))));
    CHECK(d.code == Code::kTooLarge);
    // A bare nest of arrays, with no envelope at all.
    CHECK(decode(nested).code == Code::kTooLarge);
    // And of maps.
    std::string maps;
    for (size_t i = 0; i < depth; ++i) maps += "\x81\xa1k";
    maps += '\x01';
    CHECK(decode(maps).code == Code::kTooLarge);
  }
  // Within the depth limit, a nested value is just the wrong type.
  CHECK(decode(map_of(with(write_fields(), "key", raw("\x91\x91\x01")))).code == Code::kBadRequest);
}

TEST_CASE("wire: huge declared sizes in a tiny buffer", "[wire]") {
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
      Decoded d = decode(c.bytes);
      INFO(d.message);
      CHECK(d.code == c.code);
      CHECK(d.id_out == 0);
      CHECK(wire::decode_reply(c.bytes, Limits{}).code() == c.code);
    }
  }
  SECTION("inside a valid envelope") {
    Decoded d = decode(map_of(with(write_fields(), "key", raw(std::string("\xdf\xff\xff\xff\xff", 5)))));
    CHECK(d.code == Code::kTooLarge);
    d = decode(map_of(with(write_fields(), "key", raw(std::string("\xdd\xff\xff\xff\xff", 5)))));
    CHECK(d.code == Code::kTooLarge);
  }
}

}  // namespace
}  // namespace palisade
