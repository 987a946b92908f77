// The replica wire codec (docs/protocol.md, "Replica"): every request and reply
// round-trips, and every kind of bad input gets its own Code without crashing.
// Random cases come from fixed seeds so a failure reproduces.
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "wire/replica_protocol.h"
#include "palisade/timestamp.h"
#include "tests/support/printers.h"
#include "tests/unit/bad_request_checks.h"
#include "tests/unit/msgpack_builder.h"
#include "tests/unit/random_bytes.h"
#include "tests/unit/round_trip_checks.h"

namespace palisade {
namespace {

using wire::ChangesRequest;
using wire::CommitRequest;
using wire::FeedChange;
using wire::FeedPosition;
using wire::FenceRequest;
using wire::InstallConfigRequest;
using wire::Limits;
using wire::PingRequest;
using wire::PurgeRequest;
using wire::ReadRequest;
using wire::ReplicaReply;
using wire::ReplicaRequest;
using wire::ScanRequest;
using wire::Version;
using wire::VersionState;
using wire::WriteRequest;

using test::array_value;
using test::bin;
using test::boolean;
using test::Decoded;
using test::Field;
using test::Fields;
using test::i64;
using test::map_of;
using test::map_value;
using test::nil;
using test::random_bytes;
using test::raw;
using test::str;
using test::u64;
using test::Value;
using test::with;
using test::without;

constexpr uint64_t kSeed = 0x31ce'0000'0001;

Value ts_bin(const FencedTimestamp& ts) {
  auto e = ts.encode();
  return bin(std::string(reinterpret_cast<const char*>(e.data()), e.size()));
}

const FencedTimestamp kTs{7, hlc::make(1'764'479'453'123, 4)};
constexpr uint64_t kId = 4242;

// The fields of a valid write, in the order the encoder writes them.
Fields write_fields() {
  return {{"v", u64(1)},         {"id", u64(kId)},   {"type", str("write")},     {"key", bin("k")},
          {"value", bin("val")}, {"tombstone", boolean(false)}, {"ts", ts_bin(kTs)}, {"lock", str("L")}};
}
const WriteRequest kWrite{"k", "val", false, kTs, "L"};

Decoded decode(std::string_view bytes, const Limits& limits = {}) {
  return test::decoded_by(wire::decode_request, bytes, limits);
}

Status decode_reply_status(std::string_view bytes) { return wire::decode_reply(bytes, Limits{}).status(); }

// ---- Comparing replies (ReplicaReply has no operator==: Status has none).

void check_same_reply(const ReplicaReply& got, const ReplicaReply& want) {
  test::check_same_id_and_status(got, want);
  CHECK(got.clock == want.clock);
  CHECK(got.floor == want.floor);
  CHECK(got.stored_ts == want.stored_ts);
  CHECK(got.digest == want.digest);
  CHECK(got.versions == want.versions);
  CHECK(got.floors == want.floors);
  CHECK(got.applied == want.applied);
  CHECK(got.config == want.config);
  CHECK(got.dropped == want.dropped);
  CHECK(got.receipts == want.receipts);
  CHECK(got.records == want.records);
  CHECK(got.keys_done == want.keys_done);
  CHECK(got.scanned == want.scanned);
  CHECK(got.more == want.more);
  CHECK(got.feed == want.feed);
  CHECK(got.changes == want.changes);
  CHECK(got.refused == want.refused);
  CHECK(got.first_refusal == want.first_refusal);
}

ReplicaReply round_trip_reply(const ReplicaReply& reply) {
  auto decode = [](std::string_view bytes) { return wire::decode_reply(bytes, Limits{}); };
  return test::round_trip_reply(reply, wire::encode_reply, decode);
}

void check_reply_round_trip(const ReplicaReply& reply) { check_same_reply(round_trip_reply(reply), reply); }

ReplicaReply reply_of(uint64_t id, Status status, uint64_t clock) {
  ReplicaReply r;
  r.id = id;
  r.status = std::move(status);
  r.clock = clock;
  return r;
}

FencedTimestamp random_ts(std::mt19937_64& rng) {
  return {rng() % 3 == 0 ? 0 : rng(), rng() % 5 == 0 ? UINT64_MAX : rng()};
}

WriteRequest with_commits(WriteRequest w, std::vector<CommitRequest> commits) {
  w.commits = std::move(commits);
  return w;
}

// One carried commit as the `commits` field packs it.
std::string packed_commit(std::string_view key, const FencedTimestamp& ts, uint64_t hash) {
  std::string out;
  for (uint64_t v : {uint64_t{key.size()} << 48, ts.token, ts.hlc, hash}) {
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
  }
  out.erase(2, 6);  // the key's length takes two bytes
  out.insert(2, key);
  out.push_back(0);  // no receipts
  return out;
}

// Two receipts of distinct replicas.
const wire::Certificate kCertificate = {{1, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
                                        {UINT64_MAX, {0xff, 0, 0xfe}}};

// ---- Round trips.

TEST_CASE("wire: every request type round-trips", "[wire]") {
  const std::vector<std::pair<const char*, ReplicaRequest>> cases = {
      {"ping", {1, PingRequest{}}},
      {"ping with id 0", {0, PingRequest{}}},
      {"write", {2, kWrite}},
      {"write with binary key and value",
       {UINT64_MAX, WriteRequest{std::string("k\0\xff", 3), std::string("\0\x80v", 3), false, kTs, "lock"}}},
      {"unfenced write with empty value", {3, WriteRequest{"k", "", false, {0, 99}, ""}}},
      {"tombstone write", {4, WriteRequest{"k", "", true, kTs, "L"}}},
      {"committed write", {4, WriteRequest{"k", "v", false, kTs, "L", true}}},
      {"committed tombstone write", {4, WriteRequest{"k", "", true, kTs, "L", true}}},
      {"fence", {5, FenceRequest{"L", 9}}},
      {"fence with the largest token", {6, FenceRequest{"L", UINT64_MAX}}},
      {"fence with a sequencer", {6, FenceRequest{"L", 9, "ps2.abc.def"}}},
      {"write with a sequencer", {4, WriteRequest{"k", "v", false, kTs, "L", false, "ps2.abc.def"}}},
      {"committed tombstone with a sequencer", {4, WriteRequest{"k", "", true, kTs, "L", true, "ps2.x.y"}}},
      {"repair naming the corrupt record it replaces",
       {4, WriteRequest{"k", "v", false, kTs, "L", true, "ps2.x.y", 0xfeed'0000'0000'beefULL}}},
      {"repair replacing a record of digest 0", {4, WriteRequest{"k", "", true, {0, 9}, "", true, "", 0}}},
      {"commit", {7, CommitRequest{"k", kTs}}},
      {"commit with a certificate", {7, CommitRequest{"k", kTs, 3, kCertificate}}},
      {"repair with a certificate",
       {4,
        [] {
          WriteRequest w{"k", "v", false, kTs, "L", true, "ps2.x.y"};
          w.certificate = kCertificate;
          return w;
        }()}},
      {"write carrying commits with certificates",
       {7, with_commits(kWrite, {{"a", kTs, 1, kCertificate}, {"b", kTs, 2}})}},
      {"write carrying commits",
       {7, with_commits(kWrite, {{"a", kTs, 1}, {std::string("\0\xff", 2), {0, 9}, UINT64_MAX}})}},
      {"purge", {8, PurgeRequest{"k", {UINT64_MAX, UINT64_MAX}}}},
      {"read", {9, ReadRequest{"k"}}},
      {"read of the empty key", {10, ReadRequest{""}}},
      {"read with the floor of another lock", {11, ReadRequest{"k", "M"}}},
      {"fenced read", {11, ReadRequest{"k", "", FenceRequest{"L", 9}}}},
      {"fenced read with a sequencer and another lock's floor",
       {11, ReadRequest{"k", "M", FenceRequest{"L", UINT64_MAX, "ps2.abc.def"}}}},
      {"write naming its cluster", {12, kWrite, std::string("\x00\xff\x5a cluster id \x01", 16)}},
      {"ping naming its cluster", {13, PingRequest{}, std::string(16, '\x07')}},
      {"write naming its replica set", {14, kWrite, "", 7}},
      {"read naming the largest replica set version", {15, ReadRequest{"k"}, std::string(16, 'c'), UINT64_MAX}},
      {"install_config", {16, InstallConfigRequest{"pcc1.cmVjb3Jk.c2ln"}}},
      {"scan", {17, ScanRequest{"jobs/", "", 1000}}},
      {"scan of every key, after one, one key", {18, ScanRequest{"", std::string("k\0\xff", 3), 1}}},
      {"changes from the oldest kept", {19, ChangesRequest{"jobs/", 0, 1000}}},
      {"changes of every key after the largest number, one", {20, ChangesRequest{"", UINT64_MAX, 1}}},
  };
  test::check_request_round_trips(cases, wire::encode_request, wire::decode_request);
}

TEST_CASE("wire: random requests round-trip", "[wire]") {
  auto random_request = [](std::mt19937_64& rng) {
    ReplicaRequest r;
    r.id = rng();
    std::string key = random_bytes(rng, 64);
    switch (rng() % 6) {
      case 0:
        r.body = PingRequest{};
        break;
      case 1: {
        bool tombstone = rng() % 3 == 0;
        WriteRequest w{key, tombstone ? "" : random_bytes(rng, 300), tombstone, random_ts(rng), random_bytes(rng, 20),
                       rng() % 2 == 0};
        for (size_t i = rng() % 3 == 0 ? rng() % 4 : 0; i > 0; --i) {
          w.commits.push_back({random_bytes(rng, 64), random_ts(rng), rng()});
        }
        r.body = std::move(w);
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
      default: {
        ReadRequest read{key, rng() % 2 == 0 ? "" : random_bytes(rng, 20)};
        if (rng() % 3 == 0) read.fence = FenceRequest{random_bytes(rng, 20), rng(), random_bytes(rng, 30)};
        r.body = std::move(read);
      }
    }
    return r;
  };
  test::check_random_request_round_trips(kSeed + 1, 5'000, random_request, wire::encode_request,
                                         wire::decode_request);
}

TEST_CASE("wire: a commit without a hash is not carried", "[wire]") {
  // Carried, it would name the version whose hash is 0, not the newest one at its timestamp.
  CHECK(wire::encode_request({kId, with_commits(kWrite, {{"a", kTs}})}) == wire::encode_request({kId, kWrite}));
  auto decoded = wire::decode_request(wire::encode_request({kId, with_commits(kWrite, {{"a", kTs}, {"b", kTs, 5}})}), {});
  REQUIRE(decoded.is_ok());
  CHECK(std::get<WriteRequest>(decoded.value().body).commits == std::vector<CommitRequest>{{"b", kTs, 5}});
}

TEST_CASE("wire: our map builder writes what the encoder writes", "[wire]") {
  // The bad-input tests below edit hand-built messages; they start from this one.
  CHECK(map_of(write_fields()) == wire::encode_request({kId, kWrite}));
}

TEST_CASE("wire: every reply shape round-trips", "[wire]") {
  SECTION("ok") { check_reply_round_trip(reply_of(11, Status::ok(), hlc::make(1'764'479'453'123, 9))); }
  SECTION("fence ok with the floor after") {
    ReplicaReply r = reply_of(12, Status::ok(), 5);
    r.floor = 9;
    check_reply_round_trip(r);
  }
  SECTION("fenced with floor") {
    ReplicaReply r = reply_of(13, Status(Code::kFenced, "token 4 is below the fence floor 7 of lock 'L'"), 77);
    r.floor = 7;
    check_reply_round_trip(r);
  }
  SECTION("stale with stored_ts") {
    ReplicaReply r = reply_of(14, Status(Code::kStale, "newer version stored"), 78);
    r.stored_ts = FencedTimestamp{3, hlc::make(100, 2)};
    check_reply_round_trip(r);
  }
  SECTION("stale with a zero stored_ts") {
    ReplicaReply r;
    r.id = 15;
    r.status = Status(Code::kStale, "");
    r.stored_ts = FencedTimestamp{};
    check_reply_round_trip(r);
  }
  SECTION("corrupt with the damaged record's digest") {
    ReplicaReply r = reply_of(15, Status(Code::kCorrupt, "stored versions of key 'k' are corrupt"), 80);
    for (uint64_t digest : {uint64_t{0}, uint64_t{0x0123'4567'89ab'cdef}, UINT64_MAX}) {
      r.digest = digest;
      check_reply_round_trip(r);
    }
  }
  SECTION("write ok with its receipt") {
    ReplicaReply r = reply_of(17, Status::ok(), 81);
    r.receipts = {kCertificate[0]};
    check_reply_round_trip(r);
  }
  SECTION("read with a receipt per version") {
    ReplicaReply r = reply_of(18, Status::ok(), 82);
    r.versions = {Version{kTs, "L", VersionState::kPending, false, "b"}, Version{kTs, "L", VersionState::kCommitted, false, "a"}};
    r.receipts = kCertificate;
    check_reply_round_trip(r);
  }
  SECTION("read: committed version with its lock's floor") {
    ReplicaReply r = reply_of(16, Status::ok(), 79);
    r.versions = {Version{kTs, "L", VersionState::kCommitted, false, std::string("v\0\xff", 3)}};
    r.floors = {{"L", 4}};
    check_reply_round_trip(r);
  }
  const std::vector<std::pair<const char*, Version>> single_versions = {
      {"read: pending version without a lock", Version{{0, 5}, "", VersionState::kPending, false, "value"}},
      {"read: tombstone", Version{kTs, "L", VersionState::kCommitted, true, ""}},
      {"read: pending tombstone", Version{kTs, "L", VersionState::kPending, true, ""}},
  };
  for (const auto& [name, version] : single_versions) {
    DYNAMIC_SECTION(name) {
      ReplicaReply r;
      r.id = 17;
      r.versions = {version};
      check_reply_round_trip(r);
    }
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
    ReplicaReply r = reply_of(20, Status::ok(), 1);
    ReplicaReply got = round_trip_reply(r);
    check_same_reply(got, r);
    CHECK(got.versions.empty());
    CHECK(got.newest() == nullptr);
  }
  SECTION("applied") {
    ReplicaReply r;
    r.id = 21;
    r.applied = true;
    check_reply_round_trip(r);
  }
  SECTION("scan: keys with their versions, a corrupt one, receipts, floors and more") {
    ReplicaReply r = reply_of(23, Status::ok(), 4);
    r.scanned = {{"a/1",
                  {false,
                   {Version{kTs, "L", VersionState::kPending, false, "b"},
                    Version{kTs, "L", VersionState::kCommitted, false, "a"}}}},
                 {"a/2", {true, {}}},
                 {std::string("a/\xff", 3), {false, {Version{{0, 5}, "", VersionState::kCommitted, true, ""}}}}};
    r.receipts = {kCertificate[0], kCertificate[1], kCertificate[0]};
    r.floors = {{"L", 7}};
    r.more = true;
    check_reply_round_trip(r);
  }
  SECTION("scan: receipts not one per version, keys out of order, empty keys") {
    ReplicaReply r = reply_of(24, Status::ok(), 4);
    r.scanned = {{"a/1", {false, {Version{kTs, "L", VersionState::kCommitted, false, "a"}}}}};
    r.receipts = kCertificate;
    CHECK(wire::decode_reply(wire::encode_reply(r), Limits{}).code() == Code::kBadRequest);
    r.receipts.clear();
    r.scanned.push_back({"a/0", {}});
    CHECK(wire::decode_reply(wire::encode_reply(r), Limits{}).code() == Code::kBadRequest);
    r.scanned.back().key = "a/1";
    CHECK(wire::decode_reply(wire::encode_reply(r), Limits{}).code() == Code::kBadRequest);
    r.scanned.back().key = "";
    CHECK(wire::decode_reply(wire::encode_reply(r), Limits{}).code() == Code::kBadRequest);
    r.scanned.back().key = "a/2";
    CHECK(wire::decode_reply(wire::encode_reply(r), Limits{}).is_ok());
  }
  SECTION("changes: the feed's position, changes of every kind, more") {
    ReplicaReply r = reply_of(25, Status::ok(), 4);
    r.feed = FeedPosition{UINT64_MAX, 3, 9};
    r.changes = {FeedChange{4, "a/1", Version{kTs, "L", VersionState::kPending, false, "v"}},
                 FeedChange{9, std::string("a/\0", 3), Version{{0, 5}, "", VersionState::kCommitted, true, ""}}};
    r.more = true;
    check_reply_round_trip(r);
  }
  SECTION("changes: an empty page keeps its position") {
    ReplicaReply r = reply_of(26, Status::ok(), 4);
    r.feed = FeedPosition{7, 0, 0};
    check_reply_round_trip(r);
  }
  SECTION("changes: out of order, without a log, log 0, empty keys") {
    ReplicaReply r = reply_of(27, Status::ok(), 4);
    r.feed = FeedPosition{7, 1, 2};
    r.changes = {FeedChange{2, "a", Version{kTs, "L", VersionState::kCommitted, false, "a"}},
                 FeedChange{2, "b", Version{kTs, "L", VersionState::kCommitted, false, "b"}}};
    CHECK(wire::decode_reply(wire::encode_reply(r), Limits{}).code() == Code::kBadRequest);
    r.changes.back().seq = 3;
    CHECK(wire::decode_reply(wire::encode_reply(r), Limits{}).is_ok());
    r.changes.back().key = "";
    CHECK(wire::decode_reply(wire::encode_reply(r), Limits{}).code() == Code::kBadRequest);
    r.changes.back().key = "b";
    r.feed->log = 0;
    CHECK(wire::decode_reply(wire::encode_reply(r), Limits{}).code() == Code::kBadRequest);
    r.feed.reset();
    CHECK(wire::decode_reply(wire::encode_reply(r), Limits{}).code() == Code::kBadRequest);
  }
  SECTION("stale_config with the replica's certificate") {
    ReplicaReply r = reply_of(22, Status(Code::kStaleConfig, "this replica has version 4"), 3);
    r.config = "pcc1.cmVjb3Jk.c2ln";
    check_reply_round_trip(r);
  }
  SECTION("error replies of every code") {
    for (size_t c = 0; c < kCodeCount; ++c) {
      const auto code = static_cast<Code>(c);
      INFO("code " << code_name(code));
      ReplicaReply r = wire::error_reply(UINT64_MAX - c, Status(code, "because " + std::to_string(c)));
      check_reply_round_trip(r);
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
  CHECK(wire::decode_reply(map_of(with(reply, "digest", str("5"))), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_reply(map_of(with(reply, "digest", i64(-5))), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_reply(map_of(with(reply, "digest", u64(5))), limits).value().digest == 5u);

  const Fields version = {{"ts", ts_bin(kTs)},
                          {"lock", str("L")},
                          {"state", str("committed")},
                          {"tombstone", boolean(false)},
                          {"value", bin("x")}};
  auto with_versions = [&](std::vector<Value> items) {
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
  std::vector<Value> too_many(Limits::kMaxVersionsPerKey + 1, map_value(version));
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
  test::check_random_garbage_is_refused(kSeed + 2, decode, decode_reply_status);
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
  test::for_each_mutation(kSeed + 3, valid, 50'000, [&](const std::string& bytes) {
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
  });
  CHECK(accepted > 100);
  CHECK(rejected > 100);
}

TEST_CASE("wire: every truncation of a valid write is Malformed", "[wire]") {
  test::check_every_truncation_is_malformed(wire::encode_request({kId, kWrite}), decode);
}

TEST_CASE("wire: trailing bytes are Malformed", "[wire]") {
  test::check_trailing_bytes_are_malformed(wire::encode_request({kId, kWrite}), decode);
}

TEST_CASE("wire: a message that is not a map is Malformed", "[wire]") {
  test::check_not_a_map_is_malformed(decode);
  // Nor are bytes that are not MessagePack at all.
  test::check_not_messagepack_is_malformed(decode);
}

TEST_CASE("wire: envelope problems and id_out", "[wire]") {
  std::vector<test::WireCase> cases = test::envelope_cases(write_fields(), kId);
  Fields key_twice = write_fields();
  key_twice.push_back({"key", bin("k2")});
  cases.push_back({"duplicate field", key_twice, Code::kMalformed, 0});
  test::check_cases(cases, decode);
}

TEST_CASE("wire: a request's cluster is the 16 bytes of a cluster id", "[wire]") {
  auto with_cluster = [](std::string id) {
    Fields f = write_fields();
    f.insert(f.begin() + 3, test::Field{"cluster", bin(std::move(id))});
    return f;
  };
  test::check_cases({{"15 bytes", with_cluster(std::string(15, 'c')), Code::kBadRequest, kId},
                     {"none at all", with_cluster(""), Code::kBadRequest, kId},
                     {"17 bytes", with_cluster(std::string(17, 'c')), Code::kTooLarge, kId},
                     {"an integer", [] {
                        Fields f = write_fields();
                        f.push_back({"cluster", u64(1)});
                        return f;
                      }(), Code::kBadRequest, kId}},
                    decode);
  // Encoded right after the envelope, as bin.
  const std::string bytes = wire::encode_request({kId, PingRequest{}, std::string(16, 'c')});
  CHECK(bytes.find(std::string("\xa7" "cluster\xc4\x10") + std::string(16, 'c')) != std::string::npos);
  CHECK(wire::encode_request({kId, PingRequest{}}).find("cluster") == std::string::npos);
}

TEST_CASE("wire: wrong field types are BadRequest", "[wire]") {
  const Fields fence = {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("fence")}, {"lock", str("L")}, {"token", u64(3)}};
  const Fields commit = {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("commit")}, {"key", bin("k")}, {"ts", ts_bin(kTs)}};
  const Fields fenced_read = {{"v", u64(1)},     {"id", u64(kId)},   {"type", str("read")},
                              {"key", bin("k")}, {"lock", str("L")}, {"token", u64(3)}};
  REQUIRE(decode(map_of(fence)).code == Code::kOk);
  REQUIRE(decode(map_of(commit)).code == Code::kOk);
  REQUIRE(decode(map_of(fenced_read)).code == Code::kOk);
  const auto ts_bytes = kTs.encode();
  const std::string ts16(reinterpret_cast<const char*>(ts_bytes.data()), ts_bytes.size());
  test::check_cases(
      test::bad_request_cases(
          kId,
          {
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
              {"replaces as string", with(with(write_fields(), "committed", boolean(true)), "replaces", str("5"))},
              {"replaces negative", with(with(write_fields(), "committed", boolean(true)), "replaces", i64(-5))},
              {"replaces as nil", with(with(write_fields(), "committed", boolean(true)), "replaces", nil())},
              {"token as string", with(fence, "token", str("3"))},
              {"negative token", with(fence, "token", i64(-3))},
              // float64 3.0 written by hand: msgpack-c's packer would write an integral double as an integer.
              {"token as float", with(fence, "token", raw(std::string("\xcb\x40\x08\0\0\0\0\0\0", 9)))},
              {"token as float32", with(fence, "token", raw(std::string("\xca\x40\x40\0\0", 5)))},
              {"token missing", without(fence, "token")},
              {"fence lock missing", without(fence, "lock")},
              {"fenced read without its token", without(fenced_read, "token")},
              {"fenced read without its lock", without(fenced_read, "lock")},
              {"fenced read's token as string", with(fenced_read, "token", str("3"))},
              {"a read's sequencer without a fence",
               with(without(without(fenced_read, "lock"), "token"), "sequencer", str("ps2.a.b"))},
              {"commit ts of 15 bytes", with(commit, "ts", bin(ts16.substr(0, 15)))},
              {"commit key as nil", with(commit, "key", nil())},
              {"commits as int", with(write_fields(), "commits", u64(1))},
              {"commits empty", with(write_fields(), "commits", bin(""))},
              {"commits truncated", with(write_fields(), "commits", bin(packed_commit("a", kTs, 1).substr(0, 20)))},
              {"commits with a trailing byte", with(write_fields(), "commits", bin(packed_commit("a", kTs, 1) + "x"))},
              {"a carried commit with more receipts than it holds",
               with(write_fields(), "commits", bin(packed_commit("a", kTs, 1).substr(0, 27) + std::string(1, '\x01')))},
              {"a carried commit with 16 receipts", with(write_fields(), "commits",
                                                         bin(packed_commit("a", kTs, 1).substr(0, 27) +
                                                             std::string(1, '\x10') + std::string(16 * 24, 'r')))},
              {"certificate without committed", with(write_fields(), "certificate", bin(std::string(48, 'r')))},
              {"certificate empty", with(with(write_fields(), "committed", boolean(true)), "certificate", bin(""))},
              {"certificate not whole receipts", with(commit, "certificate", bin(std::string(47, 'r')))},
              {"ping with a field", {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("ping")}, {"key", bin("k")}}},
              {"scan without a prefix", {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("scan")}, {"limit", u64(5)}}},
              {"scan without a limit", {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("scan")}, {"prefix", bin("p")}}},
              {"scan of limit 0",
               {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("scan")}, {"prefix", bin("p")}, {"limit", u64(0)}}},
              {"scan of limit 1001",
               {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("scan")}, {"prefix", bin("p")}, {"limit", u64(1001)}}},
              {"changes without a prefix",
               {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("changes")}, {"limit", u64(5)}}},
              {"changes without a limit",
               {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("changes")}, {"prefix", bin("p")}}},
              {"changes of limit 0",
               {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("changes")}, {"prefix", bin("p")}, {"limit", u64(0)}}},
              {"changes of limit 1001",
               {{"v", u64(1)}, {"id", u64(kId)}, {"type", str("changes")}, {"prefix", bin("p")}, {"limit", u64(1001)}}},
              {"changes with after as bytes",
               {{"v", u64(1)},
                {"id", u64(kId)},
                {"type", str("changes")},
                {"prefix", bin("p")},
                {"after", bin("1")},
                {"limit", u64(1)}}},
              {"scan with after as int",
               {{"v", u64(1)},
                {"id", u64(kId)},
                {"type", str("scan")},
                {"prefix", bin("p")},
                {"after", u64(1)},
                {"limit", u64(1)}}},
          }),
      decode);
}

TEST_CASE("wire: size limits are TooLarge", "[wire]") {
  const Limits limits;
  SECTION("key") {
    const std::string at_limit(limits.max_key_bytes, 'k');
    CHECK(decode(map_of(with(write_fields(), "key", bin(at_limit))), limits).code == Code::kOk);
    CHECK(decode(map_of(with(write_fields(), "key", bin(at_limit + "k"))), limits).code == Code::kTooLarge);
    CHECK(decode(wire::encode_request({1, ReadRequest{at_limit + "k"}}), limits).code == Code::kTooLarge);
    CHECK(decode(wire::encode_request({1, ScanRequest{at_limit + "k"}}), limits).code == Code::kTooLarge);
    CHECK(decode(wire::encode_request({1, ScanRequest{"p", at_limit + "k"}}), limits).code == Code::kTooLarge);
    CHECK(decode(wire::encode_request({1, ScanRequest{at_limit, at_limit}}), limits).code == Code::kOk);
    CHECK(decode(wire::encode_request({1, ChangesRequest{at_limit + "k"}}), limits).code == Code::kTooLarge);
    CHECK(decode(wire::encode_request({1, ChangesRequest{at_limit}}), limits).code == Code::kOk);
    CHECK(decode(wire::encode_request({1, CommitRequest{at_limit + "k", kTs}}), limits).code == Code::kTooLarge);
    CHECK(decode(wire::encode_request({1, PurgeRequest{at_limit + "k", kTs}}), limits).code == Code::kTooLarge);
    CHECK(decode(map_of(with(write_fields(), "commits", bin(packed_commit(at_limit, kTs, 1)))), limits).code ==
          Code::kOk);
    // A commit of a key too long to store names nothing here: skipped, and
    // the write that carries it is not refused for it.
    auto skipped = wire::decode_request(
        map_of(with(write_fields(), "commits", bin(packed_commit(at_limit + "k", kTs, 1) + packed_commit("a", kTs, 2)))),
        limits);
    REQUIRE(skipped.is_ok());
    const auto& commits = std::get<WriteRequest>(skipped.value().body).commits;
    REQUIRE(commits.size() == 1);
    CHECK(commits[0] == CommitRequest{"a", kTs, 2});
  }
  SECTION("certificate") {
    const wire::Certificate fifteen(wire::kMaxCertificateReceipts, kCertificate[0]);
    CHECK(decode(wire::encode_request({1, CommitRequest{"k", kTs, 1, fifteen}}), limits).code == Code::kOk);
    wire::Certificate sixteen = fifteen;
    sixteen.push_back(kCertificate[1]);
    CHECK(decode(wire::encode_request({1, CommitRequest{"k", kTs, 1, sixteen}}), limits).code == Code::kTooLarge);
  }
  SECTION("carried commits") {
    std::string commits;
    while (commits.size() + packed_commit("k", kTs, 1).size() <= Limits::kMaxCarriedCommitBytes) {
      commits += packed_commit("k", kTs, 1);
    }
    const std::string over = commits + packed_commit("k", kTs, 1);
    CHECK(decode(map_of(with(write_fields(), "commits", bin(commits))), limits).code == Code::kOk);
    CHECK(decode(map_of(with(write_fields(), "commits", bin(over))), limits).code == Code::kTooLarge);
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
    // The largest key, value, lock, sequencer, certificate and carried commits fit in one message.
    WriteRequest w{std::string(limits.max_key_bytes, 'k'), std::string(limits.max_value_bytes, 'v'), false, kTs,
                   std::string(limits.max_lock_bytes, 'L'), true, at_limit, UINT64_MAX};
    w.certificate = wire::Certificate(wire::kMaxCertificateReceipts, kCertificate[0]);
    for (size_t room = Limits::kMaxCarriedCommitBytes; room >= 27;) {  // 27: a commit's bytes besides its key
      const size_t key = std::min(limits.max_key_bytes, room - 27);
      w.commits.push_back({std::string(key, 'c'), kTs, UINT64_MAX});
      room -= wire::carried_commit_bytes(w.commits.back());
    }
    CHECK(decode(wire::encode_request({UINT64_MAX, w}), limits).code == Code::kOk);
  }
  SECTION("whole message") { test::check_whole_message_limit(write_fields(), decode); }
}

TEST_CASE("wire: nesting beyond the depth limit is TooLarge", "[wire]") {
  test::check_nesting_limit(write_fields(), "key", decode);
}

TEST_CASE("wire: huge declared sizes in a tiny buffer", "[wire]") {
  test::check_huge_declared_sizes(write_fields(), "key", decode, decode_reply_status);
}

}  // namespace
}  // namespace palisade
