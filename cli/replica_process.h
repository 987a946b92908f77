// A real palisade-replica process on a free loopback port: for the local
// cluster, the demo, benchmarks and integration tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/process.h"

namespace palisade::cli {

// The palisade-replica binary beside the running program (same directory, or
// ../replica/ in a build tree), else "palisade-replica" from PATH.
std::string sibling_replica_binary();

class ReplicaProcess {
 public:
  // Starts `binary` on `data_dir` and `endpoint` (empty: a free loopback
  // port) and waits until it answers a ping; throws std::runtime_error (with
  // the daemon's log) when it does not.
  ReplicaProcess(std::string binary, std::string data_dir, std::vector<std::string> extra_args = {},
                 std::string endpoint = "");

  const std::string& endpoint() const { return endpoint_; }
  const std::string& data_dir() const { return data_dir_; }
  Process& process() { return *process_; }

  // Starts it again on the same data dir and port after it stopped or was killed.
  void restart();
  // Waits until a ping is answered; throws after `timeout_ms`.
  void wait_ready(int timeout_ms = 10000);

 private:
  void start();

  std::string binary_;
  std::string data_dir_;
  std::vector<std::string> extra_args_;
  std::string endpoint_;
  std::unique_ptr<Process> process_;
};

}  // namespace palisade::cli
