// The codec of the messages between palisade-lockd nodes (lockgroup/paxos_messages.h):
// every message type round-trips, and every kind of bad input gets its own Code
// without crashing. Random cases come from fixed seeds so a failure reproduces.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

#include "lockgroup/paxos_messages.h"
#include "tests/support/printers.h"
#include "tests/unit/hex_text.h"
#include "tests/unit/msgpack_builder.h"

namespace palisade::lockgroup {
namespace {

using namespace std::string_literals;
using test::bin;
using test::boolean;
using test::hex_head;
using test::i64;
using test::nil;
using test::Packer;
using test::raw;
using test::str;
using test::u64;
using PackFn = test::Value;

constexpr uint64_t kSeed = 0x9a05'0000'0001;
constexpr size_t kMaxBytes = size_t{4} << 20;

Result<PeerMessage> decode(std::string_view bytes, size_t max_bytes = kMaxBytes) {
  return decode_peer(bytes, max_bytes);
}

const char* type_of(const PeerMessage& m) {
  static const char* names[] = {"prepare",          "promise",  "accept",   "accepted",
                                "catch_up_request", "catch_up", "step_down"};
  return names[m.body.index()];
}

PeerMessage msg(PeerBody body, NodeId from = 3, NodeId to = 5, uint64_t group = 0xfeed'beef'cafe'f00d,
                uint64_t incarnation = 1'764'000'000'000'000, uint64_t serial = 77) {
  return PeerMessage{from, to, group, incarnation, serial, std::move(body)};
}

// One message of each type, with every list non-empty (the bad-input tests
// below edit these, down to the fields of the entries).
std::vector<PeerMessage> samples() {
  const Ballot b = make_ballot(41, 3);
  return {
      msg(Prepare{b, 17, 900}),
      msg(Promise{b, true, b, 901, 12,
                  {Entry{17, make_ballot(40, 2), "x\0y"s}, Entry{18, make_ballot(40, 2), ""},
                   Entry{20, make_ballot(39, 1), std::string(300, '\xff')}}}),
      msg(Accept{b, 902, 16, {Entry{19, b, "batch of commands"}, Entry{20, b, ""}}}),
      msg(Accepted{b, false, make_ballot(42, 5), 903, {19, 20, UINT64_MAX}}),
      msg(CatchUpRequest{21}),
      msg(CatchUp{12, "snapshot\0bytes"s, {Entry{13, b, "a"}, Entry{14, b, "b"}}}),
      msg(StepDown{b, 4}),
  };
}

void check_round_trip(const PeerMessage& m, size_t max_bytes = kMaxBytes) {
  std::string bytes = encode_peer(m);
  INFO("type " << type_of(m) << ", bytes " << hex_head(bytes));
  auto decoded = decode(bytes, max_bytes);
  INFO(decoded.status().to_string());
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value() == m);
  CHECK(encode_peer(decoded.value()) == bytes);
}

// ---- Editing encoded messages: unpack, re-pack with one change.

enum class Op { kReplace, kRemove, kAdd };

// `path` walks maps by field name and lists by index ("3"); its last step is the
// field (or list item) to replace, the field to remove, or the field to add.
struct Edit {
  std::vector<std::string> path;
  Op op = Op::kReplace;
  PackFn value;
};

void repack(Packer& pk, const msgpack::object& o, const Edit& e, size_t at) {
  const std::string& step = e.path[at];
  const bool last = at + 1 == e.path.size();
  if (o.type == msgpack::type::MAP) {
    uint32_t n = o.via.map.size;
    bool found = false;
    for (uint32_t i = 0; i < n; ++i) {
      const auto& key = o.via.map.ptr[i].key;
      found |= key.type == msgpack::type::STR && std::string_view(key.via.str.ptr, key.via.str.size) == step;
    }
    if (e.op != Op::kAdd || !last) REQUIRE(found);  // the test edits what exists (an added field may repeat one)
    if (last && e.op == Op::kRemove) --n;
    if (last && e.op == Op::kAdd) ++n;
    pk.pack_map(n);
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
      const auto& kv = o.via.map.ptr[i];
      bool match = kv.key.type == msgpack::type::STR && std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == step;
      if (match && last && e.op == Op::kRemove) continue;
      pk.pack(kv.key);
      if (!match) {
        pk.pack(kv.val);
      } else if (last) {
        e.value(pk);
      } else {
        repack(pk, kv.val, e, at + 1);
      }
    }
    if (last && e.op == Op::kAdd) {
      pk.pack_str(static_cast<uint32_t>(step.size()));
      pk.pack_str_body(step.data(), static_cast<uint32_t>(step.size()));
      e.value(pk);
    }
    return;
  }
  REQUIRE(o.type == msgpack::type::ARRAY);
  if (last) REQUIRE(e.op == Op::kReplace);  // list items are only replaced
  const size_t index = std::stoul(step);
  REQUIRE(index < o.via.array.size);
  pk.pack_array(o.via.array.size);
  for (uint32_t i = 0; i < o.via.array.size; ++i) {
    if (i != index) {
      pk.pack(o.via.array.ptr[i]);
    } else if (last) {
      e.value(pk);
    } else {
      repack(pk, o.via.array.ptr[i], e, at + 1);
    }
  }
}

std::string edited(const std::string& bytes, const Edit& e) {
  msgpack::object_handle h = msgpack::unpack(bytes.data(), bytes.size());
  msgpack::sbuffer buf;
  Packer pk(buf);
  repack(pk, h.get(), e, 0);
  return {buf.data(), buf.size()};
}

PackFn float64() { return raw("\xcb\x40\x08\0\0\0\0\0\0"s); }  // 3.0, which msgpack-c would pack as an integer
PackFn empty_map() {
  return [](Packer& pk) { pk.pack_map(0); };
}
PackFn list_of_one() {
  return [](Packer& pk) {
    pk.pack_array(1);
    pk.pack_uint64(1);
  };
}

// Every field of a message, found by walking its encoding: top-level fields,
// the fields of each entry, the items of each list.
struct FieldAt {
  std::vector<std::string> path;
  msgpack::type::object_type type;
};

void walk(const msgpack::object& o, std::vector<std::string>& path, std::vector<FieldAt>& out) {
  if (o.type == msgpack::type::MAP) {
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
      const auto& kv = o.via.map.ptr[i];
      path.emplace_back(kv.key.via.str.ptr, kv.key.via.str.size);
      out.push_back({path, kv.val.type});
      walk(kv.val, path, out);
      path.pop_back();
    }
  } else if (o.type == msgpack::type::ARRAY) {
    for (uint32_t i = 0; i < o.via.array.size; ++i) {
      path.push_back(std::to_string(i));
      out.push_back({path, o.via.array.ptr[i].type});
      walk(o.via.array.ptr[i], path, out);
      path.pop_back();
    }
  }
}

std::vector<FieldAt> fields_of(const std::string& bytes) {
  msgpack::object_handle h = msgpack::unpack(bytes.data(), bytes.size());
  std::vector<FieldAt> out;
  std::vector<std::string> path;
  walk(h.get(), path, out);
  return out;
}

std::string path_name(const std::vector<std::string>& path) {
  std::string s;
  for (const std::string& step : path) s += (s.empty() ? "" : ".") + step;
  return s;
}

// Values of every type but the one a field has (str and bin count as one type:
// the codec reads bytes from either).
std::vector<std::pair<const char*, PackFn>> wrong_values(msgpack::type::object_type type) {
  using T = msgpack::type::object_type;
  std::vector<std::pair<const char*, PackFn>> all = {
      {"uint", u64(7)},        {"negative int", i64(-7)}, {"bool", boolean(true)}, {"nil", nil()},
      {"float", float64()},    {"str", str("7")},         {"bin", bin("7")},       {"map", empty_map()},
      {"list", list_of_one()},
  };
  std::vector<std::pair<const char*, PackFn>> out;
  for (auto& [name, fn] : all) {
    std::string_view n = name;
    bool same = (type == T::POSITIVE_INTEGER && n == "uint") || (type == T::BOOLEAN && n == "bool") ||
                ((type == T::STR || type == T::BIN) && (n == "str" || n == "bin")) ||
                (type == T::MAP && n == "map") || (type == T::ARRAY && n == "list");
    if (!same) out.emplace_back(name, fn);
  }
  return out;
}

// ---- Round trips.

TEST_CASE("peer messages: every type round-trips", "[lockgroup][wire]") {
  for (const PeerMessage& m : samples()) {
    DYNAMIC_SECTION(type_of(m)) { check_round_trip(m); }
  }
  SECTION("empty lists, zero values and the largest numbers") {
    check_round_trip(msg(Prepare{}, 1, 1, 0));
    check_round_trip(msg(Promise{UINT64_MAX, false, UINT64_MAX, UINT64_MAX, UINT64_MAX, {}}, 255, 255, UINT64_MAX));
    check_round_trip(msg(Accept{make_ballot(1, 1), 0, 0, {}}));  // a heartbeat
    check_round_trip(msg(Accepted{make_ballot(1, 1), true, 0, 1, {}}));
    check_round_trip(msg(CatchUpRequest{UINT64_MAX}));
    check_round_trip(msg(CatchUp{}));
    check_round_trip(msg(StepDown{UINT64_MAX, 255}));
    check_round_trip(msg(Accept{1, 2, 3, {Entry{UINT64_MAX, UINT64_MAX, std::string(1 << 20, '\0')}}}));
  }
  SECTION("lists longer than a client message's 64 entries") {
    Accept a{make_ballot(9, 9), 7, 0, {}};
    Accepted ack{make_ballot(9, 9), true, 0, 7, {}};
    for (Slot s = 1; s <= 5000; ++s) {
      a.entries.push_back(Entry{s, a.ballot, "cmd" + std::to_string(s)});
      ack.slots.push_back(s);
    }
    check_round_trip(msg(a));
    check_round_trip(msg(ack));
    check_round_trip(msg(Promise{a.ballot, true, a.ballot, 1, 0, a.entries}));
    check_round_trip(msg(CatchUp{0, "", a.entries}));
  }
}

TEST_CASE("peer messages: random messages round-trip", "[lockgroup][wire]") {
  const uint64_t seed = kSeed + 1;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto bytes = [&](size_t max_len) {
    std::string s(rng() % (max_len + 1), '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  auto entries = [&] {
    std::vector<Entry> out(rng() % 5);
    for (Entry& e : out) e = Entry{rng(), rng(), bytes(40)};
    return out;
  };
  for (int i = 0; i < 3'000; ++i) {
    PeerBody body;
    switch (rng() % 7) {
      case 0: body = Prepare{rng(), rng(), rng()}; break;
      case 1: body = Promise{rng(), rng() % 2 == 0, rng(), rng(), rng(), entries()}; break;
      case 2: body = Accept{rng(), rng(), rng(), entries()}; break;
      case 3: {
        std::vector<Slot> slots(rng() % 5);
        for (Slot& s : slots) s = rng();
        body = Accepted{rng(), rng() % 2 == 0, rng(), rng(), slots};
        break;
      }
      case 4: body = CatchUpRequest{rng()}; break;
      case 5: body = StepDown{rng(), static_cast<NodeId>(1 + rng() % 255)}; break;
      default: body = CatchUp{rng(), bytes(100), entries()};
    }
    PeerMessage m{static_cast<NodeId>(1 + rng() % 255), static_cast<NodeId>(1 + rng() % 255), rng(), rng(), rng(),
                  body};
    INFO("case " << i);
    check_round_trip(m);
  }
}

TEST_CASE("peer messages: the encoding is the documented map", "[lockgroup][wire]") {
  // {v: 1, id: 0, type: "catch_up_request", from: 3, to: 5, group: 9, incarnation: 1000, serial: 4,
  //  from_slot: 21}
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_map(9);
  for (auto [name, value] : std::vector<std::pair<std::string, PackFn>>{{"v", u64(1)},
                                                                         {"id", u64(0)},
                                                                         {"type", str("catch_up_request")},
                                                                         {"from", u64(3)},
                                                                         {"to", u64(5)},
                                                                         {"group", u64(9)},
                                                                         {"incarnation", u64(1000)},
                                                                         {"serial", u64(4)},
                                                                         {"from_slot", u64(21)}}) {
    str(name)(pk);
    value(pk);
  }
  CHECK(encode_peer(msg(CatchUpRequest{21}, 3, 5, 9, 1000, 4)) == std::string(buf.data(), buf.size()));
  // Entries are maps {slot, ballot, value (bin)}.
  std::vector<FieldAt> fields = fields_of(encode_peer(samples()[2]));
  std::vector<std::string> names;
  for (const FieldAt& f : fields) names.push_back(path_name(f.path));
  CHECK(names == std::vector<std::string>{"v", "id", "type", "from", "to", "group", "incarnation", "serial",
                                          "ballot", "seq",
                                          "chosen_through", "entries", "entries.0", "entries.0.slot",
                                          "entries.0.ballot", "entries.0.value", "entries.1", "entries.1.slot",
                                          "entries.1.ballot", "entries.1.value"});
  CHECK(fields[15].type == msgpack::type::BIN);
}

// ---- Bad input.

TEST_CASE("peer messages: random garbage never crashes and is never accepted", "[lockgroup][wire]") {
  const uint64_t seed = kSeed + 2;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 50'000; ++i) {
    std::string bytes(rng() % 81, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    // Often start like a map, so that decoding gets past the first byte.
    if (!bytes.empty() && i % 2 == 0) bytes[0] = static_cast<char>(0x80 | (rng() % 16));
    INFO("case " << i << ": " << hex_head(bytes));
    auto r = decode(bytes);
    REQUIRE_FALSE(r.is_ok());
    REQUIRE((r.code() == Code::kMalformed || r.code() == Code::kBadRequest || r.code() == Code::kTooLarge));
    REQUIRE_FALSE(r.status().message().empty());
  }
}

TEST_CASE("peer messages: mutated valid messages never crash", "[lockgroup][wire]") {
  const uint64_t seed = kSeed + 3;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<std::string> valid;
  for (const PeerMessage& m : samples()) valid.push_back(encode_peer(m));
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 50'000; ++i) {
    std::string bytes = valid[rng() % valid.size()];
    for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    INFO("case " << i << ": " << hex_head(bytes));
    auto r = decode(bytes);
    if (r.is_ok()) {
      ++accepted;
      // Whatever was accepted re-encodes to something that decodes the same.
      auto again = decode(encode_peer(r.value()));
      REQUIRE(again.is_ok());
      REQUIRE(again.value() == r.value());
    } else {
      ++rejected;
      REQUIRE_FALSE(r.status().message().empty());
    }
  }
  CHECK(accepted > 100);
  CHECK(rejected > 100);
}

TEST_CASE("peer messages: every truncation is Malformed", "[lockgroup][wire]") {
  for (const PeerMessage& m : samples()) {
    const std::string bytes = encode_peer(m);
    INFO(type_of(m));
    REQUIRE(decode(bytes).is_ok());
    for (size_t len = 0; len < bytes.size(); ++len) {
      INFO("first " << len << " of " << bytes.size() << " bytes");
      CHECK(decode(bytes.substr(0, len)).code() == Code::kMalformed);
    }
  }
}

TEST_CASE("peer messages: trailing bytes are Malformed", "[lockgroup][wire]") {
  const std::string bytes = encode_peer(samples()[0]);
  for (const std::string& tail : {"\0"s, "\xc0"s, "\x01\x02\x03"s, bytes}) {
    INFO("tail " << hex_head(tail));
    CHECK(decode(bytes + tail).code() == Code::kMalformed);
  }
}

TEST_CASE("peer messages: what is not a map of named fields is Malformed", "[lockgroup][wire]") {
  CHECK(decode("").code() == Code::kMalformed);
  CHECK(decode("\xc1").code() == Code::kMalformed);  // never used in MessagePack
  CHECK(decode("\x93\x01\x02\x03").code() == Code::kMalformed);  // a list
  CHECK(decode("\x05").code() == Code::kMalformed);
  CHECK(decode("\xc0").code() == Code::kMalformed);
  CHECK(decode("\x81\x01\x02").code() == Code::kMalformed);  // a field name that is an int
  const std::string valid = encode_peer(samples()[4]);
  // A field twice, at the top and inside an entry.
  CHECK(decode(edited(valid, {{"from"}, Op::kAdd, u64(3)})).code() == Code::kMalformed);
  CHECK(decode(edited(encode_peer(samples()[2]), {{"entries", "0", "slot"}, Op::kAdd, u64(19)})).code() ==
        Code::kMalformed);
  // A field name that is bin, not str.
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_map(1);
  bin("v")(pk);
  pk.pack_uint64(1);
  CHECK(decode(std::string(buf.data(), buf.size())).code() == Code::kMalformed);
}

TEST_CASE("peer messages: envelope problems", "[lockgroup][wire]") {
  const std::string valid = encode_peer(samples()[0]);
  struct Case {
    const char* name;
    Edit edit;
    Code code;
  };
  const std::vector<Case> cases = {
      {"version 2", {{"v"}, Op::kReplace, u64(2)}, Code::kUnsupportedVersion},
      {"version 0", {{"v"}, Op::kReplace, u64(0)}, Code::kUnsupportedVersion},
      {"unknown type", {{"type"}, Op::kReplace, str("frobnicate")}, Code::kUnknownType},
      {"a replica request's type", {{"type"}, Op::kReplace, str("write")}, Code::kUnknownType},
      {"type as bin", {{"type"}, Op::kReplace, bin("prepare")}, Code::kOk},
      {"type over 32 bytes", {{"type"}, Op::kReplace, str(std::string(33, 'p'))}, Code::kTooLarge},
      {"any id", {{"id"}, Op::kReplace, u64(77)}, Code::kOk},
      {"from 0", {{"from"}, Op::kReplace, u64(0)}, Code::kBadRequest},
      {"from 256", {{"from"}, Op::kReplace, u64(256)}, Code::kBadRequest},
      {"to 2^32 + 5", {{"to"}, Op::kReplace, u64((uint64_t{1} << 32) + 5)}, Code::kBadRequest},
      {"from 255", {{"from"}, Op::kReplace, u64(255)}, Code::kOk},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      auto r = decode(edited(valid, c.edit));
      INFO(r.status().to_string());
      CHECK(r.code() == c.code);
      if (c.code != Code::kOk) CHECK_FALSE(r.status().message().empty());
    }
  }
}

TEST_CASE("peer messages: each field of the wrong type is BadRequest", "[lockgroup][wire]") {
  int checked = 0;
  for (const PeerMessage& m : samples()) {
    const std::string valid = encode_peer(m);
    for (const FieldAt& f : fields_of(valid)) {
      for (const auto& [type_name, value] : wrong_values(f.type)) {
        const std::string name = std::string(type_of(m)) + ": " + path_name(f.path) + " as " + type_name;
        INFO(name);
        auto r = decode(edited(valid, {f.path, Op::kReplace, value}));
        INFO(r.status().to_string());
        CHECK(r.code() == Code::kBadRequest);
        CHECK_FALSE(r.status().message().empty());
        ++checked;
      }
    }
  }
  CHECK(checked > 400);
}

TEST_CASE("peer messages: each missing field is BadRequest", "[lockgroup][wire]") {
  int checked = 0;
  for (const PeerMessage& m : samples()) {
    const std::string valid = encode_peer(m);
    for (const FieldAt& f : fields_of(valid)) {
      if (std::isdigit(static_cast<unsigned char>(f.path.back()[0]))) continue;  // a list item, not a field
      INFO(type_of(m) << ": without " << path_name(f.path));
      auto r = decode(edited(valid, {f.path, Op::kRemove, {}}));
      INFO(r.status().to_string());
      CHECK(r.code() == Code::kBadRequest);
      CHECK(r.status().message().find("lacks field '" + f.path.back() + "'") != std::string::npos);
      ++checked;
    }
  }
  CHECK(checked > 60);
}

TEST_CASE("peer messages: an unknown field is BadRequest", "[lockgroup][wire]") {
  for (const PeerMessage& m : samples()) {
    const std::string valid = encode_peer(m);
    INFO(type_of(m));
    auto r = decode(edited(valid, {{"colour"}, Op::kAdd, str("blue")}));
    CHECK(r.code() == Code::kBadRequest);
    CHECK(r.status().message().find("colour") != std::string::npos);
    // A field of another message type is unknown too.
    std::string other = m.body.index() == 4 ? "snapshot" : "from_slot";
    if (m.body.index() == 0) other = "chosen_through";
    CHECK(decode(edited(valid, {{other}, Op::kAdd, u64(1)})).code() == Code::kBadRequest);
  }
  // Inside an entry.
  const std::string accept = encode_peer(samples()[2]);
  auto r = decode(edited(accept, {{"entries", "1", "colour"}, Op::kAdd, str("blue")}));
  CHECK(r.code() == Code::kBadRequest);
  CHECK(r.status().message().find("colour") != std::string::npos);
}

TEST_CASE("peer messages: over max_bytes is TooLarge", "[lockgroup][wire]") {
  for (const PeerMessage& m : samples()) {
    const std::string bytes = encode_peer(m);
    INFO(type_of(m) << " of " << bytes.size() << " bytes");
    CHECK(decode(bytes, bytes.size()).is_ok());
    CHECK(decode(bytes, bytes.size() - 1).code() == Code::kTooLarge);
  }
  // A snapshot too big for the limit, and garbage far over it, never get parsed.
  const std::string big = encode_peer(msg(CatchUp{5, std::string(1 << 20, 's'), {}}));
  CHECK(decode(big, 1 << 20).code() == Code::kTooLarge);
  CHECK(decode(std::string(kMaxBytes + 1, '\x90')).code() == Code::kTooLarge);
}

TEST_CASE("peer messages: decoding limits on lists, maps and nesting are TooLarge", "[lockgroup][wire]") {
  const std::string valid = encode_peer(samples()[3]);
  // A list header claiming 2^32-1 items, inside a valid message and bare.
  CHECK(decode(edited(valid, {{"slots"}, Op::kReplace, raw("\xdd\xff\xff\xff\xff"s)})).code() == Code::kTooLarge);
  CHECK(decode("\xdd\xff\xff\xff\xff"s).code() == Code::kTooLarge);
  // A map of 65 fields.
  CHECK(decode("\xde\x00\x41"s).code() == Code::kTooLarge);
  // Within the limits, but the items are missing.
  CHECK(decode("\xdd\x00\x01\x00\x00"s).code() == Code::kMalformed);
  // Nesting: at most 4 maps or lists inside one another (a message needs 3:
  // message map, list, entry map). The message map and 4 lists is one too many.
  CHECK(decode(edited(valid, {{"slots"}, Op::kReplace, raw("\x91\x91\x91\x91\x01"s)})).code() == Code::kTooLarge);
  CHECK(decode(std::string(100'000, '\x91') + '\x01').code() == Code::kTooLarge);
  // One level less is only the wrong type.
  CHECK(decode(edited(valid, {{"slots"}, Op::kReplace, raw("\x91\x91\x91\x01"s)})).code() == Code::kBadRequest);
  // Ext values are refused.
  CHECK(decode(edited(valid, {{"seq"}, Op::kReplace, raw("\xd4\x01\x00"s)})).code() == Code::kTooLarge);
}

}  // namespace
}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

TEST_CASE("peer messages: a step-down's successor is a node id", "[lockgroup][wire]") {
  const std::string valid = encode_peer(msg(StepDown{make_ballot(2, 3), 4}));
  for (uint64_t bad : {uint64_t{0}, uint64_t{256}}) {
    auto r = decode(edited(valid, {{"successor"}, Op::kReplace, u64(bad)}));
    INFO(r.status().to_string());
    CHECK(r.code() == Code::kBadRequest);
  }
  CHECK(decode(edited(valid, {{"successor"}, Op::kReplace, u64(255)})).is_ok());
}

}  // namespace palisade::lockgroup
