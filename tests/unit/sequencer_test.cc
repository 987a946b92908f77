// Sequencers (wire/sequencer.h, auth/sequencer_key.h): signed, parsed, verified; forged, altered and
// garbage texts refused with bad_sequencer, never a crash.
#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include <msgpack.hpp>
#include <sodium.h>

#include "auth/sequencer_key.h"

namespace palisade {
namespace {

const Sequencer kSeq{"local-1", "orders", LockMode::kExclusive, 42};

SequencerKey key_of(char digit) { return SequencerKey::from_hex(std::string(64, digit)).value(); }

std::string b64(std::string_view bytes) {
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(out.size() - 1);
  return out;
}

std::string mac(std::string_view payload, const SequencerKey& key) {
  std::string out(crypto_auth_BYTES, '\0');
  crypto_auth(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(payload.data()),
              payload.size(), key.bytes().data());
  return out;
}

// A sequencer text around any payload, signed properly: checks the payload rules.
std::string signed_payload(std::string_view payload, const SequencerKey& key) {
  return "ps1." + b64(payload) + "." + b64(mac(payload, key));
}

template <class... F>
std::string payload_of(const F&... fields) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(sizeof...(fields));
  (pk.pack(fields), ...);
  return {buf.data(), buf.size()};
}

TEST_CASE("sequencer: sign, parse and verify round trip", "[sequencer]") {
  const SequencerKey key = SequencerKey::generate();
  for (const Sequencer& s : {kSeq, Sequencer{"g", "L", LockMode::kShared, 1},
                             Sequencer{"group-with-a-long-name", std::string(256, 'x'), LockMode::kExclusive, UINT64_MAX}}) {
    INFO(s.lock << " " << s.token);
    std::string text = sign_sequencer(s, key);
    CHECK(text.starts_with("ps1."));
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

TEST_CASE("sequencer: the payload is MessagePack [group, lock, mode, token]", "[sequencer]") {
  const SequencerKey key = key_of('7');
  std::string text = sign_sequencer(kSeq, key);
  CHECK(text == signed_payload(payload_of(std::string("local-1"), std::string("orders"), std::string("exclusive"),
                                          uint64_t{42}),
                               key));
}

TEST_CASE("sequencer: the test vector of docs/protocol.md", "[sequencer]") {
  // Key 00 01 02 ... 1f; HMAC-SHA-512 truncated to 32 bytes, as in Python:
  // hmac.new(key, payload, hashlib.sha512).digest()[:32].
  const SequencerKey key =
      SequencerKey::from_hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f").value();
  const std::string text = "ps1.lKdsb2NhbC0xpm9yZGVyc6lleGNsdXNpdmUH.ekFgcV5KGovdvBXJHZsuuwEk-nEpH4tawM_szNUCCWc";
  const Sequencer s{"local-1", "orders", LockMode::kExclusive, 7};
  CHECK(sign_sequencer(s, key) == text);
  auto verified = verify_sequencer(text, key, "local-1");
  REQUIRE(verified.is_ok());
  CHECK(verified.value() == s);
}

TEST_CASE("sequencer: tampered, forged and foreign sequencers are refused", "[sequencer]") {
  const SequencerKey key = key_of('a');
  const std::string good = sign_sequencer(kSeq, key);
  const size_t mac_dot = good.rfind('.');
  const std::string payload_b64 = good.substr(4, mac_dot - 4);
  const std::string mac_b64 = good.substr(mac_dot + 1);

  // The payload of a higher token with the original MAC.
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
      {"tampered payload", "ps1." + flip(payload_b64, 3) + "." + mac_b64},
      {"another payload with this MAC", "ps1." + other_payload + "." + mac_b64},
      {"tampered MAC", "ps1." + payload_b64 + "." + flip(mac_b64, 10)},
      {"signed with another key", sign_sequencer(kSeq, key_of('b'))},
      {"forged: a MAC of zeros", "ps1." + payload_b64 + "." + b64(std::string(32, '\0'))},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      auto v = verify_sequencer(c.text, key, kSeq.group);
      CHECK(v.code() == Code::kBadSequencer);
      CHECK_FALSE(v.status().message().empty());
    }
  }
  SECTION("another group") {
    auto v = verify_sequencer(good, key, "local-2");
    CHECK(v.code() == Code::kBadSequencer);
    CHECK(v.status().message().find("local-2") != std::string::npos);
    // Parse alone does not check the group or the MAC.
    CHECK(parse_sequencer(good).is_ok());
    CHECK(parse_sequencer(sign_sequencer(kSeq, key_of('b'))).is_ok());
  }
}

TEST_CASE("sequencer: garbage, truncated and overlong texts are refused, never a crash", "[sequencer]") {
  const SequencerKey key = key_of('c');
  const std::string good = sign_sequencer(kSeq, key);
  std::vector<std::string> texts = {
      "",
      "ps1.",
      "ps1..",
      "ps1",
      "ps2." + good.substr(4),
      "PS1." + good.substr(4),
      good.substr(0, good.rfind('.')),  // no MAC
      good + ".extra",  // three parts
      good + "=",  // padding
      good.substr(0, good.size() - 1),  // MAC one character short
      good + "A",  // MAC one character long
      "ps1." + good.substr(5),  // payload truncated at the front
      " " + good,  // whitespace
      good + "\n",
      "ps1.!!!!.AAAA",
      "ps1.AAAA.****",
      std::string("ps1.\0\0.\0\0", 9),
      std::string(kMaxSequencerBytes + 1, 'A'),
      "ps1." + std::string(kMaxSequencerBytes, 'A') + "." + good.substr(good.rfind('.') + 1),  // overlong
  };
  // Truncated at every length.
  for (size_t n = 0; n < good.size(); ++n) texts.push_back(good.substr(0, n));
  // Random bytes behind the prefix.
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    std::string t = "ps1.";
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
  const SequencerKey key = key_of('d');
  using S = std::string;
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"empty payload", ""},
      {"not MessagePack", "\xc1"},
      {"three fields", payload_of(S("g"), S("L"), S("exclusive"))},
      {"five fields", payload_of(S("g"), S("L"), S("exclusive"), uint64_t{1}, uint64_t{2})},
      {"a map", [] {
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
    std::string text = signed_payload(payload, key);
    CHECK(parse_sequencer(text).code() == Code::kBadSequencer);
    CHECK(verify_sequencer(text, key, "g").code() == Code::kBadSequencer);
  }
  // The same shape done right is accepted.
  CHECK(verify_sequencer(signed_payload(payload_of(S("g"), S("L"), S("shared"), uint64_t{9}), key), key, "g").is_ok());
}

TEST_CASE("sequencer key: hex round trip, bad hex refused, fresh keys differ", "[sequencer]") {
  const SequencerKey key = SequencerKey::generate();
  const std::string hex = key.to_hex();
  CHECK(hex.size() == 64);
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  auto back = SequencerKey::from_hex(hex);
  REQUIRE(back.is_ok());
  CHECK(back.value().bytes() == key.bytes());
  // Surrounding whitespace (a key file's newline) is ignored; case does not matter.
  auto spaced = SequencerKey::from_hex("  \n" + hex + "\n\n");
  REQUIRE(spaced.is_ok());
  CHECK(spaced.value().bytes() == key.bytes());
  std::string upper = hex;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  CHECK(SequencerKey::from_hex(upper).value().bytes() == key.bytes());
  CHECK(SequencerKey::from_hex(std::string(64, 'f')).value().bytes()[31] == 0xff);

  for (const std::string& bad : {std::string(""), std::string(63, 'a'), std::string(65, 'a'),
                                 std::string(62, 'a') + "g0", std::string(32, 'a') + " " + std::string(31, 'a'),
                                 std::string(62, 'a') + "0x", "0x" + std::string(64, 'a'), std::string(128, 'a')}) {
    INFO("'" << bad << "'");
    CHECK(SequencerKey::from_hex(bad).code() == Code::kBadRequest);
  }

  CHECK(SequencerKey::generate().bytes() != SequencerKey::generate().bytes());
  CHECK(SequencerKey::generate().bytes() != std::array<unsigned char, SequencerKey::kBytes>{});
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
