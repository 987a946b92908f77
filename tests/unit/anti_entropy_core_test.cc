// The anti-entropy session core (antientropy/anti_entropy_core.h) against in-process
// replicas: a ReplicaHandler on a MemoryStore each, messages delivered at once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "antientropy/anti_entropy_core.h"
#include "base/hybrid_clock.h"
#include "base/physical_clock.h"
#include "replica/handler.h"
#include "replica/memory_store.h"

namespace palisade {
namespace {

using client::AntiEntropyConfig;
using client::AntiEntropyCore;
using wire::ReplicaRequest;
using wire::VersionState;

constexpr uint64_t kNowMs = 1'800'000'000'000;

struct Replica {
  ManualClock wall{kNowMs};
  HybridClock clock{wall};
  replica::MemoryStore store;
  replica::ReplicaHandler handler{store, clock};

  wire::ReplicaReply call(wire::ReplicaRequestBody body) {
    ReplicaRequest r{1, std::move(body)};
    return handler.handle_batch(std::span<const ReplicaRequest>(&r, 1)).at(0);
  }
  std::vector<wire::Version> versions(const std::string& key) { return call(wire::ReadRequest{key}).versions; }
  uint64_t floor(const std::string& lock) { return call(wire::ReadRequest{"x", lock}).floors.at(lock); }
};

struct Cluster {
  explicit Cluster(int n) {
    for (int i = 0; i < n; ++i) replicas.push_back(std::make_unique<Replica>());
  }
  std::vector<std::unique_ptr<Replica>> replicas;
  size_t requests = 0;
  std::map<size_t, size_t> sent;  // requests of the last run by type (index in ReplicaRequestBody)
  std::set<int> predating_batches;  // replicas that answer read_many and copy_many with unknown_type
  std::set<int> predating_replaces;  // replicas that refuse `replaces` as an unknown field (bad_request)
  std::set<int> full_disks;  // replicas that answer copy_many with storage_error
  // Called before each request is delivered (the world may change in between).
  std::function<void(const client::AntiEntropySend&)> before_delivery;
  std::vector<client::AntiEntropySend> log;  // every request of the last run
  std::vector<bool> refusing;  // per replica: it refused a repair in the last run

  // Runs a session over the first `compared` replicas (0: all but the
  // targets), the last `targets` replicas its targets; `down` never answers.
  AntiEntropyReport run(AntiEntropyConfig config, int down = -1, int compared = 0, int targets = 0) {
    config.cluster_size = static_cast<int>(replicas.size()) - targets;
    config.replicas = compared > 0 ? compared : config.cluster_size;
    config.targets = targets;
    config.write_quorum = config.cluster_size / 2 + 1;
    config.now_wall_ms = kNowMs;
    AntiEntropyCore core(config);
    requests = 0;
    sent.clear();
    log.clear();
    while (!core.done()) {
      auto sends = core.take_sends();
      REQUIRE(!sends.empty());
      for (auto& s : sends) {
        ++requests;
        if (s.replica == down) {
          core.on_unreachable(s.replica, s.request.id);
          continue;
        }
        ++sent[s.request.body.index()];
        log.push_back(s);
        if (before_delivery) before_delivery(s);
        // A replica older than `replaces` refuses a copy_many that carries it, changing nothing.
        const auto* many = std::get_if<wire::CopyManyRequest>(&s.request.body);
        const bool unknown_field =
            many != nullptr && predating_replaces.count(s.replica) != 0 &&
            std::any_of(many->copies.begin(), many->copies.end(), [](const wire::Copy& c) { return c.replaces; });
        const bool full = many != nullptr && full_disks.count(s.replica) != 0;
        auto reply =
            unknown_field ? std::vector<wire::ReplicaReply>{wire::error_reply(
                                0, Status(Code::kBadRequest, "copy_many has unknown field 'replaces'"))}
            : full ? std::vector<wire::ReplicaReply>{wire::error_reply(0, Status(Code::kStorageError, "disk full"))}
                   : replicas[s.replica]->handler.handle_batch(std::span<const ReplicaRequest>(&s.request, 1));
        const bool batch = std::holds_alternative<wire::ReadManyRequest>(s.request.body) ||
                           std::holds_alternative<wire::CopyManyRequest>(s.request.body);
        if (batch && predating_batches.count(s.replica) != 0) {
          reply.at(0) = wire::error_reply(0, Status(Code::kUnknownType, "unknown message type"));
        }
        reply.at(0).id = s.request.id;
        // Through the codec, as on the wire.
        auto decoded = wire::decode_reply(wire::encode_reply(reply[0]), wire::Limits{});
        REQUIRE(decoded.is_ok());
        core.on_reply(s.replica, decoded.value());
      }
    }
    refusing.clear();
    for (size_t r = 0; r < replicas.size(); ++r) refusing.push_back(core.refusing(static_cast<int>(r)));
    return core.report();
  }
};

FencedTimestamp ts(uint64_t token, uint64_t logical = 0) { return {token, hlc::make(kNowMs - 60'000, logical)}; }

wire::WriteRequest put(std::string key, std::string value, FencedTimestamp t, bool committed = true) {
  return wire::WriteRequest{std::move(key), std::move(value), false, t, t.token ? "L" : "", committed};
}

TEST_CASE("anti-entropy wire: tree, leaf and drop_tombstone round trip, bad input is refused", "[anti_entropy]") {
  const wire::Limits limits;
  for (const ReplicaRequest& r :
       {ReplicaRequest{1, wire::TreeRequest{3, {0, 4095}}}, ReplicaRequest{2, wire::LeafRequest{{7, (1u << 20) - 1}}},
        ReplicaRequest{3, wire::DropTombstoneRequest{"k", ts(2), 99}}}) {
    auto decoded = wire::decode_request(wire::encode_request(r), limits);
    REQUIRE(decoded.is_ok());
    CHECK(decoded.value() == r);
  }
  CHECK(wire::decode_request(wire::encode_request({4, wire::TreeRequest{6, {0}}}), limits).code() ==
        Code::kBadRequest);
  CHECK(wire::decode_request(wire::encode_request({5, wire::TreeRequest{1, {16}}}), limits).code() ==
        Code::kBadRequest);
  CHECK(wire::decode_request(wire::encode_request({6, wire::LeafRequest{{}}}), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_request(wire::encode_request({7, wire::TreeRequest{5, std::vector<uint64_t>(4097, 0)}}), limits)
            .code() == Code::kTooLarge);

  wire::ReplicaReply reply;
  reply.id = 8;
  reply.nodes = {{1, 2}, {3, 0}};
  reply.leaves_done = 2;
  wire::LeafEntry key;
  key.name = "k";
  key.digest = 5;
  key.heads = {wire::VersionHead{ts(1), 6, VersionState::kCommitted, true, "L"}};
  wire::LeafEntry floor;
  floor.kind = wire::LeafEntry::Kind::kFloor;
  floor.name = "L";
  floor.floor = 9;
  floor.sequencer = "ps2.x";
  wire::LeafEntry corrupt;
  corrupt.name = "bad";
  corrupt.corrupt = true;
  reply.entries = {key, floor, corrupt};
  const std::string bytes = wire::encode_reply(reply);
  auto decoded = wire::decode_reply(bytes, limits);
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value().nodes == reply.nodes);
  CHECK(decoded.value().entries == reply.entries);
  CHECK(decoded.value().leaves_done == 2);
  // An entries field cut short is refused, not read past its end.
  const size_t at = bytes.find("ps2.x");
  REQUIRE(at != std::string::npos);
  std::string cut = bytes;
  cut[at - 1] = static_cast<char>(0x7f);  // the sequencer's length now runs past the end
  CHECK(wire::decode_reply(cut, limits).code() == Code::kBadRequest);
}

template <typename T>
size_t index_of() {
  return wire::ReplicaRequestBody(T{}).index();
}

TEST_CASE("anti-entropy wire: read_many and copy_many round trip, bad input is refused", "[anti_entropy]") {
  const wire::Limits limits;
  wire::Version committed{ts(3), "L", VersionState::kCommitted, false, std::string("v\0\xff", 3), "ps2.s"};
  wire::Version tombstone{ts(0), "", VersionState::kCommitted, true, ""};
  for (const ReplicaRequest& r :
       {ReplicaRequest{1, wire::ReadManyRequest{{"a", std::string(limits.max_key_bytes, 'k'), ""}}},
        ReplicaRequest{2, wire::CopyManyRequest{{{"a", committed}, {"b", tombstone}}}}}) {
    auto decoded = wire::decode_request(wire::encode_request(r), limits);
    INFO(decoded.status().to_string());
    REQUIRE(decoded.is_ok());
    CHECK(decoded.value() == r);
  }
  auto code_of = [&](wire::ReplicaRequestBody body) { return wire::decode_request(wire::encode_request({3, body}), limits).code(); };
  CHECK(code_of(wire::ReadManyRequest{}) == Code::kBadRequest);
  CHECK(code_of(wire::ReadManyRequest{std::vector<std::string>(wire::kMaxKeysPerReadMany + 1, "k")}) == Code::kTooLarge);
  CHECK(code_of(wire::ReadManyRequest{{std::string(limits.max_key_bytes + 1, 'k')}}) == Code::kTooLarge);
  CHECK(code_of(wire::CopyManyRequest{}) == Code::kBadRequest);
  CHECK(code_of(wire::CopyManyRequest{std::vector<wire::Copy>(wire::kMaxCopiesPerRequest + 1, {"k", tombstone})}) ==
        Code::kTooLarge);
  wire::Version bad_tombstone = tombstone;
  bad_tombstone.value = "x";
  CHECK(code_of(wire::CopyManyRequest{{{"k", bad_tombstone}}}) == Code::kBadRequest);
  // A copy cut short is refused, not read past its end.
  std::string cut = wire::encode_request({4, wire::CopyManyRequest{{{"a", committed}}}});
  cut[cut.find("ps2.s") - 1] = 0x7f;
  CHECK(wire::decode_request(cut, limits).code() == Code::kBadRequest);

  // Copies over corrupt records name them in a field of their own, which
  // copy_many requests without such copies never carry (a replica older than
  // the field refuses it).
  const ReplicaRequest replacing{5, wire::CopyManyRequest{{{"a", committed, 0xabcdef}, {"b", tombstone},
                                                           {"c", tombstone, 0}, {"d", committed, UINT64_MAX}}}};
  const std::string replacing_bytes = wire::encode_request(replacing);
  auto decoded_replacing = wire::decode_request(replacing_bytes, limits);
  INFO(decoded_replacing.status().to_string());
  REQUIRE(decoded_replacing.is_ok());
  CHECK(decoded_replacing.value() == replacing);
  CHECK(replacing_bytes.find("replaces") != std::string::npos);
  CHECK(wire::encode_request({2, wire::CopyManyRequest{{{"a", committed}, {"b", tombstone}}}}).find("replaces") ==
        std::string::npos);
  // Entries: index (2) digest (8), indexes rising and within the copies.
  auto with_replaces = [&](std::string entries) {
    std::string bytes = wire::encode_request({6, wire::CopyManyRequest{{{"a", committed}, {"b", tombstone}}}});
    // The field is appended as the fifth of the map: fixmap 0x84 becomes 0x85.
    REQUIRE(static_cast<uint8_t>(bytes[0]) == 0x84);
    bytes[0] = static_cast<char>(0x85);
    bytes += "\xa8replaces";
    bytes += static_cast<char>(0xc4);
    bytes += static_cast<char>(entries.size());
    return bytes + entries;
  };
  auto entry = [](uint16_t index, uint64_t digest) {
    std::string e;
    for (int i = 1; i >= 0; --i) e += static_cast<char>(index >> (8 * i));
    for (int i = 7; i >= 0; --i) e += static_cast<char>(digest >> (8 * i));
    return e;
  };
  auto ok = wire::decode_request(with_replaces(entry(1, 77)), limits);
  REQUIRE(ok.is_ok());
  const auto& copies = std::get<wire::CopyManyRequest>(ok.value().body).copies;
  CHECK_FALSE(copies[0].replaces);
  CHECK(copies[1].replaces == 77u);
  CHECK(wire::decode_request(with_replaces(entry(0, 1) + entry(1, 2)), limits).is_ok());
  CHECK(wire::decode_request(with_replaces(""), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_request(with_replaces(entry(2, 1)), limits).code() == Code::kBadRequest);  // beyond the copies
  CHECK(wire::decode_request(with_replaces(entry(1, 1) + entry(0, 2)), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_request(with_replaces(entry(1, 1) + entry(1, 2)), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_request(with_replaces(entry(0, 1).substr(0, 9)), limits).code() == Code::kBadRequest);

  // Pending copies (a paused fill's completions) are named in a field of
  // their own too: a replica older than it refuses them, rather than store
  // them committed.
  const ReplicaRequest pending{
      7, wire::CopyManyRequest{{{"a", committed}, {.key = "b", .version = committed, .pending = true}}}};
  const std::string pending_bytes = wire::encode_request(pending);
  CHECK(pending_bytes.find("pending") != std::string::npos);
  auto decoded_pending = wire::decode_request(pending_bytes, limits);
  REQUIRE(decoded_pending.is_ok());
  const auto& pending_copies = std::get<wire::CopyManyRequest>(decoded_pending.value().body).copies;
  CHECK_FALSE(pending_copies[0].pending);
  CHECK(pending_copies[0].version.state == VersionState::kCommitted);
  CHECK(pending_copies[1].pending);
  CHECK(pending_copies[1].version.state == VersionState::kPending);
  auto with_pending = [&](std::string indexes, bool replacing = false) {
    std::string bytes = wire::encode_request(
        {8, wire::CopyManyRequest{
                {{"a", committed}, {"b", tombstone, replacing ? std::optional<uint64_t>(3) : std::nullopt}}}});
    const uint8_t fields = static_cast<uint8_t>(bytes[0]);
    REQUIRE((fields == 0x84 || fields == 0x85));
    bytes[0] = static_cast<char>(fields + 1);
    bytes += "\xa7pending";
    bytes += static_cast<char>(0xc4);
    bytes += static_cast<char>(indexes.size());
    return bytes + indexes;
  };
  auto index = [](uint16_t i) { return std::string{static_cast<char>(i >> 8), static_cast<char>(i & 0xff)}; };
  CHECK(wire::decode_request(with_pending(index(0) + index(1)), limits).is_ok());
  CHECK(wire::decode_request(with_pending(""), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_request(with_pending(index(2)), limits).code() == Code::kBadRequest);  // beyond the copies
  CHECK(wire::decode_request(with_pending(index(1) + index(0)), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_request(with_pending(index(0).substr(0, 1)), limits).code() == Code::kBadRequest);
  CHECK(wire::decode_request(with_pending(index(1), /*replacing=*/true), limits).code() == Code::kBadRequest);

  wire::ReplicaReply reply;
  reply.keys_done = 3;
  reply.records = {{false, {committed}}, {true, {}}, {false, {}}};
  auto decoded = wire::decode_reply(wire::encode_reply(reply), limits);
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value().records == reply.records);
  CHECK(decoded.value().keys_done == 3);
  reply.keys_done = 2;  // records must be as many as keys_done
  CHECK(wire::decode_reply(wire::encode_reply(reply), limits).code() == Code::kBadRequest);
  wire::ReplicaReply refused;
  refused.refused = 2;
  refused.first_refusal = "key 'k': stale";
  decoded = wire::decode_reply(wire::encode_reply(refused), limits);
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value().refused == 2);
  CHECK(decoded.value().first_refusal == "key 'k': stale");
}

TEST_CASE("anti-entropy handler: read_many answers each key in order, copy_many stores committed copies",
          "[anti_entropy][replica]") {
  Replica r;
  REQUIRE(r.call(put("a", "va", ts(1), false)).status.is_ok());
  REQUIRE(r.call(put("c", "vc", ts(0))).status.is_ok());
  REQUIRE(r.call(put("bad", "x", ts(0))).status.is_ok());
  REQUIRE(r.store.corrupt("bad"));
  auto read = r.call(wire::ReadManyRequest{{"c", "missing", "bad", "a"}});
  REQUIRE(read.status.is_ok());
  REQUIRE(read.keys_done == 4);
  CHECK(read.records[0].versions == r.versions("c"));
  CHECK(read.records[1] == wire::KeyRecord{});
  CHECK(read.records[2].corrupt);
  CHECK(read.records[3].versions == r.versions("a"));

  // A reply stops before the key that would pass its budget; the rest is asked
  // again. A first key larger than the budget is answered alone.
  const std::string big(wire::kReadManyReplyBudgetBytes / 3, 'b');
  for (const char* k : {"b1", "b2", "b3"}) REQUIRE(r.call(put(k, big, ts(0))).status.is_ok());
  auto partial = r.call(wire::ReadManyRequest{{"b1", "b2", "b3"}});
  REQUIRE(partial.status.is_ok());
  CHECK(partial.keys_done == 2);
  CHECK(partial.records.size() == 2);
  REQUIRE(r.call(put("huge", std::string(wire::kReadManyReplyBudgetBytes, 'h'), ts(0))).status.is_ok());
  auto alone = r.call(wire::ReadManyRequest{{"huge", "c"}});
  REQUIRE(alone.status.is_ok());
  CHECK(alone.keys_done == 1);
  CHECK(alone.records.at(0).versions.at(0).value.size() == wire::kReadManyReplyBudgetBytes);

  // Copies are committed writes: a stale one is refused and counted, the others stored.
  wire::Version newer{ts(2), "L", VersionState::kPending, false, "new"};
  wire::Version older{{0, hlc::make(kNowMs - 120'000, 0)}, "", VersionState::kPending, false, "old"};
  auto copied = r.call(wire::CopyManyRequest{{{"a", newer}, {"c", older}, {"d", newer}}});
  REQUIRE(copied.status.is_ok());
  CHECK(copied.refused == 1);
  CHECK(copied.first_refusal.find("key 'c': stale") == 0);
  CHECK(r.versions("a") == std::vector<wire::Version>{{ts(2), "L", VersionState::kCommitted, false, "new"}});
  CHECK(r.versions("d").at(0).state == VersionState::kCommitted);
  CHECK(r.versions("c").at(0).value == "vc");
}

TEST_CASE("anti-entropy core: differing keys are read and copied in batches, one read_many and one copy_many",
          "[anti_entropy]") {
  Cluster c(2);
  for (int i = 0; i < 300; ++i) {
    const std::string key = "k" + std::to_string(i);
    REQUIRE(c.replicas[0]->call(put(key, "old", ts(0))).status.is_ok());
    REQUIRE(c.replicas[1]->call(put(key, i % 3 == 0 ? "new" : "old", ts(0, i % 3 == 0 ? 1 : 0))).status.is_ok());
  }
  AntiEntropyConfig config;
  config.window = 1'000'000;  // every leaf listing answered before the reads go out
  auto report = c.run(config);
  CHECK(report.versions_sent == 100);
  CHECK(report.refused == 0);
  CHECK(c.sent[index_of<wire::ReadManyRequest>()] == 1);
  CHECK(c.sent[index_of<wire::CopyManyRequest>()] == 1);
  CHECK(c.sent[index_of<wire::ReadRequest>()] == 0);
  CHECK(c.sent[index_of<wire::WriteRequest>()] == 0);
  CHECK(c.replicas[0]->versions("k0").at(0).value == "new");
  CHECK(c.replicas[0]->versions("k1").at(0).value == "old");
  CHECK(c.run({}).equal);
}

TEST_CASE("anti-entropy core: a replica that predates read_many and copy_many gets one request per key",
          "[anti_entropy]") {
  Cluster c(2);
  c.predating_batches = {0, 1};
  for (int i = 0; i < 5; ++i) REQUIRE(c.replicas[1]->call(put("k" + std::to_string(i), "v", ts(0))).status.is_ok());
  auto report = c.run({});
  CHECK(report.versions_sent == 5);
  CHECK(report.refused == 0);
  CHECK(c.sent[index_of<wire::ReadRequest>()] == 5);
  CHECK(c.sent[index_of<wire::WriteRequest>()] == 5);
  for (int i = 0; i < 5; ++i) CHECK(c.replicas[0]->versions("k" + std::to_string(i)).at(0).value == "v");
  CHECK(c.run({}).equal);
}

TEST_CASE("anti-entropy core: equal replicas exchange one root digest each", "[anti_entropy]") {
  Cluster c(3);
  for (auto& r : c.replicas) {
    for (int i = 0; i < 20; ++i) REQUIRE(r->call(put("k" + std::to_string(i), "v", ts(1))).status.is_ok());
  }
  auto report = c.run({});
  CHECK(report.equal);
  CHECK(c.requests == 3);
  CHECK(report.ranges_done == report.ranges_total);
  CHECK(report.keys_compared == 0);
}

TEST_CASE("anti-entropy core: a missing committed version is copied with its timestamp, then all are equal",
          "[anti_entropy]") {
  Cluster c(3);
  for (int r : {0, 1}) REQUIRE(c.replicas[r]->call(put("k", "v", ts(1))).status.is_ok());
  auto report = c.run({});
  CHECK_FALSE(report.equal);
  CHECK(report.keys_differing == 2);  // the key, and the floor of its lock
  CHECK(report.floors_raised == 1);
  CHECK(report.versions_sent == 1);
  CHECK(report.ranges_done == report.ranges_total);
  auto v = c.replicas[2]->versions("k");
  REQUIRE(v.size() == 1);
  CHECK(v[0].ts == ts(1));
  CHECK(v[0].value == "v");
  CHECK(v[0].state == VersionState::kCommitted);
  CHECK(c.run({}).equal);
}

TEST_CASE("anti-entropy core: a pending version on W replicas is committed everywhere", "[anti_entropy]") {
  Cluster c(3);
  for (int r : {0, 1}) REQUIRE(c.replicas[r]->call(put("k", "v", ts(1), false)).status.is_ok());
  auto report = c.run({});
  CHECK(report.versions_committed == 2);
  CHECK(report.versions_sent == 1);
  for (auto& r : c.replicas) CHECK(r->versions("k").at(0).state == VersionState::kCommitted);
}

TEST_CASE("anti-entropy core: a superseded holder's pending write is purged, not spread", "[anti_entropy]") {
  Cluster c(3);
  for (int r : {0, 1}) REQUIRE(c.replicas[r]->call(wire::FenceRequest{"L", 2}).floor == 2);
  REQUIRE(c.replicas[2]->call(put("k", "late", ts(1), false)).status.is_ok());
  auto report = c.run({});
  CHECK(report.purged == 1);
  CHECK(report.versions_sent == 0);
  CHECK(report.floors_raised == 1);
  for (auto& r : c.replicas) {
    CHECK(r->versions("k").empty());
    CHECK(r->floor("L") == 2);
  }
}

TEST_CASE("anti-entropy core: a pending write that may still reach W copies is left alone", "[anti_entropy]") {
  Cluster c(3);
  REQUIRE(c.replicas[2]->call(put("k", "in flight", ts(1), false)).status.is_ok());
  auto report = c.run({});
  CHECK(report.purged == 0);
  CHECK(report.versions_sent == 0);
  CHECK(c.replicas[2]->versions("k").size() == 1);
  CHECK(c.replicas[0]->versions("k").empty());
}

TEST_CASE("anti-entropy core: with a replica not heard from, a pending write that it could hold stays",
          "[anti_entropy]") {
  Cluster c(3);
  for (int r : {0, 1}) REQUIRE(c.replicas[r]->call(wire::FenceRequest{"L", 2}).floor == 2);
  REQUIRE(c.replicas[0]->call(put("k", "late", ts(1), true)).status.is_ok());  // a committed copy elsewhere
  REQUIRE(c.replicas[2]->call(put("j", "late", ts(1), false)).status.is_ok());
  auto report = c.run({}, /*down=*/1);
  CHECK(report.purged == 0);  // j: 1 copy + 1 replica not heard from could make W
  CHECK(report.undecided == 1);
  CHECK(c.replicas[2]->versions("k").at(0).value == "late");  // committed versions still flow
}

TEST_CASE("anti-entropy core: a target gets the floors and the settled versions, and counts for nothing",
          "[anti_entropy]") {
  Cluster c(4);  // three replicas compared, the fourth a target
  Replica& target = *c.replicas[3];
  REQUIRE(c.replicas[0]->call(wire::FenceRequest{"L", 5}).floor == 5);
  for (int r : {0, 1}) REQUIRE(c.replicas[r]->call(put("settled", "on W", ts(5), false)).status.is_ok());
  REQUIRE(c.replicas[1]->call(put("committed", "on one", ts(0), true)).status.is_ok());
  REQUIRE(c.replicas[2]->call(put("open", "in flight", ts(6), false)).status.is_ok());
  // What the target alone holds is no copy the others need.
  REQUIRE(target.call(put("stray", "target only", ts(0), false)).status.is_ok());
  auto report = c.run({}, -1, 0, /*targets=*/1);
  CHECK(report.target_refused == 0);
  CHECK(target.floor("L") == 6);  // the highest of the replicas: the write in flight raised its own
  for (const std::string key : {"settled", "committed"}) {
    auto v = target.versions(key);
    REQUIRE(v.size() == 1);
    CHECK(v[0].state == VersionState::kCommitted);
  }
  CHECK(target.versions("open").empty());  // one copy of three: not settled
  CHECK(c.replicas[2]->versions("open").size() == 1);  // and the replicas may still take it
  for (int r : {0, 1, 2}) CHECK(c.replicas[r]->versions("stray").empty());
  // A target that refuses copies (a full disk) is counted apart from the replicas compared.
  Cluster f(4);
  for (int r : {0, 1}) REQUIRE(f.replicas[r]->call(put("k", "v", ts(1))).status.is_ok());
  f.full_disks = {2, 3};
  report = f.run({}, -1, 0, 1);
  CHECK(report.refused == 2);  // one copy to replica 2, one to the target
  CHECK(report.target_refused == 1);
  CHECK(f.refusing == std::vector<bool>{false, false, true, true});  // a removal's fill must not count on them
  CHECK_THAT(report.first_refusal, Catch::Contains("disk full"));
  // The target is not one of N: with it, "settled" would have had W copies without any.
  Cluster d(4);
  REQUIRE(d.replicas[0]->call(put("k", "one copy", ts(1), false)).status.is_ok());
  REQUIRE(d.replicas[3]->call(put("k", "one copy", ts(1), false)).status.is_ok());
  d.run({}, -1, 0, 1);
  CHECK(d.replicas[1]->versions("k").empty());
  CHECK(d.replicas[0]->versions("k").at(0).state == VersionState::kPending);
}

TEST_CASE("anti-entropy core: over paused replicas, a pending version short of W is purged, completed or left "
          "undecided",
          "[anti_entropy]") {
  Cluster c(4);
  REQUIRE(c.replicas[2]->call(put("failed", "one copy", ts(1), false)).status.is_ok());
  AntiEntropyConfig paused;
  paused.paused = true;
  auto report = c.run(paused, -1, 0, 1);
  CHECK(report.purged == 1);  // left alone when the replicas could still store it (above)
  CHECK(report.undecided == 0);
  CHECK(c.replicas[2]->versions("failed").empty());
  // With a replica down, its copy could have made W. No replica heard from
  // refuses the version, so its writer cannot have been told it failed for
  // good (that takes N - W + 1 = 2 final refusals): the fill completes it.
  REQUIRE(c.replicas[0]->call(put("maybe", "one copy", ts(1), false)).status.is_ok());
  report = c.run(paused, /*down=*/1, 0, 1);
  CHECK(report.purged == 0);
  CHECK(report.undecided == 0);
  CHECK(report.completed == 1);
  // Pending: the target's copy stands in for the copy a leaving holder takes
  // along, and only W of them make it settled (below).
  REQUIRE(c.replicas[3]->versions("maybe").size() == 1);
  CHECK(c.replicas[3]->versions("maybe")[0].state == VersionState::kPending);
  // When a replica heard from refuses it (a newer holder fenced it), it may
  // have been acknowledged or answered fenced: undecided, and named.
  Cluster d(4);
  REQUIRE(d.replicas[0]->call(put("either", "one copy", ts(3), false)).status.is_ok());
  REQUIRE(d.replicas[2]->call(wire::FenceRequest{"L", 4}).floor == 4);
  report = d.run(paused, /*down=*/1, 0, 1);
  CHECK(report.completed == 0);
  CHECK(report.undecided == 1);
  CHECK(report.first_undecided == "either");
  CHECK(d.replicas[3]->versions("either").empty());
}

// Seed 30,104,793 of `palisade-sim --replacements 2`: replica 2 of set
// {0, 1, 2} was being replaced by replica 3 and alone held a pending write;
// replica 1 was not heard from. The paused fill completed the write on the
// target as a committed copy: the new set {0, 1, 3} held it once, committed,
// though it never had W copies. A reader returned it from the target, and a
// later one, reading replicas 0 and 1, went back to the older version.
TEST_CASE("anti-entropy core: a paused fill completes a write on its targets pending, never committed",
          "[anti_entropy]") {
  Cluster c(4);
  for (int r : {0, 1, 2}) REQUIRE(c.replicas[r]->call(put("k", "old", ts(1))).status.is_ok());
  REQUIRE(c.replicas[2]->call(put("k", "new", ts(1, 1), false)).status.is_ok());
  // The new holder fenced since, and the fill gave the target that floor first.
  for (int r : {0, 2}) REQUIRE(c.replicas[r]->call(wire::FenceRequest{"L", 2}).floor == 2);
  AntiEntropyConfig paused;
  paused.paused = true;
  auto report = c.run(paused, /*down=*/1, 0, 1);
  CHECK(report.completed == 0);  // replica 0 refuses it now: with replica 1 down, two final refusals
  CHECK(report.undecided == 1);
  // Without the fence, the fill completes it on every replica heard from
  // (replica 0, which stays, and the target): pending, the committed old
  // version under it, and the target's floor no obstacle.
  Cluster d(4);
  for (int r : {0, 1, 2}) REQUIRE(d.replicas[r]->call(put("k", "old", ts(1))).status.is_ok());
  REQUIRE(d.replicas[2]->call(put("k", "new", ts(1, 1), false)).status.is_ok());
  REQUIRE(d.replicas[3]->call(wire::FenceRequest{"L", 2}).floor == 2);
  report = d.run(paused, /*down=*/1, 0, 1);
  CHECK(report.completed == 1);
  CHECK(report.refused == 0);
  for (int r : {0, 3}) {
    auto held = d.replicas[r]->versions("k");
    REQUIRE(held.size() == 2);
    CHECK(held[0].value == "new");
    CHECK(held[0].state == VersionState::kPending);
    CHECK(held[1].value == "old");
    CHECK(held[1].state == VersionState::kCommitted);
  }
  // Each copy went in a copy_many of its own, marked pending.
  const auto pending = std::count_if(d.log.begin(), d.log.end(), [](const client::AntiEntropySend& s) {
    const auto* many = std::get_if<wire::CopyManyRequest>(&s.request.body);
    return many != nullptr && many->copies.size() == 1 && many->copies[0].pending;
  });
  CHECK(pending == 2);
}

TEST_CASE("anti-entropy core: a paused fill raises floors on its targets only", "[anti_entropy]") {
  // Paused replicas take no fences; a fill that sent them some would be
  // refused there, and a removal, which needs every replica that stays to
  // take its repairs, would give up every time.
  auto fenced = [](Cluster& c) {
    std::set<int> to;
    for (const client::AntiEntropySend& s : c.log) {
      if (std::holds_alternative<wire::FenceRequest>(s.request.body)) to.insert(s.replica);
    }
    return to;
  };
  Cluster serving(4), paused(4);
  for (Cluster* c : {&serving, &paused}) REQUIRE(c->replicas[0]->call(wire::FenceRequest{"L", 5}).floor == 5);
  serving.run({}, -1, 0, 1);
  CHECK(fenced(serving) == std::set<int>{1, 2, 3});
  AntiEntropyConfig config;
  config.paused = true;
  paused.run(config, -1, 0, 1);
  CHECK(fenced(paused) == std::set<int>{3});
  CHECK(paused.replicas[3]->floor("L") == 5);
}

// Seed 30,025,115 of `palisade-sim --replacements 2`: a write acknowledged
// by replicas 0 and 2; replica 2, the one replaced, died, and a bit flip made
// replica 0's record of the key corrupt. The fill while serving replaced
// that record with the older version replica 1 held, and the new set had
// lost the write.
TEST_CASE("anti-entropy core: a key that could hide a whole write quorum keeps its corrupt record, and is undecided",
          "[anti_entropy]") {
  Cluster s(3);
  REQUIRE(s.replicas[1]->call(put("k", "older", ts(0), true)).status.is_ok());
  for (int r : {0, 2}) REQUIRE(s.replicas[r]->call(put("k", "acknowledged", ts(1), false)).status.is_ok());
  REQUIRE(s.replicas[0]->store.corrupt("k"));
  auto report = s.run({}, /*down=*/2);
  CHECK(report.corrupt_replaced == 0);  // it may hold a copy of the newest write
  CHECK(report.undecided == 1);
  CHECK(s.replicas[0]->call(wire::ReadRequest{"k"}).status.code() == Code::kCorrupt);
  // Seed 30,082,123: every replica answers, but the corrupt record may be
  // the second copy of a pending version on replica 2 that its writer was
  // told succeeded. Replaced with the committed older version, it was lost
  // (replica 1's floor refuses it, so readers took it for a failed write).
  Cluster h(3);
  for (int r : {0, 1, 2}) REQUIRE(h.replicas[r]->call(put("k", "older", ts(0), true)).status.is_ok());
  for (int r : {0, 2}) REQUIRE(h.replicas[r]->call(put("k", "acknowledged", ts(1), false)).status.is_ok());
  REQUIRE(h.replicas[1]->call(wire::FenceRequest{"L", 2}).floor == 2);
  REQUIRE(h.replicas[0]->store.corrupt("k"));
  report = h.run({});
  CHECK(report.corrupt_replaced == 0);
  CHECK(h.replicas[0]->call(wire::ReadRequest{"k"}).status.code() == Code::kCorrupt);
  CHECK(h.replicas[2]->versions("k").size() == 2);  // the pending copy stays too
  AntiEntropyConfig paused;
  paused.paused = true;
  Cluster c(4);  // three compared, a target
  for (int r : {0, 2}) REQUIRE(c.replicas[r]->call(put("k", "acknowledged", ts(1), false)).status.is_ok());
  REQUIRE(c.replicas[0]->store.corrupt("k"));
  report = c.run(paused, /*down=*/2, 0, 1);
  CHECK(report.undecided >= 1);
  CHECK(report.first_undecided == "k");
  // One of them not heard from leaves W - 1 copies hidden at most: a
  // version on W replicas shows on one heard from.
  Cluster d(4);
  for (int r : {0, 2}) REQUIRE(d.replicas[r]->call(put("k", "acknowledged", ts(1), false)).status.is_ok());
  REQUIRE(d.replicas[0]->store.corrupt("k"));
  report = d.run(paused, -1, 0, 1);
  CHECK(report.undecided == 0);
  CHECK(d.replicas[3]->versions("k").at(0).value == "acknowledged");
}

TEST_CASE("anti-entropy core: a dry run changes nothing and says what it would do", "[anti_entropy]") {
  Cluster c(3);
  for (int r : {0, 1}) REQUIRE(c.replicas[r]->call(put("k", "v", ts(1))).status.is_ok());
  AntiEntropyConfig dry;
  dry.dry_run = true;
  auto report = c.run(dry);
  CHECK_FALSE(report.equal);
  CHECK(report.versions_sent == 1);
  CHECK(c.replicas[2]->versions("k").empty());
}

TEST_CASE("anti-entropy core: a corrupt record is replaced from a healthy replica", "[anti_entropy]") {
  Cluster c(3);
  for (auto& r : c.replicas) REQUIRE(r->call(put("k", "v", ts(1))).status.is_ok());
  REQUIRE(c.replicas[1]->store.corrupt("k"));
  const std::optional<uint64_t> damage = c.replicas[1]->call(wire::ReadRequest{"k"}).digest;
  REQUIRE(damage);
  auto report = c.run({});
  CHECK(report.corrupt_replaced == 1);
  CHECK(report.refused == 0);
  CHECK(c.replicas[1]->versions("k").at(0).value == "v");
  // The copy named the damage it replaces.
  std::vector<wire::Copy> copies;
  for (const auto& s : c.log) {
    if (const auto* m = std::get_if<wire::CopyManyRequest>(&s.request.body)) {
      copies.insert(copies.end(), m->copies.begin(), m->copies.end());
    }
  }
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].replaces == damage);
  CHECK(c.run({}).equal);
}

// Regression (review): the listings of the other replicas may predate a newer
// version the damaged record held (written after they were listed, then
// damaged); a copy decided from them replaced it with an older version.
TEST_CASE("anti-entropy core: a corrupt record is replaced from views taken after its damage was seen",
          "[anti_entropy]") {
  Cluster c(3);
  for (int r : {0, 2}) REQUIRE(c.replicas[r]->call(put("k", "old", ts(1))).status.is_ok());
  REQUIRE(c.replicas[1]->call(put("k", "old", ts(1), /*committed=*/false)).status.is_ok());  // so the key differs
  bool done = false;
  c.before_delivery = [&](const client::AntiEntropySend& s) {
    // Replicas 0 and 1 have listed their leaves; "new" is then acknowledged by
    // replicas 1 and 2 (replica 0 misses it), and replica 2's record is
    // damaged before it lists its own.
    if (done || s.replica != 2 || !std::holds_alternative<wire::LeafRequest>(s.request.body)) return;
    done = true;
    for (int r : {1, 2}) REQUIRE(c.replicas[r]->call(put("k", "new", ts(1, 5))).status.is_ok());
    REQUIRE(c.replicas[2]->store.corrupt("k"));
  };
  auto report = c.run({});
  REQUIRE(done);
  CHECK(report.corrupt_replaced == 1);
  // Replica 2 gets "new", as replica 0 does: not "old", which the listings
  // showed (replica 1 would be left the only holder of "new").
  CHECK(c.replicas[2]->versions("k").at(0).value == "new");
  CHECK(c.replicas[0]->versions("k").at(0).value == "new");
}

// Regression (review): a copy decided while the record was healthy replaced it
// once it was damaged, over the newer version it held by then.
TEST_CASE("anti-entropy core: a copy decided before a record was damaged does not replace it", "[anti_entropy]") {
  Cluster c(3);
  for (int r : {0, 1}) REQUIRE(c.replicas[r]->call(put("k", "v2", ts(1, 2))).status.is_ok());
  REQUIRE(c.replicas[2]->call(put("k", "v1", ts(1, 1))).status.is_ok());
  c.before_delivery = [&](const client::AntiEntropySend& s) {
    // Before the copy of v2 reaches replica 2, it stores a newer v3 and the record is damaged.
    if (s.replica != 2 || !std::holds_alternative<wire::CopyManyRequest>(s.request.body)) return;
    REQUIRE(c.replicas[2]->call(put("k", "v3", ts(1, 3))).status.is_ok());
    REQUIRE(c.replicas[2]->store.corrupt("k"));
  };
  auto report = c.run({});
  CHECK(report.refused == 1);
  CHECK(c.replicas[2]->call(wire::ReadRequest{"k"}).status.code() == Code::kCorrupt);
}

TEST_CASE("anti-entropy core: copies over corrupt records go apart, for replicas older than `replaces`",
          "[anti_entropy]") {
  Cluster c(2);
  c.predating_replaces = {1};
  for (auto& r : c.replicas) REQUIRE(r->call(put("bad", "v", ts(1))).status.is_ok());
  REQUIRE(c.replicas[1]->store.corrupt("bad"));
  REQUIRE(c.replicas[0]->call(put("missing", "v", ts(1))).status.is_ok());
  auto report = c.run({});
  // The copy of "missing" went in a request of its own and was stored; the
  // older replica refused the one that replaces the corrupt record.
  CHECK(report.refused == 1);
  CHECK(report.first_refusal.find("replaces") != std::string::npos);
  CHECK(c.replicas[1]->versions("missing").at(0).value == "v");
  CHECK(c.replicas[1]->call(wire::ReadRequest{"bad"}).status.code() == Code::kCorrupt);
  CHECK(c.sent[index_of<wire::CopyManyRequest>()] == 2);
}

TEST_CASE("anti-entropy core: tombstones are dropped only when all N hold them and gc_grace passed",
          "[anti_entropy]") {
  Cluster c(3);
  wire::WriteRequest del{"k", "", true, ts(1), "L", true};
  for (auto& r : c.replicas) REQUIRE(r->call(del).status.is_ok());
  AntiEntropyConfig config;
  config.gc_grace_ms = 120'000;  // the tombstone is a minute old
  CHECK(c.run(config).tombstones_dropped == 0);
  config.gc_grace_ms = 30'000;
  CHECK(c.run(config, -1, /*compared=*/2).tombstones_dropped == 0);  // not every replica compared
  auto report = c.run(config);
  CHECK(report.tombstones_dropped == 1);
  CHECK(report.equal);
  for (auto& r : c.replicas) CHECK(r->versions("k").empty());
}

TEST_CASE("anti-entropy core: a deleted key's tombstone reaches the replica that missed it", "[anti_entropy]") {
  Cluster c(3);
  for (auto& r : c.replicas) REQUIRE(r->call(put("k", "v", ts(1))).status.is_ok());
  wire::WriteRequest del{"k", "", true, ts(1, 5), "L", true};
  for (int r : {0, 1}) REQUIRE(c.replicas[r]->call(del).status.is_ok());
  AntiEntropyConfig config;
  config.gc_grace_ms = 0;
  auto report = c.run(config);
  CHECK(report.versions_sent == 1);
  CHECK(report.tombstones_dropped == 0);  // replica 2 held the value until this run
  CHECK(c.replicas[2]->versions("k").at(0).tombstone);
  CHECK(c.run(config).tombstones_dropped == 1);
}

}  // namespace
}  // namespace palisade
