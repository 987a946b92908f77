#include "tests/support/replica_process.h"

#include <chrono>
#include <stdexcept>

#include "tests/support/replica_connection.h"

namespace palisade::test {

std::string replica_binary() { return PALISADE_REPLICA_BIN; }

ReplicaProcess::ReplicaProcess(std::string data_dir, std::vector<std::string> extra_args)
    : data_dir_(std::move(data_dir)),
      extra_args_(std::move(extra_args)),
      endpoint_("tcp://127.0.0.1:" + std::to_string(free_port())) {
  start();
}

void ReplicaProcess::start() {
  std::vector<std::string> argv = {PALISADE_REPLICA_BIN, "--data-dir", data_dir_, "--listen", endpoint_};
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  process_ = std::make_unique<Process>(argv, data_dir_ + ".log");
  wait_ready();
}

void ReplicaProcess::restart() {
  if (process_->running()) process_->kill();
  start();
}

void ReplicaProcess::wait_ready(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  ReplicaConnection conn(endpoint_);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_->running()) throw std::runtime_error("palisade-replica exited:\n" + process_->log());
    if (conn.call(ping_req(), 200).is_ok()) return;
  }
  throw std::runtime_error("palisade-replica did not answer within " + std::to_string(timeout_ms) + " ms:\n" +
                           process_->log());
}

}  // namespace palisade::test
