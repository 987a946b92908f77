// client::next_view (client/replica_view.h): which config certificates a
// QuorumStore follows, and the replica set it then sends to.
#include <catch2/catch.hpp>

#include <string>

#include "auth/cluster_key.h"
#include "auth/config_certificate.h"
#include "client/replica_view.h"
#include "wire/config_certificate.h"
#include "wire/replica_set.h"

namespace palisade {
namespace {

using client::ReplicaView;

const std::string kKeyA(40, 'a');
const std::string kKeyB(40, 'b');
const std::string kKnown(40, 'k');

wire::ReplicaSet set_of(uint64_t version, uint32_t n = 3, uint32_t w = 2, uint32_t r = 2) {
  wire::ReplicaSet set{.version = version, .replicas = {}, .write_quorum = w, .read_quorum = r};
  for (uint32_t i = 1; i <= n; ++i) set.replicas.push_back({i, "tcp://r" + std::to_string(i) + ":1"});
  return set;
}

struct Group {
  ClusterKey key = ClusterKey::generate();
  SequencerSigner signer{key, "g"};
  SequencerVerifier verifier = SequencerVerifier::create("g", signer.public_key()).value();
  client::SignatureCheck check = [this](std::string_view m, std::string_view s) {
    return verifier.signature_verifies(m, s);
  };
  std::string sign(const wire::ReplicaSet& set) const { return sign_config_certificate(signer, set); }
};

ReplicaView file_view(bool secure) {
  ReplicaView view{.endpoints = {"tcp://r1:1", "tcp://r2:1", "tcp://r3:1"}, .read_quorum = 2, .write_quorum = 2};
  if (secure) view.credentials = Credentials{"client", "pub", "sec", {{"tcp://r3:1", kKnown}}};
  return view;
}

TEST_CASE("replica view: a newer certificate of the group gives its replicas, quorums and keys",
          "[client][replicaset]") {
  Group group;
  wire::ReplicaSet set = set_of(4, 5, 3, 3);
  set.replicas[0].key = kKeyA;
  set.replicas[1].key = kKeyB;
  set.replicas[3].key = kKeyA;
  set.replicas[4].key = kKeyB;  // r3 has none in the record: the store's own key for it stands
  const std::string certificate = group.sign(set);
  auto next = client::next_view(file_view(true), certificate, group.check);
  REQUIRE(next.is_ok());
  const ReplicaView& v = next.value();
  CHECK(v.version == 4);
  CHECK(v.certificate == certificate);
  CHECK(v.endpoints == std::vector<std::string>{"tcp://r1:1", "tcp://r2:1", "tcp://r3:1", "tcp://r4:1", "tcp://r5:1"});
  CHECK(v.write_quorum == 3);
  CHECK(v.read_quorum == 3);
  REQUIRE(v.credentials);
  CHECK(v.credentials->secret_key == "sec");
  CHECK(v.credentials->server_keys.at("tcp://r1:1") == kKeyA);
  CHECK(v.credentials->server_keys.at("tcp://r3:1") == kKnown);
  CHECK(v.credentials->server_keys.at("tcp://r5:1") == kKeyB);
  CHECK_FALSE(v.paused);

  SECTION("a paused set's view says so: its writes wait out the pause (CoordinatorOptions::paused)") {
    wire::ReplicaSet paused = set_of(5);
    paused.phase = wire::ReplicaPhase::kPaused;
    auto p = client::next_view(v, group.sign(paused), group.check);
    REQUIRE(p.is_ok());
    CHECK(p.value().paused);
  }
  SECTION("an older or equal version is stale") {
    for (uint64_t version : {3, 4}) {
      CHECK(client::next_view(v, group.sign(set_of(version)), group.check).code() == Code::kStale);
    }
  }
}

TEST_CASE("replica view: a store follows no certificate it cannot trust", "[client][replicaset]") {
  Group group, other;
  SECTION("another group's signature") {
    auto next = client::next_view(file_view(false), other.sign(set_of(2)), group.check);
    CHECK(next.code() == Code::kBadRequest);
    CHECK_THAT(next.status().message(), Catch::Contains("signature check"));
  }
  SECTION("an altered record") {
    auto parts = wire::split_config_certificate(group.sign(set_of(2))).value();
    const std::string altered = wire::join_config_certificate(wire::encode_replica_set(set_of(9)), parts.signature);
    CHECK(client::next_view(file_view(false), altered, group.check).code() == Code::kBadRequest);
  }
  SECTION("no check over CURVE; unchecked on plaintext links, as a --insecure replica takes it") {
    auto secure = client::next_view(file_view(true), group.sign(set_of(2)), nullptr);
    CHECK(secure.code() == Code::kBadRequest);
    CHECK_THAT(secure.status().message(), Catch::Contains("sequencer_public_key"));
    auto insecure = client::next_view(file_view(false), other.sign(set_of(2)), nullptr);
    REQUIRE(insecure.is_ok());
    CHECK(insecure.value().version == 2);
    CHECK_FALSE(insecure.value().credentials);
  }
  SECTION("quorums the store refuses: two writers' quorums may not meet") {
    auto next = client::next_view(file_view(false), group.sign(set_of(2, 4, 2, 3)), group.check);
    CHECK(next.code() == Code::kBadRequest);
    CHECK_THAT(next.status().message(), Catch::Contains("W must exceed N / 2"));
  }
  SECTION("a replica without a key, over CURVE") {
    auto next = client::next_view(file_view(true), group.sign(set_of(2)), group.check);
    CHECK(next.code() == Code::kBadRequest);
    CHECK_THAT(next.status().message(), Catch::Contains("tcp://r1:1 no CURVE key"));
  }
  SECTION("not a certificate") {
    CHECK(client::next_view(file_view(false), "junk", group.check).code() == Code::kBadRequest);
  }
}

TEST_CASE("replica view: a write sent again on a newer set is not told a final refusal", "[client]") {
  const FencedTimestamp ts{7, 1000};
  for (Code final : {Code::kFenced, Code::kStale}) {
    const WriteResult again = client::answer_of_resent_write({Status(final, "floor 9"), ts, 9});
    CHECK(again.status.code() == Code::kUnavailable);  // the first attempt may take effect
    CHECK_THAT(again.status.message(), Catch::Contains("earlier attempt"));
    CHECK(again.floor == 9);
    CHECK(again.ts == ts);
  }
  for (Code stands : {Code::kOk, Code::kTimeout, Code::kUnavailable, Code::kBadSequencer, Code::kBadRequest}) {
    CHECK(client::answer_of_resent_write({Status(stands, "x"), ts, 0}).status.code() == stands);
  }
}

}  // namespace
}  // namespace palisade
