// The linearizability checker for compare-and-set registers
// (tests/support/register_history.h): histories it must accept, and the
// negative controls it must catch.
#include "tests/support/register_history.h"

#include <catch2/catch.hpp>

namespace palisade::test {
namespace {

using Kind = RegisterOp::Kind;
using Outcome = RegisterOp::Outcome;

RegisterOp cas(int p, std::optional<std::string> expect, std::string value, uint64_t call, uint64_t ret,
               Outcome outcome = Outcome::kOk) {
  return {.kind = Kind::kCas,
          .outcome = outcome,
          .call = call,
          .ret = ret,
          .process = p,
          .expect = std::move(expect),
          .value = std::move(value),
          .ts = std::nullopt,
          .sent_at = {}};
}
RegisterOp read(int p, std::optional<std::string> value, uint64_t call, uint64_t ret) {
  return {.kind = Kind::kRead,
          .outcome = Outcome::kOk,
          .call = call,
          .ret = ret,
          .process = p,
          .expect = std::nullopt,
          .value = std::move(value),
          .ts = std::nullopt,
          .sent_at = {}};
}

bool linearizable(const std::vector<RegisterOp>& h, std::optional<std::string> initial = std::nullopt) {
  RegisterVerdict v = check_register(h, initial);
  INFO(v.why);
  return v.linearizable;
}

TEST_CASE("register history: sequential histories are linearizable", "[linearizability]") {
  CHECK(linearizable({}));
  CHECK(linearizable({read(1, std::nullopt, 0, 1), cas(1, std::nullopt, "a", 2, 3), read(2, "a", 4, 5),
                      cas(2, "a", "b", 6, 7), cas(1, "a", "c", 8, 9, Outcome::kFailed), read(1, "b", 10, 11)}));
  CHECK(linearizable({read(1, "init", 0, 1), cas(1, "init", "a", 2, 3)}, "init"));
}

TEST_CASE("register history: concurrent operations may take effect in either order", "[linearizability]") {
  // Two compare-and-sets from one version, overlapping: one wins, the other fails.
  CHECK(linearizable(
      {cas(1, std::nullopt, "a", 0, 10), cas(2, std::nullopt, "b", 1, 11, Outcome::kFailed), read(3, "a", 12, 13)}));
  // A read overlapping a write sees the old or the new value.
  CHECK(linearizable({cas(1, std::nullopt, "a", 0, 1), cas(1, "a", "b", 10, 20), read(2, "a", 11, 12),
                      read(3, "b", 13, 14), read(2, "b", 21, 22)}));
  // An unknown outcome may take effect late, or never.
  CHECK(linearizable(
      {cas(1, std::nullopt, "a", 0, 0, Outcome::kUnknown), read(2, std::nullopt, 5, 6), read(2, "a", 100, 101)}));
  CHECK(linearizable({cas(1, std::nullopt, "a", 0, 0, Outcome::kUnknown), read(2, std::nullopt, 5, 6),
                      cas(2, std::nullopt, "b", 7, 8), read(2, "b", 100, 101)}));
}

TEST_CASE("register history: negative controls are caught", "[linearizability]") {
  // Two compare-and-sets from one version both succeed (what quorums alone would allow).
  CHECK_FALSE(linearizable({cas(1, std::nullopt, "a", 0, 1), cas(1, "a", "b", 2, 10), cas(2, "a", "c", 3, 11)}));
  CHECK_FALSE(linearizable({cas(1, std::nullopt, "a", 0, 1), cas(1, "a", "b", 2, 3), cas(2, "a", "c", 4, 5)}));
  // A read goes back in time.
  CHECK_FALSE(linearizable({cas(1, std::nullopt, "a", 0, 1), cas(1, "a", "b", 2, 3), read(2, "a", 4, 5)}));
  CHECK_FALSE(linearizable(
      {cas(1, std::nullopt, "a", 0, 1), cas(1, "a", "b", 10, 20), read(2, "b", 11, 12), read(3, "a", 13, 14)}));
  // A failed compare that should have matched.
  CHECK_FALSE(linearizable({cas(1, std::nullopt, "a", 0, 1), cas(2, "a", "b", 2, 3, Outcome::kFailed)}));
  // An unknown outcome seen, then unseen.
  CHECK_FALSE(linearizable(
      {cas(1, std::nullopt, "a", 0, 0, Outcome::kUnknown), read(2, "a", 5, 6), read(2, std::nullopt, 7, 8)}));
  // A value nobody wrote.
  RegisterVerdict v = check_register({read(1, "ghost", 0, 1)});
  CHECK_FALSE(v.linearizable);
  CHECK(v.why.find("no write wrote") != std::string::npos);
  // The report names operations that do not fit.
  v = check_register({cas(1, std::nullopt, "a", 0, 1), cas(1, "a", "b", 2, 3), read(2, "a", 4, 5)});
  CHECK(v.why.find("p2 read 'a' ok [4, 5]") != std::string::npos);
}

TEST_CASE("register history: a read's timestamp must be its write's", "[linearizability]") {
  RegisterOp w = cas(1, std::nullopt, "a", 0, 1);
  w.ts = FencedTimestamp{5, 100};
  RegisterOp r = read(2, "a", 2, 3);
  r.ts = FencedTimestamp{5, 100};
  CHECK(linearizable({w, r}));
  r.ts = FencedTimestamp{4, 100};
  CHECK_FALSE(linearizable({w, r}));
  // A write sent again on a newer replica set went with two timestamps: a
  // read of either reads it (lock sim seed 82,004,200 with replacements).
  w.sent_at = {FencedTimestamp{5, 90}};
  r.ts = FencedTimestamp{5, 90};
  CHECK(linearizable({w, r}));
  r.ts = FencedTimestamp{5, 95};
  CHECK_FALSE(linearizable({w, r}));
  // Values must be unique to their writes.
  CHECK(check_register({cas(1, std::nullopt, "a", 0, 1), cas(2, "a", "a", 2, 3)}).why.find("unique") !=
        std::string::npos);
}

TEST_CASE("register history: many concurrent counters check quickly", "[linearizability]") {
  // Four processes increment by compare-and-set, 200 rounds, each round all
  // four overlapping: one wins, three fail, and reads overlap everything.
  std::vector<RegisterOp> h;
  std::optional<std::string> current;
  uint64_t t = 0;
  for (int round = 0; round < 200; ++round, t += 10) {
    const int winner = round % 4;
    for (int p = 0; p < 4; ++p) {
      const std::string value = "r" + std::to_string(round) + "p" + std::to_string(p);
      h.push_back(cas(p, current, value, t, t + 9, p == winner ? Outcome::kOk : Outcome::kFailed));
    }
    h.push_back(read(9, current, t, t + 9));
    current = "r" + std::to_string(round) + "p" + std::to_string(winner);
  }
  RegisterVerdict v = check_register(h);
  INFO(v.why);
  CHECK(v.linearizable);
  CHECK(v.explored < 100'000);
}

}  // namespace
}  // namespace palisade::test
