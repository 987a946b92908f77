#include "cli/replica_process.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>

#include "client/replica_connection.h"

namespace palisade::cli {

std::string sibling_replica_binary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto candidate : {self.parent_path() / "palisade-replica", self.parent_path() / "../replica/palisade-replica"}) {
      if (access(candidate.c_str(), X_OK) == 0) return std::filesystem::weakly_canonical(candidate).string();
    }
  }
  return "palisade-replica";
}

ReplicaProcess::ReplicaProcess(std::string binary, std::string data_dir, std::vector<std::string> extra_args,
                               std::string endpoint)
    : binary_(std::move(binary)),
      data_dir_(std::move(data_dir)),
      extra_args_(std::move(extra_args)),
      endpoint_(endpoint.empty() ? "tcp://127.0.0.1:" + std::to_string(free_port()) : std::move(endpoint)) {
  start();
}

void ReplicaProcess::start() {
  std::vector<std::string> argv = {binary_, "--data-dir", data_dir_, "--listen", endpoint_};
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  // Given no key pair (--key: a cluster file with identities), it runs on
  // loopback for a test or a bench: plaintext, said explicitly.
  const bool secure_or_said = std::any_of(extra_args_.begin(), extra_args_.end(), [](const std::string& a) {
    for (std::string_view flag : {"--key", "--insecure", "--config"}) {
      if (a == flag || a.starts_with(std::string(flag) + "=")) return true;
    }
    return false;
  });
  if (!secure_or_said) argv.push_back("--insecure");
  process_ = std::make_unique<Process>(argv, data_dir_ + ".log");
  wait_ready();
}

void ReplicaProcess::restart() {
  if (process_->running()) process_->kill();
  start();
}

void ReplicaProcess::wait_ready(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  client::ReplicaConnection conn(endpoint_);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_->running()) throw std::runtime_error("palisade-replica exited:\n" + process_->log());
    if (conn.call({0, wire::PingRequest{}}, 200).is_ok()) return;
  }
  throw std::runtime_error("palisade-replica did not answer within " + std::to_string(timeout_ms) + " ms:\n" +
                           process_->log());
}

}  // namespace palisade::cli
