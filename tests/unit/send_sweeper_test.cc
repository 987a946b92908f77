#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "client/send_sweeper.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;

constexpr auto kPeriod = 2ms;

// Waits (up to 10 s, polling) until `done` holds; false if it never did.
template <class F>
bool eventually(F done) {
  for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;) {
    if (done()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return done();
}

// In each test the sweeps' state is declared before the sweeper, so that it
// outlives the sweeper's thread.

TEST_CASE("send sweeper: sweeps after a wake until nothing is held", "[quorum_store]") {
  std::atomic<int> calls{0};
  std::atomic<int> held_for{3};  // rounds the sweep still holds sends
  client::SendSweeper sweeper(kPeriod);
  sweeper.add([&](uint64_t) {
    ++calls;
    return --held_for > 0;
  });
  CHECK(calls == 0);  // nothing runs before a wake
  sweeper.wake();
  REQUIRE(eventually([&] { return calls >= 3; }));
  // Nothing held: it sleeps. (Only a wake starts it again; this cannot fail
  // spuriously, a slow machine could only let a broken sweeper pass.)
  std::this_thread::sleep_for(20 * kPeriod);
  CHECK(calls == 3);
  held_for = 1;
  sweeper.wake();
  REQUIRE(eventually([&] { return calls == 4; }));
}

TEST_CASE("send sweeper: a removed sweep never runs again", "[quorum_store]") {
  std::atomic<int> first{0}, second{0};
  client::SendSweeper sweeper(kPeriod);
  uint64_t id = sweeper.add([&](uint64_t) {
    ++first;
    return true;
  });
  sweeper.add([&](uint64_t) {
    ++second;
    return true;
  });
  sweeper.wake();
  REQUIRE(eventually([&] { return first >= 1; }));
  sweeper.remove(id);
  const int seen = first;
  const int rounds = second;
  REQUIRE(eventually([&] { return second >= rounds + 2; }));  // a whole round after remove() returned
  CHECK(first == seen);
}

TEST_CASE("send sweeper: a wake from inside a sweep keeps it sweeping", "[quorum_store]") {
  std::atomic<int> calls{0};
  client::SendSweeper sweeper(kPeriod);
  sweeper.add([&](uint64_t) {
    if (++calls < 5) sweeper.wake();  // as a store's flush that holds sends again would
    return false;
  });
  sweeper.wake();
  CHECK(eventually([&] { return calls >= 5; }));
}

TEST_CASE("send sweeper: one per process while anyone holds it", "[quorum_store]") {
  auto a = client::shared_sweeper();
  auto b = client::shared_sweeper();
  CHECK(a == b);
}

}  // namespace
}  // namespace palisade
