// Redis as palisade-peer-bench measures it: one redis-server (Redis has no
// replicated durable mode to compare with; the report says so), one hiredis
// connection per client. The lock is the single-instance recipe of the Redis
// documentation: SET lock token NX PX ttl, retried every kRetry while another
// client holds it, and released by a Lua script that deletes the key only if it
// still holds this client's token (loaded once, called with EVALSHA).
#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "bench/peers/endpoint.h"
#include "bench/peers/systems.h"

namespace palisade::bench::peers {
namespace {

using namespace std::chrono_literals;

// How often a waiting client retries SET NX (Redis has no lock queue to wait in).
constexpr auto kRetry = 1ms;
constexpr auto kTimeout = 5s;
constexpr const char* kCompareAndDelete =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

class RedisClient : public PeerClient {
 public:
  RedisClient(const std::string& endpoint, int index) : token_("client-" + std::to_string(index)) {
    auto [host, port] = split_host_port(endpoint);
    const timeval tv{std::chrono::duration_cast<std::chrono::seconds>(kTimeout).count(), 0};
    ctx_ = redisConnectWithTimeout(host.c_str(), port, tv);
    if (ctx_ == nullptr || ctx_->err != 0) {
      std::string why = ctx_ != nullptr ? ctx_->errstr : "out of memory";
      if (ctx_ != nullptr) redisFree(ctx_);
      throw std::runtime_error("cannot connect to Redis at " + endpoint + ": " + why);
    }
    redisSetTimeout(ctx_, tv);
    Reply sha = command("SCRIPT LOAD %s", kCompareAndDelete);
    if (!sha || sha->type != REDIS_REPLY_STRING) {
      redisFree(ctx_);
      throw std::runtime_error("SCRIPT LOAD: " + describe(sha.get()));
    }
    release_sha_ = sha->str;
  }
  ~RedisClient() override { redisFree(ctx_); }
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  Status lock_cycle(const std::string& lock) override {
    const long long ttl_ms = std::chrono::milliseconds(kLockLease).count();
    for (auto deadline = std::chrono::steady_clock::now() + kLockWait;;) {
      Reply set = command("SET %b %b NX PX %lld", lock.data(), lock.size(), token_.data(), token_.size(), ttl_ms);
      if (set && set->type == REDIS_REPLY_STATUS) break;  // +OK: ours
      if (!set || set->type != REDIS_REPLY_NIL) return error("SET NX", set.get());
      if (std::chrono::steady_clock::now() >= deadline) return Status(Code::kTimeout, "lock still held: " + lock);
      std::this_thread::sleep_for(kRetry);
    }
    Reply del = command("EVALSHA %s 1 %b %b", release_sha_.c_str(), lock.data(), lock.size(), token_.data(),
                        token_.size());
    if (!del || del->type != REDIS_REPLY_INTEGER || del->integer != 1) return error("release", del.get());
    return Status::ok();
  }

  Status put(const std::string& key, const std::string& value) override {
    Reply r = command("SET %b %b", key.data(), key.size(), value.data(), value.size());
    return r && r->type == REDIS_REPLY_STATUS ? Status::ok() : error("SET", r.get());
  }

  Status get(const std::string& key) override {
    Reply r = command("GET %b", key.data(), key.size());
    return r && r->type == REDIS_REPLY_STRING ? Status::ok() : error("GET " + key, r.get());
  }

 private:
  template <class... Args>
  Reply command(const char* format, Args... args) {
    return Reply(static_cast<redisReply*>(redisCommand(ctx_, format, args...)));
  }
  std::string describe(const redisReply* r) const {
    if (r == nullptr) return ctx_->errstr;
    if (r->type == REDIS_REPLY_ERROR) return r->str;
    return "unexpected reply type " + std::to_string(r->type);
  }
  Status error(const std::string& what, const redisReply* r) const {
    return Status(r == nullptr ? Code::kUnavailable : Code::kInternal, what + ": " + describe(r));
  }

  redisContext* ctx_ = nullptr;
  std::string token_;  // this client's lock value; a client holds one lock at a time
  std::string release_sha_;
};

class RedisSystem : public PeerSystem {
 public:
  explicit RedisSystem(std::string endpoint) : endpoint_(std::move(endpoint)) {}
  std::string topology() const override { return "1 redis-server (Redis is not replicated here)"; }
  std::unique_ptr<PeerClient> connect(int index) override { return std::make_unique<RedisClient>(endpoint_, index); }

 private:
  std::string endpoint_;
};

}  // namespace

std::unique_ptr<PeerSystem> make_redis(const std::vector<std::string>& endpoints) {
  if (endpoints.size() != 1) throw std::invalid_argument("Redis runs as one node: give one endpoint");
  return std::make_unique<RedisSystem>(endpoints[0]);
}

}  // namespace palisade::bench::peers
