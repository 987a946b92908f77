// The lock group's client codec (docs/protocol.md, "Lock group (palisade-lockd)"):
// every request and reply round-trips, every kind of bad input gets its own Code
// without crashing, and the doc's lock-group hex examples are what the encoder
// writes. Random cases come from fixed seeds so a failure reproduces.
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "wire/lock_protocol.h"
#include "wire/replica_protocol.h"
#include "auth/cluster_key.h"
#include "tests/support/sequencers.h"
#include "tests/support/printers.h"
#include "tests/unit/bad_request_checks.h"
#include "tests/unit/hex_text.h"
#include "tests/unit/msgpack_builder.h"
#include "tests/unit/protocol_doc_examples.h"
#include "tests/unit/random_bytes.h"
#include "tests/unit/round_trip_checks.h"

namespace palisade {
namespace {

using wire::AcquireRequest;
using wire::CheckSequencerRequest;
using wire::CloseSessionRequest;
using wire::CurrentGrantRequest;
using wire::FindMasterRequest;
using wire::GetReplicasRequest;
using wire::KeepAliveRequest;
using wire::Limits;
using wire::LockInfo;
using wire::LockReply;
using wire::LockRequest;
using wire::LockStatusRequest;
using wire::OpenSessionRequest;
using wire::ReleaseRequest;
using wire::SetMembersRequest;
using wire::SetReplicasRequest;

using test::array_value;
using test::bin;
using test::boolean;
using test::Decoded;
using test::Fields;
using test::hex_block;
using test::i64;
using test::kGarbageId;
using test::map_of;
using test::map_value;
using test::nil;
using test::plus;
using test::random_bytes;
using test::raw;
using test::str;
using test::u64;
using test::Value;
using test::with;
using test::without;

constexpr uint64_t kSeed = 0x10c4'0000'0001;
constexpr uint64_t kId = 4242;
constexpr size_t kMaxReplyBytes = 1 << 20;

// The fields of a valid acquire, in the order the encoder writes them.
Fields acquire_fields() {
  return {{"v", u64(1)},          {"id", u64(kId)},    {"type", str("acquire")},     {"epoch", u64(0x301)},
          {"session", u64(5)},    {"call", u64(9)},    {"lock", str("L")},           {"mode", str("exclusive")},
          {"lock_delay_ms", u64(10'000)}, {"wait_ms", u64(250)}};
}
const AcquireRequest kAcquire{0x301, 5, "L", LockMode::kExclusive, 10'000, 250, 9};

Fields envelope(const std::string& type) { return {{"v", u64(1)}, {"id", u64(kId)}, {"type", str(type)}}; }

Decoded decode(std::string_view bytes, const Limits& limits = {}) {
  return test::decoded_by(wire::decode_lock_request, bytes, limits);
}

Status decode_reply_status(std::string_view bytes) { return wire::decode_lock_reply(bytes, kMaxReplyBytes).status(); }

// ---- Round trips.

// LockReply's defaulted operator== is deleted (Status has none): field by field.
void check_same_reply(const LockReply& got, const LockReply& want) {
  test::check_same_id_and_status(got, want);
  CHECK(got.epoch == want.epoch);
  CHECK(got.master == want.master);
  CHECK(got.master_endpoint == want.master_endpoint);
  CHECK(got.session == want.session);
  CHECK(got.lease_ms == want.lease_ms);
  CHECK(got.token == want.token);
  CHECK(got.mode == want.mode);
  CHECK(got.sequencer == want.sequencer);
  CHECK(got.current == want.current);
  CHECK(got.released == want.released);
  CHECK(got.node == want.node);
  CHECK(got.role == want.role);
  CHECK(got.applied_slot == want.applied_slot);
  CHECK(got.sessions == want.sessions);
  CHECK(got.locks == want.locks);
  CHECK(got.config == want.config);
}

void check_reply_round_trip(const LockReply& reply) {
  auto decode = [](std::string_view bytes) { return wire::decode_lock_reply(bytes, kMaxReplyBytes); };
  check_same_reply(test::round_trip_reply(reply, wire::encode_lock_reply, decode), reply);
}

TEST_CASE("lock wire: every request type round-trips", "[wire][lockgroup]") {
  const std::string longest_lock(Limits{}.max_lock_bytes, 'L');
  const std::vector<std::pair<const char*, LockRequest>> cases = {
      {"find_master", {1, FindMasterRequest{}}},
      {"find_master with id 0", {0, FindMasterRequest{}}},
      {"open_session", {2, OpenSessionRequest{0x301}}},
      {"open_session knowing no epoch", {3, OpenSessionRequest{0}}},
      {"open_session with its own lease", {3, OpenSessionRequest{0x301, 30'000}}},
      {"open_session with the largest lease", {3, OpenSessionRequest{0, UINT64_MAX}}},
      {"keep_alive", {4, KeepAliveRequest{0x301, 17}}},
      {"keep_alive knowing a membership", {4, KeepAliveRequest{0x301, 17, UINT64_MAX}}},
      {"open_session knowing a membership", {3, OpenSessionRequest{0x301, 30'000, 4}}},
      {"close_session", {5, CloseSessionRequest{0x301, 17}}},
      {"acquire exclusive", {6, kAcquire}},
      {"acquire shared without delay or wait", {7, AcquireRequest{1, 2, "S", LockMode::kShared, 0, 0}}},
      {"acquire with the longest delay and wait",
       {8,
        AcquireRequest{UINT64_MAX, UINT64_MAX, longest_lock, LockMode::kExclusive, wire::kMaxLockDelayMs, UINT64_MAX}}},
      {"acquire of a binary lock name", {9, AcquireRequest{1, 2, std::string("a\0\xff", 3), LockMode::kShared, 1, 1}}},
      {"release", {10, ReleaseRequest{0x301, 17, "orders"}}},
      {"check_sequencer", {11, CheckSequencerRequest{"ps2.abc.def"}}},
      {"check_sequencer of the longest text", {12, CheckSequencerRequest{std::string(kMaxSequencerBytes, 's')}}},
      {"check_sequencer of nothing", {13, CheckSequencerRequest{""}}},
      {"lock_status", {UINT64_MAX, LockStatusRequest{}}},
      {"lock_status after a lock", {14, LockStatusRequest{"orders/17"}}},
      {"lock_status after the longest name", {15, LockStatusRequest{longest_lock}}},
      {"acquire naming its cluster", {16, kAcquire, std::string(16, '\xc1')}},
      {"find_master naming its cluster", {17, FindMasterRequest{}, std::string("0123456789abcdef")}},
      {"set_members", {18, SetMembersRequest{3, {{1, "tcp://a:7000"}, {4, "tcp://d:7000"}, {255, "ipc:///x"}}}}},
      {"set_members, the first change", {19, SetMembersRequest{0, {{2, "tcp://b:7000"}}}}},
      {"set_members with keys",
       {20,
        SetMembersRequest{1, {{1, "tcp://a:7000", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"}, {2, "tcp://b:7000"}}}}},
      {"set_replicas, the first record", {21, SetReplicasRequest{0, {{1, "tcp://r1:7200"}}, 1, 1}}},
      {"set_replicas with keys and receipt ids",
       {22, SetReplicasRequest{UINT64_MAX,
                               {{1, "tcp://r1:7200", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7", UINT64_MAX},
                                {2, "tcp://r2:7200", "", 7},
                                {255, "ipc:///r255"}},
                               3,
                               1}}},
      {"get_replicas", {23, GetReplicasRequest{}}},
      {"set_replicas, paused", {24, SetReplicasRequest{2, {{1, "tcp://r1:7200"}}, 1, 1, wire::ReplicaPhase::kPaused}}},
      {"current_grant", {25, CurrentGrantRequest{"leader"}}},
      {"current_grant of the longest name", {26, CurrentGrantRequest{longest_lock}}},
  };
  test::check_request_round_trips(cases, wire::encode_lock_request, wire::decode_lock_request);
}

TEST_CASE("lock wire: random requests round-trip", "[wire][lockgroup]") {
  auto random_request = [](std::mt19937_64& rng) {
    LockRequest r;
    r.id = rng();
    std::string lock = random_bytes(rng, 40);
    if (lock.empty()) lock = "x";
    const LockMode mode = rng() % 2 == 0 ? LockMode::kExclusive : LockMode::kShared;
    switch (rng() % 9) {
      case 0: r.body = FindMasterRequest{}; break;
      case 1:
        r.body = OpenSessionRequest{rng(), rng() % 2 == 0 ? 0 : rng(), rng() % 2 == 0 ? 0 : rng()};
        break;
      case 2:
        r.body = KeepAliveRequest{rng(), rng(), rng() % 2 == 0 ? 0 : rng()};
        break;
      case 3: r.body = CloseSessionRequest{rng(), rng()}; break;
      case 4: r.body = AcquireRequest{rng(), rng(), lock, mode, rng() % (wire::kMaxLockDelayMs + 1), rng()}; break;
      case 5: r.body = ReleaseRequest{rng(), rng(), lock}; break;
      case 6: r.body = CheckSequencerRequest{random_bytes(rng, 200)}; break;
      case 7:
        r.body = CurrentGrantRequest{lock};
        break;
      default: r.body = LockStatusRequest{rng() % 2 == 0 ? "" : lock};
    }
    return r;
  };
  test::check_random_request_round_trips(kSeed + 1, 5'000, random_request, wire::encode_lock_request,
                                         wire::decode_lock_request);
}

TEST_CASE("lock wire: the map builder writes what the encoder writes", "[wire][lockgroup]") {
  // The bad-input tests below edit hand-built messages; they start from this one.
  CHECK(map_of(acquire_fields()) == wire::encode_lock_request({kId, kAcquire}));
}

LockReply full_reply() {
  LockReply r;
  r.id = UINT64_MAX;
  r.status = Status::ok();
  r.epoch = UINT64_MAX;
  r.master = UINT32_MAX;
  r.master_endpoint = "tcp://10.0.0.1:7500";
  r.session = 17;
  r.lease_ms = 11'500;
  r.token = 7;
  r.mode = LockMode::kShared;
  r.sequencer = "ps2.payload.mac";
  r.current = true;
  r.released = true;
  r.node = 3;
  r.role = "candidate";
  r.applied_slot = 12'345;
  r.sessions = 2;
  r.locks = {LockInfo{"a", LockMode::kShared, 5, {17, 18, UINT64_MAX}, 2, 0},
             LockInfo{std::string("b\0\xff", 3), LockMode::kExclusive, 0, {}, 0, 60'000},
             LockInfo{"c", LockMode::kExclusive, UINT64_MAX, {17}, UINT64_MAX, 1, {"worker-7"}}};
  r.members_version = 9;
  r.members = {{1, "tcp://10.0.0.1:7500", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"}, {255, "tcp://[::1]:7000"}};
  r.config = "pcc1.record.signature";
  return r;
}

// A reply in epoch 0x301, naming node 1 as the master.
LockReply naming_master(uint64_t id) {
  LockReply r;
  r.id = id;
  r.epoch = 0x301;
  r.master = 1;
  return r;
}

TEST_CASE("lock wire: every reply shape round-trips", "[wire][lockgroup]") {
  SECTION("every field set") { check_reply_round_trip(full_reply()); }
  SECTION("every field set, with an error") {
    LockReply r = full_reply();
    r.status = Status(Code::kBusy, "lock 'a' is held");
    check_reply_round_trip(r);
  }
  SECTION("nothing but the always-present fields") {
    LockReply r;
    check_reply_round_trip(r);
    // v, id, type, code, epoch, master: defaults are left out.
    CHECK(static_cast<uint8_t>(wire::encode_lock_reply(r)[0]) == 0x86);
  }
  SECTION("find_master answered by a follower") {
    LockReply r = naming_master(1);
    r.status = Status(Code::kNotMaster, "node 2 is not the master");
    r.master_endpoint = "tcp://10.0.0.1:7500";
    check_reply_round_trip(r);
  }
  SECTION("open_session") {
    LockReply r = naming_master(2);
    r.session = 17;
    r.lease_ms = 12'000;
    check_reply_round_trip(r);
  }
  SECTION("acquire: exclusive grant") {
    LockReply r = naming_master(3);
    r.lease_ms = 11'000;
    r.token = 9;
    r.mode = LockMode::kExclusive;
    r.sequencer = "ps2.x.y";
    check_reply_round_trip(r);
    // A grant always names its mode, also the default one.
    CHECK(wire::encode_lock_reply(r).find("exclusive") != std::string::npos);
  }
  SECTION("release and check_sequencer") {
    LockReply r;
    r.released = true;
    check_reply_round_trip(r);
    r.released = false;
    r.current = true;
    check_reply_round_trip(r);
  }
  SECTION("stale_epoch with the current epoch") {
    LockReply r;
    r.id = 4;
    r.status = Status(Code::kStaleEpoch, "epoch 513 is older than 769");
    r.epoch = 769;
    r.master = 1;
    check_reply_round_trip(r);
  }
  SECTION("lock_status with as many locks as an array may hold") {
    LockReply r;
    r.node = 2;
    r.role = "follower";
    r.applied_slot = 99;
    r.sessions = 64;
    for (uint64_t i = 0; i < 64; ++i) {
      std::vector<uint64_t> holders(64);
      for (uint64_t h = 0; h < holders.size(); ++h) holders[h] = i * 64 + h + 1;
      r.locks.push_back(LockInfo{"lock/" + std::to_string(1000 + i), LockMode::kShared, i + 1, holders, i, 0});
    }
    check_reply_round_trip(r);
  }
  SECTION("error replies of every code") {
    for (int c = 0; c <= static_cast<int>(Code::kInternal); ++c) {
      const auto code = static_cast<Code>(c);
      INFO("code " << code_name(code));
      LockReply r;
      r.id = UINT64_MAX - static_cast<uint64_t>(c);
      r.status = Status(code, code == Code::kOk ? "" : "because " + std::to_string(c));
      r.epoch = static_cast<uint64_t>(c);
      r.master = static_cast<uint32_t>(c);
      check_reply_round_trip(r);
    }
  }
}

// ---- Bad requests.

TEST_CASE("lock wire: holder_identities names one identity per holder", "[wire][lockgroup]") {
  LockReply r;
  r.node = 1;
  r.locks = {LockInfo{"L", LockMode::kShared, 3, {4, 5}, 0, 0, {"a", "b"}}};
  check_reply_round_trip(r);
  r.locks[0].identities = {"a"};  // one short
  auto short_list = wire::decode_lock_reply(encode_lock_reply(r), kMaxReplyBytes);
  CHECK(short_list.status().code() == Code::kBadRequest);
  r.locks[0].identities = {"a", std::string(wire::kMaxIdentityBytes + 1, 'x')};
  auto overlong = wire::decode_lock_reply(encode_lock_reply(r), kMaxReplyBytes);
  CHECK(overlong.status().code() == Code::kBadRequest);
}

TEST_CASE("lock wire: not MessagePack, truncated or trailing bytes are Malformed", "[wire][lockgroup]") {
  SECTION("not MessagePack") { test::check_not_messagepack_is_malformed(decode); }
  SECTION("not a map") { test::check_not_a_map_is_malformed(decode); }
  SECTION("every truncation of a valid acquire") {
    test::check_every_truncation_is_malformed(wire::encode_lock_request({kId, kAcquire}), decode);
  }
  SECTION("trailing bytes") {
    test::check_trailing_bytes_are_malformed(wire::encode_lock_request({kId, kAcquire}), decode);
  }
  SECTION("a field twice") {
    Fields f = acquire_fields();
    f.push_back({"lock", str("M")});
    CHECK(decode(map_of(f)).code == Code::kMalformed);
  }
}

TEST_CASE("lock wire: bad fields are BadRequest", "[wire][lockgroup]") {
  const Fields keep_alive = plus(envelope("keep_alive"), {{"epoch", u64(1)}, {"session", u64(2)}});
  const Fields open = plus(envelope("open_session"), {{"epoch", u64(1)}});
  const Fields release = plus(envelope("release"), {{"epoch", u64(1)}, {"session", u64(2)}, {"call", u64(3)}, {"lock", str("L")}});
  const Fields check = plus(envelope("check_sequencer"), {{"sequencer", str("ps2.a.b")}});
  const Fields grant = plus(envelope("current_grant"), {{"lock", str("leader")}});
  for (const Fields* f : {&keep_alive, &open, &release, &check, &grant}) REQUIRE(decode(map_of(*f)).code == Code::kOk);
  REQUIRE(decode(map_of(acquire_fields())).code == Code::kOk);
  test::check_cases(
      test::bad_request_cases(
          kId,
          {
              // Wrong types.
              {"epoch as string", with(acquire_fields(), "epoch", str("1"))},
              {"negative session", with(acquire_fields(), "session", i64(-1))},
              {"session as float", with(acquire_fields(), "session", raw(std::string("\xcb\x40\x08\0\0\0\0\0\0", 9)))},
              {"lock as int", with(acquire_fields(), "lock", u64(1))},
              {"lock as nil", with(acquire_fields(), "lock", nil())},
              {"mode as int", with(acquire_fields(), "mode", u64(0))},
              {"mode as bool", with(acquire_fields(), "mode", boolean(true))},
              {"lock_delay_ms as string", with(acquire_fields(), "lock_delay_ms", str("100"))},
              {"wait_ms as bool", with(acquire_fields(), "wait_ms", boolean(false))},
              {"keep_alive session as string", with(keep_alive, "session", str("2"))},
              {"open_session epoch as nil", with(open, "epoch", nil())},
              {"open_session lease_ms as string", with(open, "lease_ms", str("30000"))},
              {"open_session negative lease_ms", with(open, "lease_ms", i64(-1))},
              {"sequencer as int", with(check, "sequencer", u64(7))},
              {"release lock as array", with(release, "lock", raw("\x91\x01"))},
              {"lock_status after as int", plus(envelope("lock_status"), {{"after", u64(1)}})},
              // Missing required fields.
              {"acquire without epoch", without(acquire_fields(), "epoch")},
              {"acquire without session", without(acquire_fields(), "session")},
              {"acquire without lock", without(acquire_fields(), "lock")},
              {"acquire without mode", without(acquire_fields(), "mode")},
              {"keep_alive without session", without(keep_alive, "session")},
              {"close_session without epoch", without(plus(envelope("close_session"), {{"session", u64(2)}}), "epoch")},
              {"open_session without epoch", without(open, "epoch")},
              {"release without lock", without(release, "lock")},
              {"check_sequencer without sequencer", without(check, "sequencer")},
              {"current_grant without lock", without(grant, "lock")},
              // Unknown fields.
              {"acquire with a colour", with(acquire_fields(), "colour", str("blue"))},
              {"find_master with a field", plus(envelope("find_master"), {{"epoch", u64(1)}})},
              {"lock_status with a field", plus(envelope("lock_status"), {{"lock", str("L")}})},
              {"open_session with a session", with(open, "session", u64(2))},
              {"release with a mode", with(release, "mode", str("shared"))},
              {"current_grant with a session", with(grant, "session", u64(2))},
              {"current_grant lock as int", with(grant, "lock", u64(1))},
              // Values out of range.
              {"acquire of the empty lock", with(acquire_fields(), "lock", str(""))},
              {"release of the empty lock", with(release, "lock", bin(""))},
              {"current_grant of the empty lock", with(grant, "lock", str(""))},
              {"lock_delay_ms 60001", with(acquire_fields(), "lock_delay_ms", u64(wire::kMaxLockDelayMs + 1))},
              {"lock_delay_ms 2^64-1", with(acquire_fields(), "lock_delay_ms", u64(UINT64_MAX))},
              {"mode EXCLUSIVE", with(acquire_fields(), "mode", str("EXCLUSIVE"))},
              {"mode read", with(acquire_fields(), "mode", str("read"))},
              {"mode empty", with(acquire_fields(), "mode", str(""))},
              {"mode 'shared ' with a space", with(acquire_fields(), "mode", str("shared "))},
          }),
      decode);
}

TEST_CASE("lock wire: lock_delay_ms is at most 60 s, with a clear message", "[wire][lockgroup]") {
  CHECK(decode(map_of(with(acquire_fields(), "lock_delay_ms", u64(wire::kMaxLockDelayMs)))).code == Code::kOk);
  Decoded d = decode(map_of(with(acquire_fields(), "lock_delay_ms", u64(60'001))));
  CHECK(d.code == Code::kBadRequest);
  CHECK(d.message == "lock_delay_ms 60001 is over the maximum 60000 ms");
  // The optional fields default to 0.
  auto bare = wire::decode_lock_request(map_of(without(without(acquire_fields(), "lock_delay_ms"), "wait_ms")), Limits{});
  REQUIRE(bare.is_ok());
  const auto& a = std::get<AcquireRequest>(bare.value().body);
  CHECK(a.lock_delay_ms == 0);
  CHECK(a.wait_ms == 0);
  // Mode as text; bin is accepted like every bytes field.
  auto shared = wire::decode_lock_request(map_of(with(acquire_fields(), "mode", bin("shared"))), Limits{});
  REQUIRE(shared.is_ok());
  CHECK(std::get<AcquireRequest>(shared.value().body).mode == LockMode::kShared);
}

TEST_CASE("lock wire: open_session's lease_ms is optional, and left out when 0", "[wire][lockgroup]") {
  const Fields old = plus(envelope("open_session"), {{"epoch", u64(0x301)}});
  // What clients wrote before the field existed: decodes as the default (0).
  auto decoded = wire::decode_lock_request(map_of(old), Limits{});
  REQUIRE(decoded.is_ok());
  CHECK(std::get<OpenSessionRequest>(decoded.value().body) == OpenSessionRequest{0x301, 0});
  // And the default is still written that way, so older masters accept it.
  CHECK(wire::encode_lock_request({kId, OpenSessionRequest{0x301, 0}}) == map_of(old));
  CHECK(wire::encode_lock_request({kId, OpenSessionRequest{0x301, 30'000}}) ==
        map_of(plus(old, {{"lease_ms", u64(30'000)}})));
  // An explicit 0 means the default too. The range is the master's to check, not the codec's.
  for (uint64_t lease : {uint64_t{0}, uint64_t{1}, UINT64_MAX}) {
    auto d = wire::decode_lock_request(map_of(plus(old, {{"lease_ms", u64(lease)}})), Limits{});
    REQUIRE(d.is_ok());
    CHECK(std::get<OpenSessionRequest>(d.value().body).lease_ms == lease);
  }
}

TEST_CASE("lock wire: size limits are TooLarge", "[wire][lockgroup]") {
  const Limits limits;
  SECTION("lock name") {
    const std::string at_limit(limits.max_lock_bytes, 'L');
    AcquireRequest a = kAcquire;
    a.lock = at_limit;
    CHECK(decode(wire::encode_lock_request({1, a})).code == Code::kOk);
    a.lock += "L";
    Decoded d = decode(wire::encode_lock_request({1, a}));
    CHECK(d.code == Code::kTooLarge);
    CHECK(d.id_out == 1);
    CHECK(decode(wire::encode_lock_request({1, ReleaseRequest{1, 2, at_limit}})).code == Code::kOk);
    CHECK(decode(wire::encode_lock_request({1, ReleaseRequest{1, 2, at_limit + "L"}})).code == Code::kTooLarge);
    CHECK(decode(wire::encode_lock_request({1, LockStatusRequest{at_limit}})).code == Code::kOk);
    CHECK(decode(wire::encode_lock_request({1, LockStatusRequest{at_limit + "L"}})).code == Code::kTooLarge);
    CHECK(decode(wire::encode_lock_request({1, CurrentGrantRequest{at_limit}})).code == Code::kOk);
    CHECK(decode(wire::encode_lock_request({1, CurrentGrantRequest{at_limit + "L"}})).code == Code::kTooLarge);
    // The limit is the caller's.
    Limits small;
    small.max_lock_bytes = 4;
    CHECK(decode(wire::encode_lock_request({1, ReleaseRequest{1, 2, "abcd"}}), small).code == Code::kOk);
    CHECK(decode(wire::encode_lock_request({1, ReleaseRequest{1, 2, "abcde"}}), small).code == Code::kTooLarge);
  }
  SECTION("sequencer") {
    const std::string at_limit(kMaxSequencerBytes, 's');
    CHECK(decode(wire::encode_lock_request({1, CheckSequencerRequest{at_limit}})).code == Code::kOk);
    CHECK(decode(wire::encode_lock_request({1, CheckSequencerRequest{at_limit + "s"}})).code == Code::kTooLarge);
  }
  SECTION("mode text") {
    CHECK(decode(map_of(with(acquire_fields(), "mode", str(std::string(17, 'x'))))).code == Code::kTooLarge);
  }
  SECTION("type name") {
    CHECK(decode(map_of(with(acquire_fields(), "type", str(std::string(33, 'a'))))).code == Code::kTooLarge);
  }
  SECTION("whole message") { test::check_whole_message_limit(acquire_fields(), decode); }
  SECTION("declared entries") {
    test::check_huge_declared_sizes(acquire_fields(), "lock", decode, decode_reply_status);
  }
  SECTION("nesting") { test::check_nesting_limit(acquire_fields(), "lock", decode); }
}

// The lock codec's decoder, also checking that the replica codec reads the
// same id from the envelope.
Decoded decode_comparing_replica_id(std::string_view bytes, const Limits& limits) {
  Decoded d = decode(bytes, limits);
  uint64_t replica_id = kGarbageId;
  (void)wire::decode_request(bytes, limits, &replica_id);
  CHECK(replica_id == d.id_out);
  return d;
}

TEST_CASE("lock wire: envelope problems and id_out, as for replica requests", "[wire][lockgroup]") {
  std::vector<test::WireCase> cases = test::envelope_cases(acquire_fields(), kId);
  cases.push_back({"a replica type", with(acquire_fields(), "type", str("write")), Code::kUnknownType, kId});
  cases.push_back({"a peer type", with(acquire_fields(), "type", str("prepare")), Code::kUnknownType, kId});
  test::check_cases(cases, decode_comparing_replica_id);
  SECTION("a replica request is unknown here, with its id") {
    Decoded d = decode(wire::encode_request({77, wire::PingRequest{}}));
    CHECK(d.code == Code::kUnknownType);
    CHECK(d.id_out == 77);
  }
}

// ---- Bad replies.

TEST_CASE("lock wire: decode_lock_reply rejects what is not a reply", "[wire][lockgroup]") {
  const Fields reply = {{"v", u64(1)},        {"id", u64(3)},     {"type", str("reply")},
                        {"code", str("ok")},  {"epoch", u64(9)},  {"master", u64(1)}};
  auto code_of = [](const Fields& f) { return wire::decode_lock_reply(map_of(f), kMaxReplyBytes).code(); };
  REQUIRE(code_of(reply) == Code::kOk);
  CHECK(wire::decode_lock_reply(wire::encode_lock_request({1, FindMasterRequest{}}), kMaxReplyBytes).code() ==
        Code::kUnknownType);
  CHECK(code_of(with(reply, "code", str("no_such_code"))) == Code::kBadRequest);
  CHECK(code_of(without(reply, "code")) == Code::kBadRequest);
  CHECK(code_of(without(reply, "epoch")) == Code::kBadRequest);
  CHECK(code_of(without(reply, "master")) == Code::kBadRequest);
  CHECK(code_of(with(reply, "master", u64(uint64_t{1} << 32))) == Code::kBadRequest);
  CHECK(code_of(with(reply, "node", u64(uint64_t{1} << 32))) == Code::kBadRequest);
  CHECK(code_of(with(reply, "extra", u64(1))) == Code::kBadRequest);
  CHECK(code_of(with(reply, "v", u64(2))) == Code::kUnsupportedVersion);
  CHECK(code_of(with(reply, "mode", str("both"))) == Code::kBadRequest);
  CHECK(code_of(with(reply, "current", u64(1))) == Code::kBadRequest);
  CHECK(code_of(with(reply, "sequencer", str(std::string(kMaxSequencerBytes + 1, 's')))) == Code::kTooLarge);

  const Fields lock = {{"name", str("L")},   {"mode", str("shared")}, {"token", u64(4)},
                       {"holders", array_value({u64(1), u64(2)})}, {"waiters", u64(0)}, {"delay_ms", u64(0)}};
  auto with_locks = [&](std::vector<Value> items) { return with(reply, "locks", array_value(std::move(items))); };
  auto ok = wire::decode_lock_reply(map_of(with_locks({map_value(lock)})), kMaxReplyBytes);
  REQUIRE(ok.is_ok());
  REQUIRE(ok.value().locks.size() == 1);
  CHECK(ok.value().locks[0] == LockInfo{"L", LockMode::kShared, 4, {1, 2}, 0, 0});
  CHECK(code_of(with_locks({map_value(with(lock, "mode", str("weird")))})) == Code::kBadRequest);
  CHECK(code_of(with_locks({map_value(without(lock, "holders"))})) == Code::kBadRequest);
  CHECK(code_of(with_locks({map_value(with(lock, "holders", array_value({str("1")})))})) == Code::kBadRequest);
  CHECK(code_of(with_locks({map_value(with(lock, "holders", u64(1)))})) == Code::kBadRequest);
  CHECK(code_of(with_locks({map_value(with(lock, "extra", u64(1)))})) == Code::kBadRequest);
  CHECK(code_of(with_locks({u64(5)})) != Code::kOk);
  CHECK(code_of(with(reply, "locks", map_value(lock))) == Code::kBadRequest);
  // A status reply lists at most 1000 locks.
  std::vector<Value> most(1000, map_value(lock));
  CHECK(code_of(with_locks(most)) == Code::kOk);
  most.push_back(map_value(lock));
  CHECK(code_of(with_locks(most)) == Code::kBadRequest);
  const std::string bytes = map_of(reply);
  CHECK(wire::decode_lock_reply(bytes + '\x00', kMaxReplyBytes).code() == Code::kMalformed);
  CHECK(wire::decode_lock_reply(bytes.substr(0, bytes.size() - 1), kMaxReplyBytes).code() == Code::kMalformed);
  CHECK(wire::decode_lock_reply(bytes, bytes.size() - 1).code() == Code::kTooLarge);
}

// ---- Garbage.

TEST_CASE("lock wire: random garbage never crashes and is never accepted", "[wire][lockgroup]") {
  test::check_random_garbage_is_refused(kSeed + 2, decode, decode_reply_status);
}

TEST_CASE("lock wire: mutated valid messages never crash", "[wire][lockgroup]") {
  const Limits limits;
  const std::vector<std::string> valid = {
      wire::encode_lock_request({kId, kAcquire}),
      wire::encode_lock_request({kId, ReleaseRequest{1, 2, "orders"}}),
      wire::encode_lock_request({kId, KeepAliveRequest{1, 2}}),
      wire::encode_lock_request({kId, CheckSequencerRequest{"ps2.abc.def"}}),
      wire::encode_lock_request({kId, CurrentGrantRequest{"leader"}}),
      wire::encode_lock_request(
          {kId, SetReplicasRequest{4, {{1, "tcp://r1", "", 9}, {3, "tcp://r3", std::string(40, 'k'), 0}}, 2, 1}}),
      wire::encode_lock_reply(full_reply()),
  };
  int accepted = 0, rejected = 0;
  test::for_each_mutation(kSeed + 3, valid, 50'000, [&](const std::string& bytes) {
    auto request = wire::decode_lock_request(bytes, limits);
    (request.is_ok() ? accepted : rejected)++;
    if (request.is_ok()) {
      // Whatever was accepted re-encodes to something that decodes the same.
      auto again = wire::decode_lock_request(wire::encode_lock_request(request.value()), limits);
      REQUIRE(again.is_ok());
      REQUIRE(again.value() == request.value());
    } else {
      REQUIRE(test::is_decode_error(request.code()));
      REQUIRE_FALSE(request.status().message().empty());
    }
    auto reply = wire::decode_lock_reply(bytes, kMaxReplyBytes);
    if (reply.is_ok()) {
      auto again = wire::decode_lock_reply(wire::encode_lock_reply(reply.value()), kMaxReplyBytes);
      REQUIRE(again.is_ok());
      CHECK(wire::encode_lock_reply(again.value()) == wire::encode_lock_reply(reply.value()));
    } else {
      REQUIRE_FALSE(reply.status().message().empty());
    }
  });
  CHECK(accepted > 100);
  CHECK(rejected > 100);
}

// ---- docs/protocol.md's lock-group example.
//
// Its blocks are marked "<!-- lock-example NAME -->" (not "example", which
// tests/unit/protocol_doc_test.cc owns and runs against a replica). To
// regenerate after a protocol change: run this test; it prints the encoder's
// bytes in the doc's layout.

TEST_CASE("protocol.md lock-group examples are what the encoder produces", "[wire][lockgroup]") {
  // The doc's example: key 00 01 .. 1f, group "example", epoch 0x301 (round 3,
  // node 1), session 5.
  std::string key_hex;
  for (int i = 0; i < 32; ++i) key_hex += hex_block(std::string(1, static_cast<char>(i))).substr(0, 2);
  auto key = ClusterKey::from_hex(key_hex);
  REQUIRE(key.is_ok());
  const std::string sequencer = sign_sequencer({"example", "orders", LockMode::kExclusive, 7}, key.value());
  REQUIRE(verify_sequencer(sequencer, key.value(), "example").is_ok());

  const LockRequest request{9, AcquireRequest{0x301, 5, "orders", LockMode::kExclusive, 10'000, 0, 3}};
  LockReply reply;
  reply.id = 9;
  reply.epoch = 0x301;
  reply.master = 1;
  reply.master_endpoint = "tcp://10.0.0.1:7500";
  reply.lease_ms = 11'500;
  reply.token = 7;
  reply.mode = LockMode::kExclusive;
  reply.sequencer = sequencer;

  const std::string doc = test::read_protocol_doc();
  const std::string request_bytes = wire::encode_lock_request(request);
  const std::string reply_bytes = wire::encode_lock_reply(reply);
  INFO("sequencer " << sequencer);
  INFO("encoded request:\n" << hex_block(request_bytes));
  INFO("encoded reply:\n" << hex_block(reply_bytes));
  CHECK(test::doc_example_bytes(doc, "lock-example acquire-request") == request_bytes);
  CHECK(test::doc_example_bytes(doc, "lock-example acquire-reply") == reply_bytes);
  CHECK(doc.find(sequencer) != std::string::npos);  // spelled out in the text too

  auto decoded = wire::decode_lock_request(request_bytes, Limits{});
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value() == request);
  check_reply_round_trip(reply);
}

}  // namespace
TEST_CASE("lock wire: set_members names 1 to 64 nodes, ids 1 to 255 increasing, each with an address",
          "[wire][lockgroup][members]") {
  auto decoded = [](SetMembersRequest r) {
    return wire::decode_lock_request(wire::encode_lock_request({1, r}), Limits{});
  };
  CHECK(decoded({0, {{1, "a"}}}).is_ok());
  const std::vector<std::pair<const char*, SetMembersRequest>> bad = {
      {"no node", {0, {}}},
      {"id 0", {0, {{0, "a"}}}},
      {"id 256", {0, {{256, "a"}}}},
      {"ids out of order", {0, {{2, "a"}, {1, "b"}}}},
      {"an id twice", {0, {{2, "a"}, {2, "b"}}}},
      {"no address", {0, {{1, ""}}}},
      {"a key too short", {0, {{1, "a", "rq:rM>}U?@Lns47E1"}}}},
  };
  for (const auto& [what, request] : bad) {
    INFO(what);
    CHECK(decoded(request).status().code() == Code::kBadRequest);
  }
  // A request's lists hold at most 64 items, and an address at most 1024 bytes.
  std::vector<wire::MemberInfo> most;
  for (uint32_t id = 1; id <= 64; ++id) most.push_back({id, "a"});
  CHECK(decoded({0, most}).is_ok());
  most.push_back({65, "a"});
  CHECK(decoded({0, most}).status().code() == Code::kTooLarge);
  CHECK(decoded({0, {{1, std::string(1025, 'a')}}}).status().code() == Code::kTooLarge);
  CHECK(decoded({0, {{1, "a", std::string(41, 'k')}}}).status().code() == Code::kTooLarge);
}

TEST_CASE("lock wire: set_replicas names a replica set whose quorums meet", "[wire][lockgroup][replicaset]") {
  auto decoded = [](SetReplicasRequest r) {
    return wire::decode_lock_request(wire::encode_lock_request({1, r}), Limits{});
  };
  const std::vector<wire::ReplicaInfo> three = {{1, "tcp://a"}, {2, "tcp://b"}, {3, "tcp://c"}};
  CHECK(decoded({0, three, 2, 2}).is_ok());
  CHECK(decoded({0, three, 3, 1}).is_ok());
  const std::vector<std::pair<const char*, SetReplicasRequest>> bad = {
      {"no replica", {0, {}, 1, 1}},
      {"id 0", {0, {{0, "tcp://a"}}, 1, 1}},
      {"id 256", {0, {{256, "tcp://a"}}, 1, 1}},
      {"an id twice", {0, {{2, "tcp://a"}, {2, "tcp://b"}}, 2, 1}},
      {"ids out of order", {0, {{2, "tcp://a"}, {1, "tcp://b"}}, 2, 1}},
      {"no address", {0, {{1, ""}}, 1, 1}},
      {"an address twice", {0, {{1, "tcp://a"}, {2, "tcp://a"}}, 2, 1}},
      {"a key too short", {0, {{1, "tcp://a", "rq:rM>}U?@Lns47E1"}}, 1, 1}},
      {"W 0", {0, three, 0, 3}},
      {"R 0", {0, three, 3, 0}},
      {"W over N", {0, three, 4, 2}},
      {"R over N", {0, three, 2, 4}},
      {"R + W = N", {0, three, 2, 1}},
  };
  for (const auto& [what, request] : bad) {
    INFO(what);
    CHECK(decoded(request).status().code() == Code::kBadRequest);
  }
  CHECK_THAT(decoded({0, three, 1, 1}).status().message(), Catch::Contains("cannot meet"));
  // Malformed fields, missing ones, and lists over a request's 64 items.
  const Fields set = plus(
      envelope("set_replicas"),
      {{"version", u64(0)},
       {"replicas", array_value({map_value({{"id", u64(1)}, {"address", str("tcp://a")}, {"receipt_id", u64(5)}})})},
       {"write_quorum", u64(1)},
       {"read_quorum", u64(1)}});
  REQUIRE(decode(map_of(set)).code == Code::kOk);
  test::check_cases(
      test::bad_request_cases(
          kId,
          {
              {"replicas as a map", with(set, "replicas", map_value({{"id", u64(1)}}))},
              {"receipt_id as text",
               with(set, "replicas",
                    array_value({map_value({{"id", u64(1)}, {"address", str("tcp://a")}, {"receipt_id", str("5")}})}))},
              {"a replica without an id", with(set, "replicas", array_value({map_value({{"address", str("a")}})}))},
              {"a replica with a colour",
               with(set, "replicas",
                    array_value({map_value({{"id", u64(1)}, {"address", str("a")}, {"colour", str("red")}})}))},
              {"write_quorum as text", with(set, "write_quorum", str("1"))},
              {"a phase that is not one", plus(set, {{"phase", str("pausing")}})},
              {"a phase as a number", plus(set, {{"phase", u64(1)}})},
              {"read_quorum over 2^32", with(set, "read_quorum", u64(uint64_t{1} << 32))},
              {"without version", without(set, "version")},
              {"without replicas", without(set, "replicas")},
              {"without write_quorum", without(set, "write_quorum")},
              {"without read_quorum", without(set, "read_quorum")},
              {"get_replicas with a field", plus(envelope("get_replicas"), {{"version", u64(1)}})},
          }),
      decode);
  CHECK(decode(map_of(with(set, "replicas", array_value({u64(1)})))).code == Code::kMalformed);  // not a map
  std::vector<wire::ReplicaInfo> most;
  for (uint32_t id = 1; id <= 64; ++id) most.push_back({id, "tcp://r" + std::to_string(id)});
  CHECK(decoded({0, most, 33, 32}).is_ok());
  most.push_back({65, "tcp://r65"});
  CHECK(decoded({0, most, 33, 33}).status().code() == Code::kTooLarge);
  CHECK(decoded({0, {{1, std::string(1025, 'a')}}, 1, 1}).status().code() == Code::kTooLarge);
}

}  // namespace palisade
