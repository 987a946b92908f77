// LockClient::acquire's verdict on a grant's fence (client/grant_fence.h).
#include "client/grant_fence.h"

#include <catch2/catch.hpp>

namespace palisade::client {

TEST_CASE("grant fence: a floor above the token means the grant is superseded", "[lock_client]") {
  // Issue #23: the fence came back ok with floor 9 and acquire returned a lease
  // whose every write would be fenced.
  Status s = grant_fence_status(WriteResult{.status = Status::ok(), .ts = {}, .floor = 9}, "orders", 7);
  CHECK(s.code() == Code::kFenced);
  CHECK_THAT(s.message(), Catch::Contains("orders") && Catch::Contains("9") && Catch::Contains("token 7"));
}

TEST_CASE("grant fence: a floor at or below the token is the grant's own", "[lock_client]") {
  CHECK(grant_fence_status(WriteResult{.status = Status::ok(), .ts = {}, .floor = 7}, "orders", 7).is_ok());
  CHECK(grant_fence_status(WriteResult{.status = Status::ok(), .ts = {}, .floor = 0}, "orders", 7).is_ok());
}

TEST_CASE("grant fence: a fence that failed keeps its code", "[lock_client]") {
  Status s = grant_fence_status(WriteResult{.status = Status(Code::kUnavailable, "1 of 3"), .ts = {}, .floor = 0},
                                "orders", 7);
  CHECK(s.code() == Code::kUnavailable);
  CHECK_THAT(s.message(), Catch::Contains("1 of 3"));
}

}  // namespace palisade::client
