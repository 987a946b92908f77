// Properties of the fenced hybrid timestamp (docs/design.md "Fenced hybrid timestamp"):
// byte order equals timestamp order, the token dominates, and the binary and human
// forms round-trip. Random cases come from a fixed seed so a failure reproduces.
#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "palisade/timestamp.h"

namespace Catch {
template <>
struct StringMaker<palisade::FencedTimestamp> {
  static std::string convert(const palisade::FencedTimestamp& ts) {
    return "{token " + std::to_string(ts.token) + ", hlc " + std::to_string(ts.hlc) + " = " + ts.to_string() + "}";
  }
};
}  // namespace Catch

namespace palisade {
namespace {

constexpr uint64_t kSeed = 0x7a11'5ade'0001;
constexpr int kCases = 200'000;

// A 64-bit value biased towards the interesting ones: small numbers (so that equal
// tokens are common and the hlc decides), the edges of every byte and of the
// physical/logical split, and uniformly random ones.
uint64_t interesting_u64(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0:
      return rng() % 4;
    case 1:
      return UINT64_MAX - rng() % 4;
    case 2: {
      int shift = static_cast<int>(rng() % 64);
      uint64_t edge = uint64_t{1} << shift;
      return edge + (rng() % 3) - 1;  // 2^k - 1, 2^k, 2^k + 1
    }
    case 3:
      return hlc::make(rng() & hlc::kMaxPhysicalMs, rng() % 2 == 0 ? 0 : hlc::kLogicalMask);
    default:
      return rng();
  }
}

FencedTimestamp random_ts(std::mt19937_64& rng) { return {interesting_u64(rng), interesting_u64(rng)}; }

// A second timestamp close to `a` often enough that ties and near-ties get tested.
FencedTimestamp nearby_ts(std::mt19937_64& rng, const FencedTimestamp& a) {
  FencedTimestamp b = a;
  switch (rng() % 5) {
    case 0:
      break;  // equal
    case 1:
      b.hlc += (rng() % 3) - 1;
      break;
    case 2:
      b.token += (rng() % 3) - 1;
      break;
    case 3:
      b.hlc = interesting_u64(rng);  // same token, any hlc
      break;
    default:
      b = random_ts(rng);
  }
  return b;
}

std::strong_ordering memcmp_order(const FencedTimestamp& a, const FencedTimestamp& b) {
  auto ea = a.encode();
  auto eb = b.encode();
  return std::memcmp(ea.data(), eb.data(), FencedTimestamp::kEncodedSize) <=> 0;
}

const char* name(std::strong_ordering o) {
  if (o == std::strong_ordering::less) return "less";
  if (o == std::strong_ordering::greater) return "greater";
  return "equal";
}

TEST_CASE("timestamp: hlc packing of physical milliseconds and logical counter", "[timestamp]") {
  STATIC_REQUIRE(hlc::kLogicalBits == 16);
  STATIC_REQUIRE(hlc::kLogicalMask == 0xffff);
  STATIC_REQUIRE(hlc::kMaxPhysicalMs == 0xffff'ffff'ffffULL);
  CHECK(hlc::make(0, 0) == 0);
  CHECK(hlc::make(1, 0) == 0x10000);
  CHECK(hlc::make(0, 1) == 1);
  CHECK(hlc::make(0x1234'5678'9abcULL, 0xdef0) == 0x1234'5678'9abc'def0ULL);
  CHECK(hlc::make(hlc::kMaxPhysicalMs, hlc::kLogicalMask) == UINT64_MAX);
  // The logical part is masked, never spilling into the physical part.
  CHECK(hlc::make(5, 0x1'0003) == hlc::make(5, 3));
  // A full logical counter plus one carries into the physical part.
  CHECK(hlc::make(41, hlc::kLogicalMask) + 1 == hlc::make(42, 0));
  CHECK(hlc::physical_ms(0x1234'5678'9abc'def0ULL) == 0x1234'5678'9abcULL);
  CHECK(hlc::logical(0x1234'5678'9abc'def0ULL) == 0xdef0);

  const uint64_t seed = kSeed + 1;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < kCases; ++i) {
    uint64_t p1 = rng() & hlc::kMaxPhysicalMs, l1 = rng() & hlc::kLogicalMask;
    uint64_t p2 = rng() % 2 == 0 ? p1 : rng() & hlc::kMaxPhysicalMs, l2 = rng() & hlc::kLogicalMask;
    uint64_t v1 = hlc::make(p1, l1), v2 = hlc::make(p2, l2);
    INFO("case " << i << ": (" << p1 << ", " << l1 << ") vs (" << p2 << ", " << l2 << ")");
    REQUIRE(hlc::physical_ms(v1) == p1);
    REQUIRE(hlc::logical(v1) == l1);
    // Packed order is (physical, logical) order.
    REQUIRE((v1 <=> v2) == (std::tie(p1, l1) <=> std::tie(p2, l2)));
  }
}

TEST_CASE("timestamp: encoding is 16 big-endian bytes, token first", "[timestamp]") {
  FencedTimestamp ts{0x0102'0304'0506'0708ULL, 0x1112'1314'1516'1718ULL};
  const FencedTimestamp::Encoded expected = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                                             0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18};
  CHECK(ts.encode() == expected);
  CHECK(FencedTimestamp::decode(expected.data()) == ts);

  // encode_to writes exactly 16 bytes, at any alignment.
  std::array<uint8_t, 3 + 16 + 3> buf;
  buf.fill(0xee);
  ts.encode_to(buf.data() + 3);
  CHECK(std::equal(expected.begin(), expected.end(), buf.begin() + 3));
  CHECK(std::all_of(buf.begin(), buf.begin() + 3, [](uint8_t b) { return b == 0xee; }));
  CHECK(std::all_of(buf.end() - 3, buf.end(), [](uint8_t b) { return b == 0xee; }));
}

TEST_CASE("timestamp: memcmp order of encodings equals operator<=> order", "[timestamp]") {
  const uint64_t seed = kSeed + 2;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  int less = 0, equal = 0, greater = 0, same_token = 0;
  for (int i = 0; i < kCases; ++i) {
    FencedTimestamp a = random_ts(rng);
    FencedTimestamp b = nearby_ts(rng, a);
    INFO("case " << i << ": " << Catch::Detail::stringify(a) << " vs " << Catch::Detail::stringify(b));
    std::strong_ordering by_operator = a <=> b;
    // The reference: lexicographic, token first.
    std::strong_ordering by_fields = std::tie(a.token, a.hlc) <=> std::tie(b.token, b.hlc);
    INFO("operator " << name(by_operator) << ", fields " << name(by_fields) << ", memcmp "
                     << name(memcmp_order(a, b)));
    REQUIRE(by_operator == by_fields);
    REQUIRE(memcmp_order(a, b) == by_operator);
    REQUIRE((a == b) == (a.encode() == b.encode()));
    if (by_operator < 0) ++less;
    if (by_operator == 0) ++equal;
    if (by_operator > 0) ++greater;
    if (a.token == b.token && a.hlc != b.hlc) ++same_token;
  }
  // The generator must actually produce every outcome, including hlc-decided ones.
  CHECK(less > kCases / 10);
  CHECK(equal > kCases / 10);
  CHECK(greater > kCases / 10);
  CHECK(same_token > kCases / 10);
}

TEST_CASE("timestamp: sorting encodings sorts timestamps", "[timestamp]") {
  const uint64_t seed = kSeed + 3;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<FencedTimestamp> ts;
  for (int i = 0; i < 20'000; ++i) ts.push_back(i % 3 == 0 && !ts.empty() ? nearby_ts(rng, ts.back()) : random_ts(rng));
  std::vector<FencedTimestamp::Encoded> enc;
  for (const auto& t : ts) enc.push_back(t.encode());
  std::sort(ts.begin(), ts.end());
  std::sort(enc.begin(), enc.end(), [](const auto& x, const auto& y) {
    return std::memcmp(x.data(), y.data(), FencedTimestamp::kEncodedSize) < 0;
  });
  REQUIRE(enc.size() == ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    INFO("position " << i);
    REQUIRE(FencedTimestamp::decode(enc[i].data()) == ts[i]);
  }
}

TEST_CASE("timestamp: a higher token wins whatever the hlc", "[timestamp]") {
  const uint64_t seed = kSeed + 4;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < kCases; ++i) {
    FencedTimestamp low = random_ts(rng);
    if (low.token == UINT64_MAX) low.token -= 1 + rng() % 3;
    FencedTimestamp high{low.token + 1 + rng() % (UINT64_MAX - low.token), interesting_u64(rng)};
    // Half of the cases pit the smallest possible hlc against the largest.
    if (i % 2 == 0) {
      high.hlc = rng() % 2 == 0 ? 0 : rng() % 16;
      low.hlc = UINT64_MAX - rng() % 16;
    }
    INFO("case " << i << ": " << Catch::Detail::stringify(low) << " vs " << Catch::Detail::stringify(high));
    REQUIRE(high.token > low.token);
    REQUIRE(high > low);
    REQUIRE(low < high);
    REQUIRE(memcmp_order(high, low) == std::strong_ordering::greater);
  }
  // Token 0 ("no lock") loses to every fenced timestamp.
  CHECK(FencedTimestamp{0, UINT64_MAX} < FencedTimestamp{1, 0});
}

TEST_CASE("timestamp: encode/decode round trip", "[timestamp]") {
  const uint64_t seed = kSeed + 5;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < kCases; ++i) {
    FencedTimestamp ts = random_ts(rng);
    INFO("case " << i << ": " << Catch::Detail::stringify(ts));
    auto enc = ts.encode();
    REQUIRE(FencedTimestamp::decode(enc.data()) == ts);
    // And the other way: any 16 bytes decode to a timestamp that encodes back to them.
    FencedTimestamp::Encoded bytes;
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    REQUIRE(FencedTimestamp::decode(bytes.data()).encode() == bytes);
  }
}

TEST_CASE("timestamp: to_string/parse round trip", "[timestamp]") {
  CHECK(FencedTimestamp{7, hlc::make(1764479453123, 4)}.to_string() == "7@1764479453123.4");
  CHECK(FencedTimestamp{}.to_string() == "0@0.0");
  CHECK(FencedTimestamp{UINT64_MAX, UINT64_MAX}.to_string() == "18446744073709551615@281474976710655.65535");
  CHECK(FencedTimestamp::parse("7@1764479453123.4") == FencedTimestamp{7, hlc::make(1764479453123, 4)});
  CHECK(FencedTimestamp::parse("0@0.0") == FencedTimestamp{});
  CHECK(FencedTimestamp::parse("18446744073709551615@281474976710655.65535") ==
        FencedTimestamp{UINT64_MAX, UINT64_MAX});
  // Leading zeros are still decimal.
  CHECK(FencedTimestamp::parse("007@010.08") == FencedTimestamp{7, hlc::make(10, 8)});

  const uint64_t seed = kSeed + 6;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < kCases; ++i) {
    FencedTimestamp ts = random_ts(rng);
    std::string text = ts.to_string();
    INFO("case " << i << ": " << text);
    REQUIRE(FencedTimestamp::parse(text) == ts);
  }
}

TEST_CASE("timestamp: parse rejects garbage", "[timestamp]") {
  const std::vector<std::string_view> bad = {
      "",
      "1@",
      "x@1.2",
      "@1.2",
      "1@.2",
      "1@2.",
      "1@2",
      "12",
      "1.2",
      ".",
      "@",
      "@.",
      "1@2.3x",
      "1@2.3 ",
      " 1@2.3",
      "1 @2.3",
      "1@2.3.4",
      "1@2@3.4",
      "1@@2.3",
      "1.5@2.3",
      "-1@2.3",
      "+1@2.3",
      "1@-2.3",
      "1@2.-3",
      "1@+2.3",
      "0x1@2.3",
      "1e3@2.3",
      std::string_view("1@2.3\0", 6),
      std::string_view("1\0@2.3", 6),
      // 2^64: token overflow.
      "18446744073709551616@1.2",
      "99999999999999999999999999@1.2",
      // 2^48: physical overflow.
      "1@281474976710656.0",
      "1@18446744073709551615.0",
      // 2^16: logical overflow.
      "1@1.65536",
      "1@281474976710655.65536",
      "1@1.99999999999999999999999",
  };
  for (std::string_view text : bad) {
    INFO("'" << std::string(text) << "' (" << text.size() << " bytes)");
    CHECK_FALSE(FencedTimestamp::parse(text).has_value());
  }

  const uint64_t seed = kSeed + 7;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const std::string_view junk = "@. x-+_/\t:e";
  for (int i = 0; i < 20'000; ++i) {
    std::string good = random_ts(rng).to_string();
    REQUIRE(FencedTimestamp::parse(good).has_value());
    // Any non-digit inserted anywhere breaks it.
    std::string broken = good;
    broken.insert(broken.begin() + static_cast<std::ptrdiff_t>(rng() % (good.size() + 1)), junk[rng() % junk.size()]);
    INFO("case " << i << ": '" << good << "' -> '" << broken << "'");
    CHECK_FALSE(FencedTimestamp::parse(broken).has_value());
    // Every prefix that ends at or before the dot lacks a part.
    size_t dot = good.find('.');
    size_t cut = rng() % (dot + 2);
    INFO("prefix '" << good.substr(0, cut) << "'");
    CHECK_FALSE(FencedTimestamp::parse(std::string_view(good).substr(0, cut)).has_value());
  }
}

}  // namespace
}  // namespace palisade
