// palisade as palisade-peer-bench measures it: a cli::LocalCluster of 3
// palisade-lockd and 3 palisade-replica (replicas verify every sequencer),
// used through the public client API only, with CurveZMQ on every link (the
// clients connect as the cluster's admin) or plaintext links. A client is one LockClient (its
// own session) and one QuorumStore (N=3, W=2, R=2): a lock cycle is acquire +
// release; a put is a fenced write under a lease the client took once, the
// way a lock holder writes; a get is a quorum read.
#include <atomic>
#include <stdexcept>
#include <string>
#include <utility>

#include "bench/peers/systems.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "cli/local_cluster.h"

namespace palisade::bench::peers {
namespace {

constexpr int kLockd = 3;
constexpr int kReplicas = 3;

class PalisadeClient : public PeerClient {
 public:
  PalisadeClient(std::unique_ptr<QuorumStore> store, std::unique_ptr<LockClient> locks, std::string writer_lock)
      : store_(std::move(store)), locks_(std::move(locks)), writer_lock_(std::move(writer_lock)) {}

  Status lock_cycle(const std::string& lock) override {
    Result<Lease> lease = locks_->acquire(lock, {.wait = kLockWait});
    return lease.is_ok() ? locks_->release(lease.value()) : lease.status();
  }

  Status put(const std::string& key, const std::string& value) override {
    if (!writer_.valid()) {  // the first put (the untimed warm-up) takes the lease and fences it
      Result<Lease> lease = locks_->acquire(writer_lock_, {.wait = kLockWait});
      if (!lease.is_ok()) return lease.status();
      writer_ = std::move(lease).value();
      WriteResult fenced = store_->fence({writer_.name(), writer_.token(), writer_.sequencer()});
      if (!fenced.status.is_ok()) return fenced.status;
    }
    return store_->put(key, value, writer_).status;
  }

  Status get(const std::string& key) override {
    ReadResult read = store_->get(key);
    if (read.status.is_ok() && !read.found) return Status(Code::kInternal, "key not found: " + key);
    return read.status;
  }

 private:
  std::unique_ptr<QuorumStore> store_;
  std::unique_ptr<LockClient> locks_;
  std::string writer_lock_;
  Lease writer_;
};

class PalisadeSystem : public PeerSystem {
 public:
  explicit PalisadeSystem(std::unique_ptr<cli::LocalCluster> cluster) : cluster_(std::move(cluster)) {}

  std::string topology() const override {
    return std::to_string(kLockd) + " palisade-lockd + " + std::to_string(kReplicas) +
           " palisade-replica (N=3, W=2, R=2), " + (cluster_->credentials() ? "CURVE" : "plaintext") + " links";
  }

  std::unique_ptr<PeerClient> connect(int index) override {
    QuorumStoreOptions so;
    so.replicas = cluster_->replica_endpoints();
    so.read_quorum = 2;
    so.write_quorum = 2;
    so.credentials = cluster_->credentials();  // nullopt on plaintext links
    auto store = QuorumStore::open(so);
    if (!store.is_ok()) throw std::runtime_error("QuorumStore::open: " + store.status().to_string());
    LockClientOptions lo;  // no store: a lock cycle is the lock service alone, as for the peers
    lo.nodes = cluster_->lockd_endpoints();
    lo.credentials = cluster_->credentials();
    auto locks = LockClient::connect(lo);
    if (!locks.is_ok()) throw std::runtime_error("LockClient::connect: " + locks.status().to_string());
    // Sessions of earlier levels may still be closing: every client writes under a lock of its own.
    std::string writer_lock = "writer-" + std::to_string(next_writer_++) + "-" + std::to_string(index);
    return std::make_unique<PalisadeClient>(std::move(store).value(), std::move(locks).value(), std::move(writer_lock));
  }

  std::vector<pid_t> own_server_pids() const override {
    std::vector<pid_t> pids;
    for (uint32_t id : cluster_->lockd_ids()) pids.push_back(cluster_->lockd(id).pid());
    for (size_t i = 0; i < cluster_->replica_count(); ++i) pids.push_back(cluster_->replica(i).pid());
    return pids;
  }

 private:
  std::unique_ptr<cli::LocalCluster> cluster_;
  std::atomic<uint64_t> next_writer_{0};
};

}  // namespace

std::unique_ptr<PeerSystem> make_palisade(const PalisadeOptions& options) {
  cli::LocalClusterOptions o;
  o.dir = options.dir;
  o.lockd = kLockd;
  o.replicas = kReplicas;
  o.lockd_binary = options.lockd_binary;
  o.replica_binary = options.replica_binary;
  o.log_level = "warn";
  o.secure = options.curve;
  auto cluster = cli::LocalCluster::start(std::move(o));
  if (!cluster.is_ok()) throw std::runtime_error("cannot start the palisade cluster: " + cluster.status().to_string());
  return std::make_unique<PalisadeSystem>(std::move(cluster).value());
}

}  // namespace palisade::bench::peers
