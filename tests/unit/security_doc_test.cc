// docs/security.md's fenced-ledger example, compiled as the doc shows it
// (tests/unit/CMakeLists.txt cuts it out of the doc), fed grants of a lock group.
#include <catch2/catch.hpp>

#include "auth/sequencer_signer.h"
#include "fenced_ledger.h"

namespace palisade {
namespace {

TEST_CASE("security.md: the fenced ledger refuses a superseded holder and forged grants", "[auth][docs]") {
  const SequencerSigner group(ClusterKey::generate(), "prod-1");
  auto grant = [&](uint64_t token) { return group.sign({"prod-1", "jobs", LockMode::kExclusive, token}); };

  CHECK(Ledger::open("prod-1", "not a key").code() == Code::kBadRequest);
  auto ledger = Ledger::open("prod-1", group.public_key());
  REQUIRE(ledger.is_ok());
  Ledger& l = ledger.value();

  CHECK(l.append(grant(4), "first holder").is_ok());
  CHECK(l.append(grant(9), "second holder").is_ok());
  CHECK(l.append(grant(4), "first holder, paused and back").code() == Code::kFenced);
  const SequencerSigner forger(ClusterKey::generate(), "prod-1");
  CHECK(l.append(forger.sign({"prod-1", "jobs", LockMode::kExclusive, 1u << 30}), "forged").code() ==
        Code::kBadSequencer);
  CHECK(l.append(group.sign({"prod-1", "jobs", LockMode::kShared, 10}), "shared").code() == Code::kBadSequencer);
  CHECK(l.append(SequencerSigner(ClusterKey::generate(), "prod-2").sign({"prod-2", "jobs", LockMode::kExclusive, 11}),
                 "another group")
            .code() == Code::kBadSequencer);
  CHECK(l.entries() == std::vector<std::string>{"jobs@4: first holder", "jobs@9: second holder"});
}

}  // namespace
}  // namespace palisade
