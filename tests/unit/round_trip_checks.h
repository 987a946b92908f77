// Round trips through a request codec: what the encoder writes decodes to the
// same request, with its id, and encodes again to the same bytes. The replica
// and lock-group codec tests run these with their own encoder and decoder.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "wire/envelope.h"
#include "tests/unit/bad_request_checks.h"
#include "tests/unit/hex_text.h"

namespace palisade::test {

// `encode(request)` is bytes; `decode(bytes, limits, &id)` a Result of the request.
template <typename Request, typename Encode, typename Decode>
void check_request_round_trip(const Request& request, Encode encode, Decode decode) {
  std::string bytes = encode(request);
  INFO("bytes " << hex_head(bytes));
  uint64_t id = kGarbageId;
  auto decoded = decode(bytes, wire::Limits{}, &id);
  INFO(decoded.status().to_string());
  REQUIRE(decoded.is_ok());
  CHECK(decoded.value() == request);
  CHECK(id == request.id);
  CHECK(encode(decoded.value()) == bytes);
}

// Each named request, in a section of its own.
template <typename Request, typename Encode, typename Decode>
void check_request_round_trips(const std::vector<std::pair<const char*, Request>>& cases, Encode encode,
                               Decode decode) {
  for (const auto& [name, request] : cases) {
    DYNAMIC_SECTION(name) { check_request_round_trip(request, encode, decode); }
  }
}

// `count` requests made by `random_request(rng)` from `seed`.
template <typename RandomRequest, typename Encode, typename Decode>
void check_random_request_round_trips(uint64_t seed, int count, RandomRequest random_request, Encode encode,
                                      Decode decode) {
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < count; ++i) {
    const auto request = random_request(rng);
    INFO("case " << i << ", body index " << request.body.index());
    check_request_round_trip(request, encode, decode);
  }
}

// Encodes `reply`, decodes it with `decode(bytes)`, checks that encoding that
// again gives the same bytes, and returns what was decoded. Replies have no
// operator== (Status has none): the caller compares their fields, starting
// with check_same_id_and_status.
template <typename Reply, typename Encode, typename Decode>
Reply round_trip_reply(const Reply& reply, Encode encode, Decode decode) {
  std::string bytes = encode(reply);
  INFO("bytes " << hex_head(bytes));
  auto decoded = decode(bytes);
  INFO(decoded.status().to_string());
  REQUIRE(decoded.is_ok());
  CHECK(encode(decoded.value()) == bytes);
  return decoded.value();
}

template <typename Reply>
void check_same_id_and_status(const Reply& got, const Reply& want) {
  CHECK(got.id == want.id);
  CHECK(got.status.code() == want.status.code());
  CHECK(got.status.message() == want.status.message());
}

}  // namespace palisade::test
