// Sequencers (palisade/sequencer.h, wire/sequencer.h, auth/sequencer_signer.h): signed, parsed,
// verified; forged, altered and garbage texts refused with bad_sequencer, never a crash.
#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include <msgpack.hpp>
#include <sodium.h>

#include "auth/cluster_key.h"
#include "tests/support/sequencers.h"
#include "wire/sequencer.h"

namespace palisade {
namespace {

const Sequencer kSeq{"local-1", "orders", LockMode::kExclusive, 42};

ClusterKey key_of(char digit) { return ClusterKey::from_hex(std::string(64, digit)).value(); }

std::string b64(std::string_view bytes) {
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(out.size() - 1);
  return out;
}

// An Ed25519 key pair made by libsodium alone, and its verifier for group "g".
struct RawKeys {
  std::array<unsigned char, crypto_sign_PUBLICKEYBYTES> pk{};
  std::array<unsigned char, crypto_sign_SECRETKEYBYTES> sk{};
  RawKeys() {
    REQUIRE(sodium_init() >= 0);
    crypto_sign_keypair(pk.data(), sk.data());
  }
  SequencerVerifier verifier(std::string_view group = "g") const {
    return SequencerVerifier::create(group, "psk1." + b64({reinterpret_cast<const char*>(pk.data()), pk.size()}))
        .value();
  }
  // A sequencer text around any payload, signed properly: checks the payload rules.
  std::string sign(std::string_view payload) const {
    std::string sig(crypto_sign_BYTES, '\0');
    crypto_sign_detached(reinterpret_cast<unsigned char*>(sig.data()), nullptr,
                         reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), sk.data());
    return "ps2." + b64(payload) + "." + b64(sig);
  }
};

template <class... F>
std::string payload_of(const F&... fields) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(sizeof...(fields));
  (pk.pack(fields), ...);
  return {buf.data(), buf.size()};
}

TEST_CASE("sequencer: sign, parse and verify round trip", "[sequencer]") {
  const ClusterKey key = ClusterKey::generate();
  for (const Sequencer& s :
       {kSeq, Sequencer{"g", "L", LockMode::kShared, 1}, Sequencer{"g", "L", LockMode::kShared, 1, "worker-7"},
        Sequencer{"g", "jobs/1", LockMode::kExclusive, 5, std::string(64, 'w')},
        Sequencer{"group-with-a-long-name", std::string(256, 'x'), LockMode::kExclusive, UINT64_MAX}}) {
    INFO(s.lock << " " << s.token);
    std::string text = sign_sequencer(s, key);
    CHECK(text.starts_with("ps2."));
    CHECK(text.size() <= kMaxSequencerBytes);
    CHECK(text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
          std::string::npos);
    auto parsed = parse_sequencer(text);
    REQUIRE(parsed.is_ok());
    CHECK(parsed.value() == s);
    auto verified = verify_sequencer(text, key, s.group);
    INFO(verified.status().to_string());
    REQUIRE(verified.is_ok());
    CHECK(verified.value() == s);
  }
  // Deterministic: the same grant under the same key is the same text.
  CHECK(sign_sequencer(kSeq, key) == sign_sequencer(kSeq, key));
}

TEST_CASE("sequencer: the payload is MessagePack [group, lock, mode, token], signed by libsodium's Ed25519",
          "[sequencer]") {
  const std::string text = sign_sequencer(kSeq, key_of('7'));
  const size_t dot = text.rfind('.');
  CHECK(text.substr(0, dot) == "ps2." + b64(payload_of(std::string("local-1"), std::string("orders"),
                                                       std::string("exclusive"), uint64_t{42})));
  // A payload signed by libsodium directly verifies under its public key.
  const RawKeys raw;
  auto verified = raw.verifier("local-1").verify(raw.sign(sequencer_format::encode_payload(kSeq)));
  REQUIRE(verified.is_ok());
  CHECK(verified.value() == kSeq);
}

TEST_CASE("sequencer: the test vector of docs/protocol.md", "[sequencer]") {
  // Cluster key 00 01 02 ... 1f, group "local-1". Ed25519 signatures are
  // deterministic: the same key and payload always give this text. Python's
  // hashlib and `cryptography` give the same (the snippet in the doc).
  const ClusterKey key =
      ClusterKey::from_hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f").value();
  const SequencerSigner signer(key, "local-1");
  CHECK(signer.public_key() == "psk1.4kjbmWEQ_NW1yQFY8nD7b_qDMZZ6OEfeKv9N1-nQyv8");
  const std::string text =
      "ps2.lKdsb2NhbC0xpm9yZGVyc6lleGNsdXNpdmUH.cT4Zvp8YAepuMzuJEs4HEna6rz6X41XSQn3toflXaQ_LcG8-E-jM-"
      "YuI_9RNQb2HpsfPsgdEWzhoYRxZ3mdWDA";
  const Sequencer s{"local-1", "orders", LockMode::kExclusive, 7};
  CHECK(signer.sign(s) == text);
  auto verified = SequencerVerifier::create("local-1", signer.public_key()).value().verify(text);
  REQUIRE(verified.is_ok());
  CHECK(verified.value() == s);
}

TEST_CASE("sequencer: the group's key depends on the cluster key and the group", "[sequencer]") {
  const std::string k1 = SequencerSigner(key_of('1'), "g").public_key();
  CHECK(k1.starts_with("psk1."));
  CHECK(k1.size() == 48);
  CHECK(k1 == SequencerSigner(key_of('1'), "g").public_key());
  CHECK(k1 != SequencerSigner(key_of('2'), "g").public_key());
  CHECK(k1 != SequencerSigner(key_of('1'), "h").public_key());
  CHECK(SequencerSigner(key_of('1'), "g").verifier().public_key() == k1);
}

TEST_CASE("sequencer verifier: public keys that are not one are refused", "[sequencer]") {
  const std::string good = SequencerSigner(key_of('1'), "g").public_key();
  CHECK(SequencerVerifier::create("g", good).is_ok());
  for (const std::string& bad :
       {std::string(""), good.substr(5), "psk2." + good.substr(5), good + "A", good.substr(0, 47),
        good.substr(0, 47) + "=", key_of('1').to_hex(), "psk1." + std::string(43, '*')}) {
    INFO("'" << bad << "'");
    CHECK(SequencerVerifier::create("g", bad).code() == Code::kBadRequest);
  }
  CHECK(SequencerVerifier::create("", good).code() == Code::kBadRequest);
}

TEST_CASE("sequencer: tampered, forged and foreign sequencers are refused", "[sequencer]") {
  const ClusterKey key = key_of('a');
  const std::string good = sign_sequencer(kSeq, key);
  const size_t mac_dot = good.rfind('.');
  const std::string payload_b64 = good.substr(4, mac_dot - 4);
  const std::string mac_b64 = good.substr(mac_dot + 1);

  // The payload of a higher token with the original signature.
  Sequencer higher = kSeq;
  higher.token = uint64_t{1} << 63;
  const std::string other = sign_sequencer(higher, key_of('b'));
  const std::string other_payload = other.substr(4, other.rfind('.') - 4);

  auto flip = [](std::string s, size_t at) {
    s[at] = s[at] == 'A' ? 'B' : 'A';
    return s;
  };
  struct Case {
    const char* name;
    std::string text;
  };
  const std::vector<Case> cases = {
      {"tampered payload", "ps2." + flip(payload_b64, 3) + "." + mac_b64},
      {"another payload with this signature", "ps2." + other_payload + "." + mac_b64},
      {"tampered signature", "ps2." + payload_b64 + "." + flip(mac_b64, 10)},
      {"signed with another key", sign_sequencer(kSeq, key_of('b'))},
      {"forged: a signature of zeros", "ps2." + payload_b64 + "." + b64(std::string(64, '\0'))},
      {"forged: a MAC's length", "ps2." + payload_b64 + "." + b64(std::string(32, '\0'))},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      auto v = verify_sequencer(c.text, key, kSeq.group);
      CHECK(v.code() == Code::kBadSequencer);
      CHECK_FALSE(v.status().message().empty());
    }
  }
  SECTION("another group") {
    // The same public key, as another group's verifier.
    auto v = SequencerVerifier::create("local-2", SequencerSigner(key, kSeq.group).public_key()).value().verify(good);
    CHECK(v.code() == Code::kBadSequencer);
    CHECK(v.status().message().find("local-2") != std::string::npos);
    // Parse alone does not check the group or the signature.
    CHECK(parse_sequencer(good).is_ok());
    CHECK(parse_sequencer(sign_sequencer(kSeq, key_of('b'))).is_ok());
  }
}

TEST_CASE("sequencer: garbage, truncated and overlong texts are refused, never a crash", "[sequencer]") {
  const ClusterKey key = key_of('c');
  const std::string good = sign_sequencer(kSeq, key);
  std::vector<std::string> texts = {
      "",
      "ps2.",
      "ps2..",
      "ps1",
      "ps1." + good.substr(4),  // the HMAC sequencers of before
      "ps3." + good.substr(4),
      "PS2." + good.substr(4),
      good.substr(0, good.rfind('.')),  // no signature
      good + ".extra",  // three parts
      good + "=",  // padding
      good.substr(0, good.size() - 1),  // signature one character short
      good + "A",  // signature one character long
      "ps2." + good.substr(5),  // payload truncated at the front
      " " + good,  // whitespace
      good + "\n",
      "ps2.!!!!.AAAA",
      "ps2.AAAA.****",
      std::string("ps2.\0\0.\0\0", 9),
      std::string(kMaxSequencerBytes + 1, 'A'),
      "ps2." + std::string(kMaxSequencerBytes, 'A') + "." + good.substr(good.rfind('.') + 1),  // overlong
  };
  // Truncated at every length.
  for (size_t n = 0; n < good.size(); ++n) texts.push_back(good.substr(0, n));
  // Random bytes behind the prefix.
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    std::string t = "ps2.";
    size_t n = rng() % 120;
    for (size_t j = 0; j < n; ++j) t.push_back(static_cast<char>(rng() % 256));
    texts.push_back(t);
  }
  for (const std::string& t : texts) {
    INFO("text of " << t.size() << " bytes: " << t.substr(0, 80));
    CHECK(parse_sequencer(t).code() == Code::kBadSequencer);
    CHECK(verify_sequencer(t, key, kSeq.group).code() == Code::kBadSequencer);
  }
}

TEST_CASE("sequencer: well-signed payloads that are not [group, lock, mode, token] are refused", "[sequencer]") {
  const RawKeys key;
  using S = std::string;
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"empty payload", ""},
      {"not MessagePack", "\xc1"},
      {"three fields", payload_of(S("g"), S("L"), S("exclusive"))},
      {"five fields, the last not a text", payload_of(S("g"), S("L"), S("exclusive"), uint64_t{1}, uint64_t{2})},
      // The identity is there only when there is one: one payload per grant.
      {"an empty identity", payload_of(S("g"), S("L"), S("exclusive"), uint64_t{1}, S(""))},
      {"an identity that is not a name", payload_of(S("g"), S("L"), S("exclusive"), uint64_t{1}, S("-x y"))},
      {"an identity over 64 bytes", payload_of(S("g"), S("L"), S("exclusive"), uint64_t{1}, S(65, 'w'))},
      {"six fields", payload_of(S("g"), S("L"), S("exclusive"), uint64_t{1}, S("w"), S("w"))},
      {"a map",
       [] {
         msgpack::sbuffer buf;
         msgpack::packer<msgpack::sbuffer> pk(buf);
         pk.pack_map(0);
         return S(buf.data(), buf.size());
       }()},
      {"unknown mode", payload_of(S("g"), S("L"), S("both"), uint64_t{1})},
      {"negative token", payload_of(S("g"), S("L"), S("exclusive"), int64_t{-1})},
      {"token as text", payload_of(S("g"), S("L"), S("exclusive"), S("1"))},
      {"token 0", payload_of(S("g"), S("L"), S("exclusive"), uint64_t{0})},
      {"empty lock", payload_of(S("g"), S(""), S("exclusive"), uint64_t{1})},
      {"empty group", payload_of(S(""), S("L"), S("exclusive"), uint64_t{1})},
      {"lock over 256 bytes", payload_of(S("g"), S(257, 'L'), S("exclusive"), uint64_t{1})},
      {"trailing bytes", payload_of(S("g"), S("L"), S("exclusive"), uint64_t{1}) + "\x01"},
      {"nested list", payload_of(S("g"), S("L"), S("exclusive"), std::vector<int>{1})},
  };
  for (const auto& [name, payload] : cases) {
    INFO(name);
    std::string text = key.sign(payload);
    CHECK(parse_sequencer(text).code() == Code::kBadSequencer);
    CHECK(key.verifier().verify(text).code() == Code::kBadSequencer);
  }
  // The same shapes done right are accepted.
  CHECK(key.verifier().verify(key.sign(payload_of(S("g"), S("L"), S("shared"), uint64_t{9}))).is_ok());
  auto named = key.verifier().verify(key.sign(payload_of(S("g"), S("L"), S("shared"), uint64_t{9}, S("worker-7"))));
  REQUIRE(named.is_ok());
  CHECK(named.value().identity == "worker-7");
}

TEST_CASE("cluster key: hex round trip, bad hex refused, fresh keys differ", "[sequencer]") {
  const ClusterKey key = ClusterKey::generate();
  const std::string hex = key.to_hex();
  CHECK(hex.size() == 64);
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  auto back = ClusterKey::from_hex(hex);
  REQUIRE(back.is_ok());
  CHECK(back.value().bytes() == key.bytes());
  // Surrounding whitespace (a key file's newline) is ignored; case does not matter.
  auto spaced = ClusterKey::from_hex("  \n" + hex + "\n\n");
  REQUIRE(spaced.is_ok());
  CHECK(spaced.value().bytes() == key.bytes());
  std::string upper = hex;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  CHECK(ClusterKey::from_hex(upper).value().bytes() == key.bytes());
  CHECK(ClusterKey::from_hex(std::string(64, 'f')).value().bytes()[31] == 0xff);

  for (const std::string& bad : {std::string(""), std::string(63, 'a'), std::string(65, 'a'),
                                 std::string(62, 'a') + "g0", std::string(32, 'a') + " " + std::string(31, 'a'),
                                 std::string(62, 'a') + "0x", "0x" + std::string(64, 'a'), std::string(128, 'a')}) {
    INFO("'" << bad << "'");
    CHECK(ClusterKey::from_hex(bad).code() == Code::kBadRequest);
  }

  CHECK(ClusterKey::generate().bytes() != ClusterKey::generate().bytes());
  CHECK(ClusterKey::generate().bytes() != std::array<unsigned char, ClusterKey::kBytes>{});
}

TEST_CASE("sequencer fence: a service refuses a superseded holder and forged grants", "[sequencer]") {
  const SequencerSigner group(key_of('5'), "g");
  SequencerFence fence(SequencerVerifier::create("g", group.public_key()).value());
  auto grant = [&](std::string lock, uint64_t token, LockMode mode = LockMode::kExclusive) {
    return group.sign({"g", std::move(lock), mode, token});
  };
  CHECK(fence.floor("jobs") == 0);
  REQUIRE(fence.admit(grant("jobs", 5)).is_ok());
  CHECK(fence.floor("jobs") == 5);
  CHECK(fence.admit(grant("jobs", 5)).is_ok());  // the holder's next write
  auto admitted = fence.admit(grant("jobs", 9));  // a newer holder
  REQUIRE(admitted.is_ok());
  CHECK(admitted.value() == Sequencer{"g", "jobs", LockMode::kExclusive, 9});
  CHECK(fence.floor("jobs") == 9);

  auto zombie = fence.admit(grant("jobs", 5));  // the old holder again
  CHECK(zombie.code() == Code::kFenced);
  CHECK(zombie.status().message().find("below the fence's floor 9") != std::string::npos);
  CHECK(fence.floor("jobs") == 9);

  CHECK(fence.admit(grant("other", 1)).is_ok());  // floors are per lock
  CHECK(fence.floor("other") == 1);
  CHECK(fence.admit(grant("jobs", 10, LockMode::kShared)).code() == Code::kBadSequencer);
  CHECK(fence.admit(SequencerSigner(key_of('6'), "g").sign({"g", "jobs", LockMode::kExclusive, 1u << 30})).code() ==
        Code::kBadSequencer);
  CHECK(fence.admit("ps2.garbage").code() == Code::kBadSequencer);
  CHECK(fence.floor("jobs") == 9);  // refusals raise nothing
}

TEST_CASE("bad_sequencer is a wire code", "[sequencer]") {
  CHECK(code_name(Code::kBadSequencer) == "bad_sequencer");
  CHECK(code_from_name("bad_sequencer") == Code::kBadSequencer);
}

}  // namespace
}  // namespace palisade

namespace palisade {
namespace {

// libsodium's decoder, which wire/sequencer.cc's own replaced (clients link no
// libsodium): nullopt when it refuses `text` or does not read all of it.
std::optional<std::string> sodium_unbase64(std::string_view text) {
  std::string out(text.size() * 3 / 4 + 1, '\0');
  size_t size = 0;
  const char* end = nullptr;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(), text.size(),
                        /*ignore=*/nullptr, &size, &end, sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
      end != text.data() + text.size()) {
    return std::nullopt;
  }
  out.resize(size);
  return out;
}

TEST_CASE("sequencer: its base64url encodes and decodes as libsodium's does", "[sequencer]") {
  REQUIRE(sodium_init() >= 0);
  std::mt19937_64 rng(25);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const std::string text = sequencer_format::base64url(bytes);
    REQUIRE(text == b64(bytes));
    REQUIRE(sequencer_format::unbase64url(text) == std::optional<std::string>(bytes));
  }
  // Texts of the alphabet, padding and a few others: the same ones accepted,
  // with the same bytes (unused bits must be zero, no length 4k + 1).
  const std::string chars = "AQgw_-9aZz=+/. ";
  for (int i = 0; i < 20000; ++i) {
    std::string text(rng() % 9, '\0');
    for (char& c : text) c = chars[rng() % (i % 2 ? 10 : chars.size())];
    INFO("text '" << text << "'");
    REQUIRE(sequencer_format::unbase64url(text) == sodium_unbase64(text));
  }
}

}  // namespace
}  // namespace palisade
