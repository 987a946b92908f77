// ZooKeeper as palisade-peer-bench measures it: a 3-server ensemble, one
// libzookeeper-mt session per client (the library spreads sessions over the
// servers). The lock is the recipe of the ZooKeeper documentation, without herd
// effect: create an EPHEMERAL_SEQUENTIAL child of the lock's znode, list the
// children; the lowest holds the lock, any other watches the child just before
// its own and lists again once that one is gone; release deletes the child.
// Puts create persistent znodes (every write is synced to disk by a quorum);
// gets read one, from the server the session is on.
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/peers/systems.h"

namespace palisade::bench::peers {
namespace {

using namespace std::chrono_literals;

constexpr int kSessionTimeoutMs = 30000;
constexpr auto kConnectTimeout = 10s;
constexpr const char* kLocks = "/locks";
constexpr const char* kKeys = "/kv";

Status zk_error(const std::string& what, int rc) {
  return Status(rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ? Code::kUnavailable : Code::kInternal,
                what + ": " + zerror(rc));
}

class ZooKeeperClient : public PeerClient {
 public:
  explicit ZooKeeperClient(const std::string& hosts) {
    zh_ = zookeeper_init(hosts.c_str(), &ZooKeeperClient::on_event, kSessionTimeoutMs, nullptr, this, 0);
    if (zh_ == nullptr) throw std::runtime_error("zookeeper_init failed for " + hosts);
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, kConnectTimeout, [&] { return connected_; })) {
      lock.unlock();
      zookeeper_close(zh_);
      throw std::runtime_error("no ZooKeeper session with " + hosts + " within 10 s");
    }
  }
  ~ZooKeeperClient() override { zookeeper_close(zh_); }  // ends the session: its ephemeral znodes go
  ZooKeeperClient(const ZooKeeperClient&) = delete;
  ZooKeeperClient& operator=(const ZooKeeperClient&) = delete;

  Status lock_cycle(const std::string& lock) override {
    const std::string parent = std::string(kLocks) + "/" + lock;
    if (Status s = ensure(parent); !s.is_ok()) return s;
    char created[512];
    int rc = zoo_create(zh_, (parent + "/lock-").c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                        created, sizeof created);
    if (rc != ZOK) return zk_error("create " + parent + "/lock-", rc);
    const std::string mine = std::string(created).substr(parent.size() + 1);
    Status held = wait_until_lowest(parent, mine);
    rc = zoo_delete(zh_, created, -1);
    if (!held.is_ok()) return held;
    return rc == ZOK ? Status::ok() : zk_error(std::string("delete ") + created, rc);
  }

  Status put(const std::string& key, const std::string& value) override {
    const std::string path = std::string(kKeys) + "/" + key;
    if (Status s = ensure(kKeys); !s.is_ok()) return s;
    int rc = zoo_create(zh_, path.c_str(), value.data(), static_cast<int>(value.size()), &ZOO_OPEN_ACL_UNSAFE,
                        ZOO_PERSISTENT, nullptr, 0);
    return rc == ZOK ? Status::ok() : zk_error("create " + path, rc);
  }

  Status get(const std::string& key) override {
    const std::string path = std::string(kKeys) + "/" + key;
    char buffer[1024];
    int len = sizeof buffer;
    int rc = zoo_get(zh_, path.c_str(), 0, buffer, &len, nullptr);
    return rc == ZOK ? Status::ok() : zk_error("get " + path, rc);
  }

 private:
  // The recipe's loop: ok once `mine` is the lowest child of `parent`.
  Status wait_until_lowest(const std::string& parent, const std::string& mine) {
    const auto deadline = std::chrono::steady_clock::now() + kLockWait;
    for (;;) {
      String_vector children{};
      int rc = zoo_get_children(zh_, parent.c_str(), 0, &children);
      if (rc != ZOK) return zk_error("get_children " + parent, rc);
      std::vector<std::string> names(children.data, children.data + children.count);
      deallocate_String_vector(&children);
      std::sort(names.begin(), names.end());
      auto it = std::lower_bound(names.begin(), names.end(), mine);
      if (it == names.begin()) return Status::ok();
      const std::string before = parent + "/" + *(it - 1);
      uint64_t seen = watch_events();
      rc = zoo_wexists(zh_, before.c_str(), &ZooKeeperClient::on_event, this, nullptr);
      if (rc == ZNONODE) continue;  // gone already: list again
      if (rc != ZOK) return zk_error("exists " + before, rc);
      std::unique_lock lock(mu_);
      if (!cv_.wait_until(lock, deadline, [&] { return watch_events_ != seen; })) {
        return Status(Code::kTimeout, "lock still held: " + parent);
      }
    }
  }

  // Creates the persistent znode `path` once per client (untimed: the warm-up does it).
  Status ensure(const std::string& path) {
    if (!ensured_.insert(path).second) return Status::ok();
    for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
      const std::string prefix = path.substr(0, slash);
      int rc = zoo_create(zh_, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, nullptr, 0);
      if (rc != ZOK && rc != ZNODEEXISTS) return zk_error("create " + prefix, rc);
      if (slash == std::string::npos) return Status::ok();
    }
  }

  uint64_t watch_events() {
    std::lock_guard lock(mu_);
    return watch_events_;
  }

  // The session's events and the predecessor watches, on the library's completion thread.
  static void on_event(zhandle_t*, int type, int state, const char*, void* context) {
    auto* self = static_cast<ZooKeeperClient*>(context);
    std::lock_guard lock(self->mu_);
    if (type == ZOO_SESSION_EVENT) {
      self->connected_ = state == ZOO_CONNECTED_STATE;
    } else {
      ++self->watch_events_;
    }
    self->cv_.notify_all();
  }

  zhandle_t* zh_ = nullptr;
  std::set<std::string> ensured_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool connected_ = false;     // guarded by mu_
  uint64_t watch_events_ = 0;  // guarded by mu_
};

class ZooKeeperSystem : public PeerSystem {
 public:
  explicit ZooKeeperSystem(const std::vector<std::string>& endpoints) : count_(endpoints.size()) {
    for (const auto& e : endpoints) hosts_ += (hosts_.empty() ? "" : ",") + e;
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  }
  std::string topology() const override {
    return std::to_string(count_) + "-server ZooKeeper ensemble, sessions spread over the servers";
  }
  std::unique_ptr<PeerClient> connect(int) override { return std::make_unique<ZooKeeperClient>(hosts_); }

 private:
  size_t count_;
  std::string hosts_;
};

}  // namespace

std::unique_ptr<PeerSystem> make_zookeeper(const std::vector<std::string>& endpoints) {
  if (endpoints.empty()) throw std::invalid_argument("give the ZooKeeper servers' client endpoints");
  return std::make_unique<ZooKeeperSystem>(endpoints);
}

}  // namespace palisade::bench::peers
