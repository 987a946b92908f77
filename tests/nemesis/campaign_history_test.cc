#include "tests/nemesis/campaign_history.h"

#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

namespace palisade::nemesis {
namespace {

sim::History read(const std::string& text, std::vector<std::string>* errors = nullptr) {
  std::istringstream in(text);
  sim::History h;
  auto e = read_history(in, "h.jsonl", h);
  if (errors != nullptr) *errors = e;
  else REQUIRE(e.empty());
  return h;
}

bool names(const std::vector<std::string>& violations, const std::string& what) {
  for (const std::string& v : violations) {
    if (v.find(what) != std::string::npos) return true;
  }
  return false;
}

// Client 1 holds lock "a" at token 1 and writes a/0; client 2 takes it over
// at token 2 and writes; client 3 reads the newest.
const std::string kSafe =
    R"({"op":"acquire","client":1,"lock":"a","start":10,"end":20,"result":"ok","token":1})"
    "\n"
    R"({"op":"put","client":1,"key":"a/0","value":"c1-1","lock":"a","token":1,"start":30,"end":40,"result":"ok","ts":"1@1000.0"})"
    "\n\n"
    R"({"op":"acquire","client":2,"lock":"a","start":50,"end":60,"result":"ok","token":2})"
    "\n"
    R"({"op":"put","client":1,"key":"a/0","value":"c1-2","lock":"a","token":1,"start":70,"end":80,"result":"fenced","ts":"1@1100.0"})"
    "\n"
    R"({"op":"put","client":2,"key":"a/0","value":"c2-1","lock":"a","token":2,"start":90,"end":100,"result":"ok","ts":"2@1200.0"})"
    "\n"
    R"({"op":"get","client":3,"key":"a/0","start":110,"end":120,"result":"ok","found":true,"value":"c2-1","ts":"2@1200.0"})"
    "\n"
    R"({"op":"get","client":3,"key":"a/1","start":110,"end":120,"result":"ok","found":false,"ts":null})"
    "\n"
    R"({"op":"del","client":2,"key":"a/0","lock":"a","token":2,"start":130,"end":140,"result":"timeout","ts":"2@1300.0"})"
    "\n";

TEST_CASE("campaign history: lines become the simulator's records", "[nemesis]") {
  const sim::History h = read(kSafe);
  REQUIRE(h.fences.size() == 2);
  CHECK(h.fences[1].token == 2);
  CHECK(h.fences[1].lease);
  REQUIRE(h.writes.size() == 4);
  CHECK(h.writes[1].result == Code::kFenced);
  CHECK(h.writes[1].ts == FencedTimestamp{1, 1100ULL << 16});
  CHECK(h.writes[3].tombstone);
  REQUIRE(h.reads.size() == 2);
  CHECK(h.reads[0].value == "c2-1");
  CHECK_FALSE(h.reads[1].found);
  CHECK(h.reads[1].ts == FencedTimestamp{});
  CHECK(check_campaign(h).empty());
  const Tally t = tally(h);
  CHECK(t.acquires_ok == 2);
  CHECK(t.writes == 4);
  CHECK(t.writes_ok == 2);
  CHECK(t.writes_refused == 1);
  CHECK(t.zombie_writes == 1);
  CHECK(t.zombie_writes_refused == 1);
  CHECK(t.zombie_writes_fenced == 1);
  REQUIRE(t.zombies.size() == 1);  // client 1's second put, after token 2 was granted
  CHECK(t.zombies[0].value == "c1-2");
  CHECK(t.reads_ok == 2);
}

TEST_CASE("campaign history: a line it cannot read is an error naming it", "[nemesis]") {
  for (const std::string& line : {
           std::string("not json"),
           std::string(R"({"op":"get","client":1,"start":1,"end":2,"result":"ok","found":false})"),  // no key
           std::string(R"({"op":"move","client":1,"start":1,"end":2,"result":"ok"})"),
           std::string(R"({"op":"get","client":1,"key":"k","start":1,"end":2,"result":"sideways","found":false})"),
           std::string(R"({"op":"get","client":1,"key":"k","start":1,"end":2,"result":"ok","found":false,"ts":"7"})"),
           std::string(R"({"op":"get","client":1,"key":"k","start":3,"end":2,"result":"ok","found":false})"),
           std::string(R"({"op":"get","client":"one","key":"k","start":1,"end":2,"result":"ok","found":false})"),
           std::string(R"({"op":"acquire","client":1,"lock":"a","start":1,"end":2,"result":"ok","token":0})"),
       }) {
    std::vector<std::string> errors;
    read("\n" + line + "\n", &errors);
    INFO(line);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].rfind("h.jsonl:2: ", 0) == 0);
  }
}

// Negative controls: each broken history is caught, by the rule named.
TEST_CASE("campaign history: a superseded holder's write acknowledged or read is caught", "[nemesis]") {
  std::string h = kSafe;
  h.replace(h.find(R"("result":"fenced")"), 17, R"("result":"ok")");
  auto v = check_campaign(read(h));
  CHECK(names(v, "superseded holder acknowledged"));
  h += R"({"op":"get","client":3,"key":"a/0","start":150,"end":160,"result":"ok","found":true,"value":"c1-2","ts":"1@1100.0"})"
       "\n";
  v = check_campaign(read(h));
  CHECK(names(v, "superseded write visible"));
}

TEST_CASE("campaign history: a refused write read, a lost write, a read back in time are caught", "[nemesis]") {
  const std::string refused_read =
      R"({"op":"get","client":3,"key":"a/0","start":85,"end":88,"result":"ok","found":true,"value":"c1-2","ts":"1@1100.0"})"
      "\n";
  CHECK(names(check_campaign(read(kSafe + refused_read)), "visible though refused"));
  const std::string old_read =
      R"({"op":"get","client":4,"key":"a/0","start":125,"end":128,"result":"ok","found":true,"value":"c1-1","ts":"1@1000.0"})"
      "\n";
  const auto v = check_campaign(read(kSafe + old_read));
  CHECK(names(v, "acknowledged write lost"));
  CHECK(names(v, "read went back in time"));
}

TEST_CASE("campaign history: tokens that do not increase, or repeat, are caught", "[nemesis]") {
  const std::string base =
      R"({"op":"acquire","client":1,"lock":"a","start":10,"end":20,"result":"ok","token":5})"
      "\n"
      R"({"op":"acquire","client":2,"lock":"b","start":30,"end":40,"result":"ok","token":3})"
      "\n";
  CHECK(check_tokens(read(base)).empty());  // locks apart: their own orders
  const std::string lower = R"({"op":"acquire","client":2,"lock":"a","start":30,"end":40,"result":"ok","token":4})"
                            "\n";
  CHECK(names(check_tokens(read(base + lower)), "token did not increase"));
  // Overlapping acquires may return in either order; the same token twice is caught anyway.
  const std::string twice = R"({"op":"acquire","client":2,"lock":"a","start":15,"end":40,"result":"ok","token":5})"
                            "\n";
  const auto v = check_tokens(read(base + twice));
  CHECK(names(v, "token granted twice"));
  CHECK_FALSE(names(v, "token did not increase"));
  const std::string failed = R"({"op":"acquire","client":2,"lock":"a","start":30,"end":40,"result":"busy","token":0})"
                             "\n";
  CHECK(check_tokens(read(base + failed)).empty());
}

TEST_CASE("campaign history: the same grant given again to the session that holds it is no violation", "[nemesis]") {
  // Client 1's release failed; its next acquire got the grant it still held.
  const std::string held =
      R"({"op":"acquire","client":1,"session":7,"lock":"a","start":10,"end":20,"result":"ok","token":5})"
      "\n"
      R"({"op":"acquire","client":1,"session":7,"lock":"a","start":30,"end":40,"result":"ok","token":5})"
      "\n";
  CHECK(check_tokens(read(held)).empty());
  // Another session, or sessions not recorded, cannot share a grant.
  for (const std::string& second : {
           std::string(
               R"({"op":"acquire","client":1,"session":8,"lock":"a","start":30,"end":40,"result":"ok","token":5})"),
           std::string(
               R"({"op":"acquire","client":2,"session":9,"lock":"a","start":30,"end":40,"result":"ok","token":5})"),
           std::string(R"({"op":"acquire","client":1,"lock":"a","start":30,"end":40,"result":"ok","token":5})"),
       }) {
    INFO(second);
    const std::string first = held.substr(0, held.find('\n') + 1);
    CHECK(names(check_tokens(read(first + second + "\n")), "token granted twice"));
  }
  // A newer grant between them: the session's grant was gone, and given again.
  const std::string between =
      R"({"op":"acquire","client":2,"session":9,"lock":"a","start":22,"end":25,"result":"ok","token":6})"
      "\n";
  CHECK(names(check_tokens(read(held + between)), "token did not increase"));
}

}  // namespace
}  // namespace palisade::nemesis
