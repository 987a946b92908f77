// docs/protocol.md cannot drift from the code: its hex examples must be exactly
// what encode_request / encode_reply produce for the messages the doc describes,
// the reply examples must be what a replica actually answers (the examples form
// one session, run in order against one replica), every example in the doc must
// be checked here, and the size limits it states must be the code's.
//
// To regenerate the examples after a protocol change: run this test; each
// failing example prints the encoder's bytes in the doc's layout.
#include <catch2/catch.hpp>

#include <set>

#include "base/hybrid_clock.h"
#include "replica/handler.h"
#include "replica/lmdb_store.h"
#include "replica/memory_store.h"
#include "tests/unit/hex_text.h"
#include "tests/unit/protocol_doc_examples.h"

namespace palisade {
namespace {

using wire::ReplicaReply;
using wire::ReplicaRequest;

// The session the examples in docs/protocol.md describe: a replica whose wall
// clock reads 1764479453123 ms throughout.
constexpr uint64_t kMs = 1'764'479'453'123;
constexpr uint64_t kLogical = 4;

using test::hex_block;
using test::read_protocol_doc;

// The bytes of the block marked "<!-- example NAME -->".
std::string example_bytes(const std::string& doc, const std::string& name) {
  return test::doc_example_bytes(doc, "example " + name);
}

struct Example {
  std::string name;
  ReplicaRequest request;
  ReplicaReply reply;
};

ReplicaReply ok_reply(uint64_t id, uint64_t clock_logical) {
  ReplicaReply r;
  r.id = id;
  r.clock = hlc::make(kMs, clock_logical);
  return r;
}

wire::Version version(const FencedTimestamp& ts, std::string value, wire::VersionState state) {
  return wire::Version{ts, "orders", state, false, std::move(value)};
}

// The example session, in order: each reply is what the replica answers after
// the requests before it.
std::vector<Example> examples() {
  const FencedTimestamp ts{7, hlc::make(kMs, kLogical)};
  const FencedTimestamp ts2{7, hlc::make(kMs, 20)};
  std::vector<Example> out;

  ReplicaReply fenced_ok = ok_reply(1, 0);
  fenced_ok.floor = 7;
  out.push_back({"fence", {1, wire::FenceRequest{"orders", 7}}, fenced_ok});

  out.push_back({"write", {2, wire::WriteRequest{"user/42", "hello", false, ts, "orders"}}, ok_reply(2, 6)});

  ReplicaReply found = ok_reply(3, 7);
  found.versions = {version(ts, "hello", wire::VersionState::kPending)};
  found.floors = {{"orders", 7}};
  out.push_back({"read", {3, wire::ReadRequest{"user/42"}}, found});

  ReplicaReply fenced = ok_reply(4, 11);
  fenced.status = Status(Code::kFenced, "token 6 is below the fence floor 7 of lock 'orders'");
  fenced.floor = 7;
  out.push_back({"fenced-write",
                 {4, wire::WriteRequest{"user/42", "late", false, {6, hlc::make(kMs, 9)}, "orders"}},
                 fenced});

  ReplicaReply committed = ok_reply(5, 12);
  committed.applied = true;
  out.push_back({"commit", {5, wire::CommitRequest{"user/42", ts}}, committed});

  out.push_back({"second-write", {6, wire::WriteRequest{"user/42", "world", false, ts2, "orders"}}, ok_reply(6, 22)});

  ReplicaReply both = ok_reply(7, 23);
  both.versions = {version(ts2, "world", wire::VersionState::kPending),
                   version(ts, "hello", wire::VersionState::kCommitted)};
  both.floors = {{"billing", 0}, {"orders", 7}};
  out.push_back({"read-versions", {7, wire::ReadRequest{"user/42", "billing"}}, both});

  ReplicaReply stale = ok_reply(8, 25);
  stale.status = Status(Code::kStale, "a newer version " + ts.to_string() + " is committed");
  stale.stored_ts = ts;
  out.push_back({"stale-write",
                 {8, wire::WriteRequest{"user/42", "old", false, {7, hlc::make(kMs, 2)}, "orders"}},
                 stale});
  return out;
}

TEST_CASE("protocol.md hex examples are what the encoder produces", "[wire]") {
  const std::string doc = read_protocol_doc();
  for (const Example& e : examples()) {
    INFO("example " << e.name);
    std::string request = wire::encode_request(e.request);
    std::string reply = wire::encode_reply(e.reply);
    INFO("encoded request:\n" << hex_block(request));
    INFO("encoded reply:\n" << hex_block(reply));
    CHECK(example_bytes(doc, e.name + "-request") == request);
    CHECK(example_bytes(doc, e.name + "-reply") == reply);
    // And they decode back to the described messages.
    auto decoded = wire::decode_request(request, wire::Limits{});
    REQUIRE(decoded.is_ok());
    CHECK(decoded.value() == e.request);
    auto decoded_reply = wire::decode_reply(reply, wire::Limits{});
    REQUIRE(decoded_reply.is_ok());
    CHECK(wire::encode_reply(decoded_reply.value()) == reply);
  }
}

TEST_CASE("protocol.md reply examples are what a replica answers", "[wire][replica]") {
  ManualClock physical{kMs};
  HybridClock clock{physical};
  replica::MemoryStore store;
  replica::ReplicaHandler handler{store, clock};
  for (const Example& e : examples()) {
    INFO("example " << e.name);
    auto replies = handler.handle_batch(std::span<const ReplicaRequest>(&e.request, 1));
    REQUIRE(replies.size() == 1);
    INFO("replica answered " << replies[0].status.to_string());
    CHECK(hex_block(wire::encode_reply(replies[0])) == hex_block(wire::encode_reply(e.reply)));
  }
}

TEST_CASE("protocol.md has no example this test does not check", "[wire]") {
  const std::string doc = read_protocol_doc();
  std::set<std::string> checked = {"timestamp"};
  for (const Example& e : examples()) {
    checked.insert(e.name + "-request");
    checked.insert(e.name + "-reply");
  }
  const std::string marker = "<!-- example ";
  size_t found = 0;
  for (size_t at = doc.find(marker); at != std::string::npos; at = doc.find(marker, at + 1)) {
    size_t end = doc.find(" -->", at);
    REQUIRE(end != std::string::npos);
    std::string name = doc.substr(at + marker.size(), end - at - marker.size());
    INFO("example " << name);
    CHECK(checked.count(name) == 1);
    ++found;
  }
  CHECK(found == checked.size());
}

TEST_CASE("protocol.md size limits are the code's", "[wire]") {
  const std::string doc = read_protocol_doc();
  // The daemon's defaults: keys capped at what LMDB stores.
  wire::Limits limits;
  limits.max_key_bytes = replica::LmdbStore::kMaxKeyBytes;
  for (const std::string& text :
       {std::string("default and maximum 511"), std::string("accepts 1..511"),
        "(" + std::to_string(limits.max_message_bytes()) + " by default)",
        "(" + std::to_string(limits.max_reply_bytes()) + " by default)",
        "`max_key_bytes + max_value_bytes + " + std::to_string(limits.max_lock_bytes) + " + " +
            std::to_string(wire::Limits::kMaxSequencerBytes) + " + " +
            std::to_string(wire::Limits::kMaxCarriedCommitBytes) + " + 1024`",
        "at most " + std::to_string(wire::Limits::kMaxCarriedCommitBytes) + " bytes of them",
        "| `sequencer` | " + std::to_string(wire::Limits::kMaxSequencerBytes) + " bytes | `too_large` |",
        "`" + std::to_string(wire::Limits::kMaxVersionsPerKey) + " * (max_value_bytes + 2 * " +
            std::to_string(limits.max_lock_bytes) + " + " + std::to_string(wire::Limits::kMaxSequencerBytes) +
            " + 128) + " + std::to_string(wire::Limits::kListReplyBytes) + " + 4096`",
        "| " + std::to_string(wire::Limits::kMaxVersionsPerKey) + ": one committed and at most " +
            std::to_string(wire::Limits::kMaxVersionsPerKey - 1) + " pending |",
        "| " + std::to_string(limits.max_lock_bytes) + " bytes |"}) {
    INFO("protocol.md should say: " << text);
    CHECK(doc.find(text) != std::string::npos);
  }
  CHECK(replica::LmdbStore::kMaxKeyBytes == 511);
  CHECK(limits.max_value_bytes == 1048576);
}

TEST_CASE("protocol.md timestamp example", "[wire]") {
  // The doc spells "7@1764479453123.4" out byte by byte.
  const FencedTimestamp ts{7, hlc::make(kMs, kLogical)};
  CHECK(ts.to_string() == "7@1764479453123.4");
  auto encoded = ts.encode();
  std::string bytes(reinterpret_cast<const char*>(encoded.data()), encoded.size());
  CHECK(example_bytes(read_protocol_doc(), "timestamp") == bytes);
}

}  // namespace
}  // namespace palisade
