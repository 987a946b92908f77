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
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/periodic_thread.h"
#include "palisade/credentials.h"

namespace zmq {
class context_t;
}

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
  ~ConfigRefresh();  // where zmq::context_t is complete

  // Whether the set the replica keeps is paused (its config observer tells it).
  void set_paused(bool paused) { paused_ = paused; }

 private:
  void ask();

  const ConfigRefreshOptions options_;
  const std::function<void(std::string)> offer_;
  std::atomic<bool> paused_{false};
  std::unique_ptr<zmq::context_t> ctx_;
  PeriodicThread timer_;  // last: stops first
};

}  // namespace palisade::replica
