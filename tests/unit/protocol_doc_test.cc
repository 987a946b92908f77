// docs/protocol.md cannot drift from the code: its hex examples must be exactly
// what encode_request / encode_reply produce for the messages the doc describes,
// and the reply examples must be what a replica actually answers.
#include <catch2/catch.hpp>

#include <cctype>
#include <fstream>
#include <sstream>

#include "common/hybrid_clock.h"
#include "replica/handler.h"
#include "replica/memory_store.h"

namespace palisade {
namespace {

using wire::ReplicaReply;
using wire::ReplicaRequest;

// The session the examples in docs/protocol.md describe: a replica whose wall
// clock reads 1764479453123 ms throughout.
constexpr uint64_t kMs = 1'764'479'453'123;
constexpr uint64_t kLogical = 4;

std::string read_doc() {
  std::ifstream in(std::string(PALISADE_SOURCE_DIR) + "/docs/protocol.md");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The bytes of the code block that follows "<!-- example NAME -->", written as hex
// digit pairs separated by any whitespace.
std::string example_bytes(const std::string& doc, const std::string& name) {
  size_t at = doc.find("<!-- example " + name + " -->");
  INFO("example " << name);
  REQUIRE(at != std::string::npos);
  size_t open = doc.find("```", at);
  REQUIRE(open != std::string::npos);
  size_t body = doc.find('\n', open);
  size_t close = doc.find("```", body);
  REQUIRE(close != std::string::npos);
  std::string digits;
  bool only_hex = true;
  for (char c : doc.substr(body, close - body)) {
    if (std::isxdigit(static_cast<unsigned char>(c))) {
      digits.push_back(c);
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      only_hex = false;
    }
  }
  REQUIRE(only_hex);
  REQUIRE(digits.size() % 2 == 0);
  std::string bytes;
  for (size_t i = 0; i < digits.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto b = static_cast<uint8_t>(bytes[i]);
    out += digits[b >> 4];
    out += digits[b & 15];
    out += (i % 16 == 15 || i + 1 == bytes.size()) ? '\n' : ' ';
  }
  return out;
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

std::vector<Example> examples() {
  const FencedTimestamp ts{7, hlc::make(kMs, kLogical)};
  std::vector<Example> out;

  ReplicaReply fenced_ok = ok_reply(1, 0);
  fenced_ok.floor = 7;
  out.push_back({"fence", {1, wire::FenceRequest{"orders", 7}}, fenced_ok});

  out.push_back({"write", {2, wire::WriteRequest{"user/42", "hello", false, ts, "orders"}}, ok_reply(2, 6)});

  ReplicaReply found = ok_reply(3, 7);
  found.floor = 7;
  found.version = wire::Version{ts, "orders", wire::VersionState::kPending, false, "hello"};
  out.push_back({"read", {3, wire::ReadRequest{"user/42"}}, found});

  ReplicaReply fenced = ok_reply(4, 11);
  fenced.status = Status(Code::kFenced, "token 6 is below the fence floor 7 of lock 'orders'");
  fenced.floor = 7;
  out.push_back({"fenced-write",
                 {4, wire::WriteRequest{"user/42", "late", false, {6, hlc::make(kMs, 9)}, "orders"}},
                 fenced});
  return out;
}

TEST_CASE("protocol.md hex examples are what the encoder produces", "[wire]") {
  const std::string doc = read_doc();
  for (const Example& e : examples()) {
    INFO("example " << e.name);
    std::string request = wire::encode_request(e.request);
    std::string reply = wire::encode_reply(e.reply);
    INFO("encoded request:\n" << hex(request));
    INFO("encoded reply:\n" << hex(reply));
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
    CHECK(hex(wire::encode_reply(replies[0])) == hex(wire::encode_reply(e.reply)));
  }
}

TEST_CASE("protocol.md timestamp example", "[wire]") {
  // The doc spells "7@1764479453123.4" out byte by byte.
  const FencedTimestamp ts{7, hlc::make(kMs, kLogical)};
  CHECK(ts.to_string() == "7@1764479453123.4");
  auto encoded = ts.encode();
  std::string bytes(reinterpret_cast<const char*>(encoded.data()), encoded.size());
  CHECK(example_bytes(read_doc(), "timestamp") == bytes);
}

}  // namespace
}  // namespace palisade
