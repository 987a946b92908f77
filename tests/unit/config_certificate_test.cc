// Config certificates (wire/replica_set.h, wire/config_certificate.h,
// auth/config_certificate.h): the replica set record's one encoding, signed
// with the lock group's sequencer key and checked with its public key; forged,
// altered and foreign certificates refused, naming why.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "auth/cluster_key.h"
#include "auth/config_certificate.h"
#include "wire/config_certificate.h"
#include "wire/replica_set.h"
#include "wire/sequencer.h"

namespace palisade {
namespace {

using wire::ReplicaPhase;
using wire::ReplicaSet;

ClusterKey key_of(char digit) { return ClusterKey::from_hex(std::string(64, digit)).value(); }

const ReplicaSet kSet{.version = 3,
                      .phase = ReplicaPhase::kServing,
                      .replicas = {{1, "tcp://r1:7200", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7", 0x1122334455667788},
                                   {2, "tcp://r2:7200", "", 0},
                                   {7, "ipc:///run/r7", "", 9}},
                      .write_quorum = 2,
                      .read_quorum = 2};

TEST_CASE("replica set: the record round-trips in its one encoding", "[wire][replicaset]") {
  for (ReplicaPhase phase : {ReplicaPhase::kServing, ReplicaPhase::kPaused}) {
    ReplicaSet set = kSet;
    set.phase = phase;
    auto decoded = wire::decode_replica_set(wire::encode_replica_set(set));
    REQUIRE(decoded.is_ok());
    CHECK(decoded.value() == set);
  }
  // [3, "serving", [[1, ...], ...], 2, 2]: a fixarray of five, then the version.
  const std::string bytes = wire::encode_replica_set(kSet);
  CHECK(bytes.substr(0, 10) == std::string("\x95\x03\xa7serving", 10));
}

TEST_CASE("replica set: version 0, a cluster file's list a lock group node signs, decodes", "[wire][replicaset]") {
  ReplicaSet file = kSet;
  file.version = 0;
  auto decoded = wire::decode_replica_set(wire::encode_replica_set(file));
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value() == file);
}

TEST_CASE("replica set: decoding refuses what is not a record, naming why", "[wire][replicaset]") {
  auto refused = [](const ReplicaSet& set) { return wire::decode_replica_set(wire::encode_replica_set(set)).status(); };
  ReplicaSet weak = kSet;
  weak.read_quorum = 1;  // R + W = N: a read may miss a write
  CHECK_THAT(refused(weak).message(), Catch::Contains("cannot meet"));
  const std::string good = wire::encode_replica_set(kSet);
  CHECK(wire::decode_replica_set(good + '\0').code() == Code::kBadRequest);  // trailing bytes
  CHECK(wire::decode_replica_set(good.substr(0, 20)).code() == Code::kBadRequest);  // truncated
  std::string other_phase = good;
  other_phase.replace(3, 7, "pausing");
  CHECK_THAT(wire::decode_replica_set(other_phase).status().message(), Catch::Contains("unknown phase"));
  CHECK(wire::decode_replica_set("").code() == Code::kBadRequest);
}

TEST_CASE("config certificate: the group's key signs it, its public key checks it", "[auth][replicaset]") {
  const SequencerSigner signer(key_of('1'), "local-1");
  const std::string text = sign_config_certificate(signer, kSet);
  CHECK(text.starts_with("pcc1."));
  auto verified = verify_config_certificate(signer.verifier(), text);
  REQUIRE(verified.is_ok());
  CHECK(verified.value() == kSet);
  // The same key as sequencers': a verifier made from the public key alone.
  auto from_public_key = SequencerVerifier::create("local-1", signer.public_key());
  REQUIRE(from_public_key.is_ok());
  CHECK(verify_config_certificate(from_public_key.value(), text).is_ok());
}

TEST_CASE("config certificate: read with a key it is checked, without one only read", "[auth][replicaset]") {
  const SequencerSigner signer(key_of('1'), "local-1");
  const std::string foreign = sign_config_certificate(SequencerSigner(key_of('2'), "local-1"), kSet);
  CHECK(read_config_certificate(signer.verifier(), foreign).code() == Code::kBadRequest);
  auto unchecked = read_config_certificate(std::nullopt, foreign);
  REQUIRE(unchecked.is_ok());
  CHECK(unchecked.value() == kSet);
  CHECK(read_config_certificate(std::nullopt, "pcc1.junk").code() == Code::kBadRequest);
}

TEST_CASE("config certificate: forged, altered and foreign ones are refused, naming why", "[auth][replicaset]") {
  const SequencerSigner signer(key_of('1'), "local-1");
  const SequencerVerifier verifier = signer.verifier();
  const auto parts = wire::split_config_certificate(sign_config_certificate(signer, kSet)).value();
  auto refusal = [&](const std::string& text) {
    auto verified = verify_config_certificate(verifier, text);
    CHECK(verified.code() == Code::kBadRequest);
    return verified.status().message();
  };

  SECTION("a forged signature") {
    std::string forged = parts.signature;
    forged[5] = static_cast<char>(forged[5] ^ 1);
    CHECK_THAT(refusal(wire::join_config_certificate(parts.record, forged)), Catch::Contains("signature check"));
  }
  SECTION("an altered record under the genuine signature") {
    ReplicaSet more = kSet;
    more.replicas[1].address = "tcp://attacker:7200";
    const std::string altered = wire::join_config_certificate(wire::encode_replica_set(more), parts.signature);
    CHECK_THAT(refusal(altered), Catch::Contains("signature check"));
  }
  SECTION("another group's key") {
    const SequencerSigner other(key_of('2'), "local-1");
    CHECK_THAT(refusal(sign_config_certificate(other, kSet)), Catch::Contains("signature check"));
  }
  SECTION("a signature of the bare record, as a sequencer's payload is signed") {
    // One key signs both: the context in the signed bytes keeps them apart.
    const std::string payload = wire::encode_replica_set(kSet);
    const std::string sig = signer.signature_of(payload);
    CHECK_THAT(refusal(wire::join_config_certificate(payload, sig)), Catch::Contains("signature check"));
  }
  SECTION("not in the format") {
    CHECK_THAT(refusal("ps2." + sequencer_format::base64url(parts.record)), Catch::Contains("pcc1."));
    CHECK_THAT(refusal("pcc1." + sequencer_format::base64url(parts.record)), Catch::Contains("no signature"));
    CHECK_THAT(refusal(wire::join_config_certificate(parts.record, "short")), Catch::Contains("wrong length"));
    CHECK_THAT(refusal("pcc1.!!.!!"), Catch::Contains("base64url"));
    CHECK_THAT(refusal(std::string(wire::kMaxConfigCertificateBytes + 1, 'p')), Catch::Contains("over the limit"));
  }
  SECTION("a genuine signature of a record that does not decode") {
    const std::string junk = "not a record";
    const std::string text = wire::join_config_certificate(junk, signer.signature_of(wire::config_signed_bytes(junk)));
    CHECK_THAT(refusal(text), Catch::Contains("replica set"));
  }
}

}  // namespace
}  // namespace palisade
