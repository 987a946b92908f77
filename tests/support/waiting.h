// What tests of real processes share: waiting for a condition with a
// deadline (never a sleep-and-hope), and reading what a process wrote.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace palisade::test {

// Polls `done` every 20 ms until it holds; fails the test after `timeout`.
template <typename Done>
void wait_until(const std::string& what, Done done, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    INFO("waiting for " << what);
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The whole file, empty when it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace palisade::test
