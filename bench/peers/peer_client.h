// What palisade-peer-bench asks of every system it measures (palisade, etcd,
// ZooKeeper, Redis): the four operations of the workloads, each done the way
// that system's users do it, by one client of its own per load thread. One
// small file per system implements it, so the workloads (workloads.cc), the
// timing and the CPU accounting are the same code for all of them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "palisade/status.h"

namespace palisade::bench::peers {

// How long a lock cycle waits for a lock another client holds.
constexpr std::chrono::seconds kLockWait{10};
// The lease (TTL) a lock is taken with where the recipe needs one.
constexpr std::chrono::seconds kLockLease{30};

// One client: its own connection and session, used by one thread only.
class PeerClient {
 public:
  virtual ~PeerClient() = default;
  // Acquires `lock` with the system's lock recipe, waiting up to kLockWait
  // while another client holds it, then releases it.
  virtual Status lock_cycle(const std::string& lock) = 0;
  // A durable write of a key not written before: ok once the system says it is stored.
  virtual Status put(const std::string& key, const std::string& value) = 0;
  // A read of a key that exists; an error when it is not found.
  virtual Status get(const std::string& key) = 0;
};

// A running system under test.
class PeerSystem {
 public:
  virtual ~PeerSystem() = default;
  // How it runs, for the report: "3 palisade-lockd + 3 palisade-replica (N=3, W=2, R=2)".
  virtual std::string topology() const = 0;
  // Client `index` (0, 1, ...), connected and ready; throws when it cannot be.
  virtual std::unique_ptr<PeerClient> connect(int index) = 0;
  // The server processes this program started itself (palisade); the peers'
  // come from --server-pids.
  virtual std::vector<pid_t> own_server_pids() const { return {}; }
};

}  // namespace palisade::bench::peers
