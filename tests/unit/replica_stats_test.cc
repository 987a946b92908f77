// The `stats` request (docs/protocol.md "stats"): its codec, and the handler's
// answer on both stores: the number of keys and the fence floors.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>

#include "base/hybrid_clock.h"
#include "replica/handler.h"
#include "replica/lmdb_store.h"
#include "replica/memory_store.h"
#include "tests/support/raw_lmdb.h"
#include "tests/support/replica_requests.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using wire::ReplicaReply;
using wire::ReplicaRequest;
using wire::ReplicaStats;
using wire::StatsRequest;

using namespace std::string_literals;

// ---- Codec.

TEST_CASE("stats wire: the request and the reply round trip", "[replica][wire]") {
  for (uint32_t max : {uint32_t{0}, uint32_t{1}, uint32_t{wire::kMaxStatsFloors}}) {
    const ReplicaRequest request{7, StatsRequest{max}};
    auto decoded = wire::decode_request(wire::encode_request(request), {});
    REQUIRE(decoded.is_ok());
    CHECK(decoded.value() == request);
  }
  ReplicaReply reply;
  reply.id = 9;
  reply.stats = ReplicaStats{.keys = 1'000'000,
                             .floor_count = 3000,
                             .floors = {{"L", 5}, {std::string(256, 'x'), UINT64_MAX}, {"\0\xff"s, 1}},
                             .data_bytes = 123456789,
                             .format = 2,
                             .insecure = true,
                             .config_version = 7,
                             .config_paused = true,
                             .receipt_id = 0x1234'5678'9abc};
  const std::string bytes = wire::encode_reply(reply);
  auto decoded = wire::decode_reply(bytes, {});
  INFO(decoded.status().to_string());
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value().stats == reply.stats);
  CHECK(wire::encode_reply(decoded.value()) == bytes);
  // Empty stats still say so: a replica with no keys answers keys 0.
  reply.stats = ReplicaStats{};
  decoded = wire::decode_reply(wire::encode_reply(reply), {});
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value().stats == ReplicaStats{});
  // Other replies carry none.
  decoded = wire::decode_reply(wire::encode_reply(ReplicaReply{}), {});
  REQUIRE(decoded.is_ok());
  CHECK_FALSE(decoded.value().stats.has_value());
}

using Packer = msgpack::packer<msgpack::sbuffer>;

// A stats request with `count` fields after the envelope, written by `fields`.
std::string stats_request(const std::function<void(Packer&)>& fields, uint32_t count) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  wire::write_envelope(pk, 3 + count, 5, "stats");
  fields(pk);
  return {buf.data(), buf.size()};
}

// A stats reply whose floor list is `floors`, as raw bytes.
std::string stats_reply(const std::string& floors, uint64_t floor_count) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  wire::write_envelope(pk, 6, 5, "reply");
  wire::pack_status(pk, Status::ok());
  wire::pack_text(pk, "clock");
  pk.pack_uint64(1);
  wire::pack_text(pk, "stats");
  pk.pack_map(5);
  for (auto [name, value] : {std::pair{"keys", uint64_t{1}}, std::pair{"floor_count", floor_count}}) {
    wire::pack_text(pk, name);
    pk.pack_uint64(value);
  }
  wire::pack_text(pk, "floors");
  wire::pack_bytes(pk, floors);
  wire::pack_text(pk, "data_bytes");
  pk.pack_uint64(0);
  wire::pack_text(pk, "format");
  pk.pack_uint64(2);
  return {buf.data(), buf.size()};
}

TEST_CASE("stats wire: bad requests and bad replies are refused with a reason", "[replica][wire]") {
  auto decode = [](const std::string& bytes) { return wire::decode_request(bytes, {}); };
  auto max_floors = [](std::function<void(Packer&)> value) {
    return stats_request(
        [&](Packer& pk) {
          wire::pack_text(pk, "max_floors");
          value(pk);
        },
        1);
  };
  // No fields: every floor up to the limit.
  auto plain = decode(stats_request([](Packer&) {}, 0));
  REQUIRE(plain.is_ok());
  CHECK(std::get<StatsRequest>(plain.value().body).max_floors == wire::kMaxStatsFloors);
  auto over = decode(max_floors([](Packer& pk) { pk.pack_uint64(wire::kMaxStatsFloors + 1); }));
  CHECK(over.code() == Code::kBadRequest);
  CHECK(over.status().message().find("above 1000") != std::string::npos);
  CHECK(decode(max_floors([](Packer& pk) { wire::pack_text(pk, "10"); })).code() == Code::kBadRequest);
  CHECK(decode(max_floors([](Packer& pk) { pk.pack_int64(-1); })).code() == Code::kBadRequest);
  CHECK(decode(stats_request([](Packer& pk) { wire::pack_text(pk, "key"); wire::pack_text(pk, "k"); }, 1)).code() ==
        Code::kBadRequest);

  // Replies: the hand-built one decodes; a floor cut short, a name too long,
  // more floors listed than counted do not.
  const std::string floor_l = "\x00\x01L\x00\x00\x00\x00\x00\x00\x00\x05"s;
  auto good = wire::decode_reply(stats_reply(floor_l, 1), {});
  INFO(good.status().to_string());
  REQUIRE(good.is_ok());
  CHECK(good.value().stats->floors == std::vector<std::pair<std::string, uint64_t>>{{"L", 5}});
  CHECK(wire::decode_reply(stats_reply(floor_l.substr(0, 10), 1), {}).code() == Code::kBadRequest);
  CHECK(wire::decode_reply(stats_reply("\x01\x01" + std::string(257 + 8, 'x'), 1), {}).code() == Code::kBadRequest);
  CHECK(wire::decode_reply(stats_reply(floor_l, 0), {}).code() == Code::kBadRequest);
}

// ---- The handler, on both stores.

constexpr uint64_t kNowMs = 1'700'000'000'000;

struct MemoryBacked {
  replica::ReplicaStore& store() { return mem; }
  uint32_t format = 0;
  replica::MemoryStore mem;
};

struct LmdbBacked {
  LmdbBacked() {
    auto r = replica::LmdbStore::open(dir.path(), {.map_size_bytes = size_t{64} << 20});
    REQUIRE(r.is_ok());
    lmdb = std::move(r).value();
  }
  replica::ReplicaStore& store() { return *lmdb; }
  uint32_t format = 4;
  TempDir dir;
  std::unique_ptr<replica::LmdbStore> lmdb;
};

template <typename Backing>
struct Replica {
  Backing backing;
  ManualClock physical{kNowMs};
  HybridClock clock{physical};
  replica::ReplicaHandler handler{backing.store(), clock};

  ReplicaReply call(std::vector<ReplicaRequest> batch) {
    auto replies = handler.handle_batch(batch);
    REQUIRE(replies.size() == batch.size());
    return replies.back();
  }
  ReplicaStats stats(uint32_t max_floors = wire::kMaxStatsFloors) {
    ReplicaReply r = call({{1, StatsRequest{max_floors}}});
    INFO(r.status.to_string());
    REQUIRE(r.status.is_ok());
    REQUIRE(r.stats.has_value());
    return *r.stats;
  }
};

FencedTimestamp at(uint64_t token, uint64_t logical) { return {token, hlc::make(kNowMs, logical)}; }

TEMPLATE_TEST_CASE("stats: the handler counts keys and lists fence floors by lock name", "[replica]", MemoryBacked,
                   LmdbBacked) {
  Replica<TestType> r;
  ReplicaStats empty = r.stats();
  CHECK(empty.keys == 0);
  CHECK(empty.floor_count == 0);
  CHECK(empty.floors.empty());
  CHECK(empty.format == r.backing.format);
  CHECK(empty.insecure);  // a handler without the cluster key takes any token, and says so

  REQUIRE(r.call({test::write_req("a", "1", at(0, 1))}).status.is_ok());
  REQUIRE(r.call({test::write_req("b", "2", at(5, 1), "L")}).status.is_ok());  // raises L's floor to 5
  REQUIRE(r.call({test::fence_req("M", 9)}).status.is_ok());
  REQUIRE(r.call({test::fence_req("C", 2)}).status.is_ok());
  REQUIRE(r.call({test::delete_req("a", at(0, 2))}).status.is_ok());  // a tombstone is still a key
  ReplicaStats s = r.stats();
  CHECK(s.keys == 2);
  CHECK(s.floor_count == 3);
  CHECK(s.floors == std::vector<std::pair<std::string, uint64_t>>{{"C", 2}, {"L", 5}, {"M", 9}});
  if (r.backing.format != 0) CHECK(s.data_bytes > 0);

  // Cut: the first floors by name, and the count of all.
  ReplicaStats cut = r.stats(2);
  CHECK(cut.floor_count == 3);
  CHECK(cut.floors == std::vector<std::pair<std::string, uint64_t>>{{"C", 2}, {"L", 5}});
  CHECK(r.stats(0).floors.empty());

  // A key purged of its only version is gone; a raised floor shows its new value.
  REQUIRE(r.call({test::purge_req("b", at(5, 1))}).applied);
  REQUIRE(r.call({test::fence_req("L", 7)}).status.is_ok());
  s = r.stats();
  CHECK(s.keys == 1);
  CHECK(s.floors == std::vector<std::pair<std::string, uint64_t>>{{"C", 2}, {"L", 7}, {"M", 9}});

  // Within a batch, stats see the batch's earlier changes.
  ReplicaReply in_batch = r.call({test::write_req("c", "3", at(0, 3)), test::fence_req("D", 1), {2, StatsRequest{}}});
  REQUIRE(in_batch.stats.has_value());
  CHECK(in_batch.stats->keys == 2);
  CHECK(in_batch.stats->floor_count == 4);
}

TEST_CASE("stats: a damaged floor record on disk is reported corrupt", "[replica]") {
  TempDir dir;
  {
    auto s = replica::LmdbStore::open(dir.path(), {});
    REQUIRE(s.is_ok());
    REQUIRE(s.value()->apply(replica::Change{.lock = "L", .floor = 5}).is_ok());
    REQUIRE(s.value()->commit().is_ok());
  }
  {
    test::RawLmdb raw(dir.path());
    auto rec = raw.get("floors", "L");
    REQUIRE(rec);
    std::string damaged = *rec;
    damaged[0] ^= 0x01;
    raw.put("floors", "L", damaged);
    raw.commit();
  }
  auto s = replica::LmdbStore::open(dir.path(), {});
  REQUIRE(s.is_ok());
  auto stats = s.value()->stats(wire::kMaxStatsFloors);
  CHECK(stats.code() == Code::kCorrupt);
  // Counting alone reads no record.
  auto counted = s.value()->stats(0);
  REQUIRE(counted.is_ok());
  CHECK(counted.value().floor_count == 1);
}

}  // namespace
}  // namespace palisade
