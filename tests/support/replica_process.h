// A real palisade-replica process on a free loopback port, for integration tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace palisade::test {

// Path of the palisade-replica binary under test, for starting it by hand
// (bad flags, a second daemon on a data dir in use).
std::string replica_binary();

class ReplicaProcess {
 public:
  // Starts the daemon on `data_dir` and waits until it answers a ping.
  ReplicaProcess(std::string data_dir, std::vector<std::string> extra_args = {});

  const std::string& endpoint() const { return endpoint_; }
  const std::string& data_dir() const { return data_dir_; }
  Process& process() { return *process_; }

  // Starts it again on the same data dir and port after it stopped or was killed.
  void restart();
  // Waits until a ping is answered; throws after `timeout_ms`.
  void wait_ready(int timeout_ms = 10000);

 private:
  void start();

  std::string data_dir_;
  std::vector<std::string> extra_args_;
  std::string endpoint_;
  std::unique_ptr<Process> process_;
};

}  // namespace palisade::test
