// A paused replica asks the lock group for the replica set's record
// (docs/design.md "The replica set", "Liveness"): a replacement that stops
// between its pause and its commit leaves the replicas paused, and only the
// lock group's master, which ends such a pause, knows the set that follows.
// While the set this replica keeps is paused, a thread of its own asks each
// lockd node the cluster file lists for get_replicas now and then, and offers
// what they serve to the replica, which keeps a certificate only when it
// verifies and is newer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "palisade/credentials.h"

namespace palisade::replica {

struct ConfigRefreshOptions {
  std::vector<std::string> lockd;  // the lock group's endpoints
  std::string cluster_id;  // raw bytes (base/cluster_id.h), named by each request; empty: none
  std::optional<Credentials> credentials;  // CurveZMQ; nullopt: plaintext
  std::chrono::milliseconds interval{1000};
};

class ConfigRefresh {
 public:
  // `offer` runs on the refresher's thread (ReplicaServer::offer_config).
  ConfigRefresh(ConfigRefreshOptions options, std::function<void(std::string)> offer);
  ~ConfigRefresh();
  ConfigRefresh(const ConfigRefresh&) = delete;
  ConfigRefresh& operator=(const ConfigRefresh&) = delete;

  // Whether the set the replica keeps is paused (its config observer tells it).
  void set_paused(bool paused) { paused_ = paused; }

 private:
  void run();

  const ConfigRefreshOptions options_;
  const std::function<void(std::string)> offer_;
  std::atomic<bool> paused_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace palisade::replica
