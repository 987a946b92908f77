// transport::poll: a signal an application's handler catches ends the wait
// early, as a timeout does, where zmq::poll throws (EINTR).
#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include <catch2/catch.hpp>
#include <pthread.h>
#include <zmq.hpp>

#include "transport/transport.h"

namespace palisade::transport {
namespace {

extern "C" void on_usr1(int /*signal*/) {}

// Polls a socket nothing is sent to for up to 10 s while another thread sends
// this one SIGUSR1 every 10 ms, caught by a handler without SA_RESTART (poll
// is never restarted anyway); true when `wait` threw.
template <typename Wait>
bool throws_when_signalled(Wait wait) {
  struct sigaction action = {};
  action.sa_handler = on_usr1;
  struct sigaction before = {};
  REQUIRE(sigaction(SIGUSR1, &action, &before) == 0);
  zmq::context_t ctx;
  zmq::socket_t idle(ctx, zmq::socket_type::pull);
  idle.bind("inproc://idle");
  std::atomic<bool> done{false};
  const pthread_t self = pthread_self();
  std::thread signaller([&] {
    while (!done) {
      pthread_kill(self, SIGUSR1);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  bool threw = false;
  const auto start = std::chrono::steady_clock::now();
  try {
    zmq::pollitem_t item{idle.handle(), 0, ZMQ_POLLIN, 0};
    const int ready = wait(item);  // outside CHECK, which would catch what it throws
    CHECK(ready == 0);
    CHECK(item.revents == 0);
  } catch (const zmq::error_t& e) {
    threw = e.num() == EINTR;
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));  // the signal ended it
  done = true;
  signaller.join();
  sigaction(SIGUSR1, &before, nullptr);
  return threw;
}

TEST_CASE("transport::poll: a caught signal ends the wait with nothing ready, not an exception", "[transport]") {
  CHECK_FALSE(throws_when_signalled([](zmq::pollitem_t& item) { return poll({&item, 1}, std::chrono::seconds(10)); }));
  // What it guards against: zmq::poll throws there.
  CHECK(throws_when_signalled([](zmq::pollitem_t& item) { return zmq::poll(&item, 1, std::chrono::seconds(10)); }));
}

}  // namespace
}  // namespace palisade::transport
