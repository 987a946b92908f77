// The coordinator tests' harness (coordinator_test.cc, coordinator_scan_test.cc):
// a fake cluster of N replicas, each a real ReplicaHandler over a MemoryStore,
// behind a network the test controls (hold a message back, release it later,
// make a replica unreachable), and one manual clock for everybody.
#pragma once

#include <catch2/catch.hpp>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <variant>
#include "client/coordinator.h"
#include "client/coordinator_ops.h"
#include "base/hybrid_clock.h"
#include "auth/cluster_key.h"
#include "tests/support/sequencers.h"
#include "replica/handler.h"
#include "replica/memory_store.h"
#include "client/replica_connection.h"
#include "tests/support/replica_requests.h"
#include "wire/config_certificate.h"
#include "wire/replica_set.h"

namespace palisade {
namespace {

using client::Coordinator;
using client::CoordinatorOptions;
using client::FeedResult;
using client::OpId;
using client::Send;
using test::delete_req;
using test::fence_req;
using test::write_req;
using wire::ReplicaReply;
using wire::ReplicaRequest;
using wire::VersionState;

constexpr uint64_t kStartMs = 1'700'000'000'000;
constexpr uint64_t kTimeout = 2000;  // CoordinatorOptions defaults
// Not constexpr: clang 14 cannot build CoordinatorOptions' strings at compile time.
const uint64_t kLazySend = CoordinatorOptions{}.lazy_send_ms;  // commits and purges wait this long
constexpr uint64_t kHedge = 50;

// A timestamp `ms_offset` milliseconds from the start (negative: in the past).
inline FencedTimestamp ts(uint64_t token, int64_t ms_offset = 0, uint64_t logical = 0) {
  return {token, hlc::make(static_cast<uint64_t>(static_cast<int64_t>(kStartMs) + ms_offset), logical)};
}

inline ReplicaRequest committed(ReplicaRequest r) {
  std::get<wire::WriteRequest>(r.body).committed = true;
  return r;
}

template <class T>
bool is(const Send& s) {
  return std::holds_alternative<T>(s.request.body);
}

// A read reply's newest version and the floor it reports for `lock`.
inline std::optional<wire::Version> newest_version(const ReplicaReply& r) {
  if (r.versions.empty()) return std::nullopt;
  return r.versions.front();
}
inline uint64_t reported_floor(const ReplicaReply& r, const std::string& lock) {
  auto it = r.floors.find(lock);
  return it == r.floors.end() ? 0 : it->second;
}

struct FakeReplica {
  explicit FakeReplica(std::optional<replica::ReplicaAuth> auth = std::nullopt)
      : handler{store, clock, std::move(auth)} {}

  ManualClock physical{kStartMs};
  HybridClock clock{physical};
  replica::MemoryStore store;
  replica::ReplicaHandler handler{store, clock};

  ReplicaReply call(const ReplicaRequest& r) {
    auto replies = handler.handle_batch(std::span<const ReplicaRequest>(&r, 1));
    REQUIRE(replies.size() == 1);
    return replies[0];
  }
  // `config`: the replica set version the read names.
  std::optional<wire::Version> stored(const std::string& key, uint64_t config = 0) {
    ReplicaReply r = call({0, wire::ReadRequest{key}, "", config});
    REQUIRE(r.status.is_ok());
    return newest_version(r);
  }
  uint64_t floor(const std::string& lock) {
    return reported_floor(call({0, wire::ReadRequest{"no such key", lock}}), lock);
  }
};

using Filter = std::function<bool(const Send&)>;

inline Filter to(int replica) {
  return [replica](const Send& s) { return s.replica == replica; };
}

// N fake replicas and a coordinator, and the network between them. Every request
// the coordinator sends is delivered at once (its reply straight back) unless
// `hold` matches it (it then waits in `held` until released, or forever) or its
// replica is `unreachable` (the coordinator is told it could not be sent).
class Cluster {
 public:
  // With `auth`, every replica checks sequencers.
  explicit Cluster(CoordinatorOptions options = {}, std::optional<replica::ReplicaAuth> auth = std::nullopt)
      : options_(options) {
    REQUIRE(client::validate(options).is_ok());
    for (int i = 0; i < options.n; ++i) {
      if (auth) auth->replica_id = static_cast<uint64_t>(i) + 1;
      replicas_.push_back(std::make_unique<FakeReplica>(auth));
    }
    coord_ = std::make_unique<Coordinator>(options, clock_);
  }

  FakeReplica& replica(int i) { return *replicas_.at(i); }
  Coordinator& coord() { return *coord_; }
  uint64_t now() const { return now_; }
  uint64_t elapsed() const { return now_ - kStartMs; }

  // Puts state on a replica directly, around the coordinator.
  void seed(int i, const ReplicaRequest& r) { REQUIRE(replica(i).call(r).status.is_ok()); }
  void seed_all(const ReplicaRequest& r) {
    for (int i = 0; i < options_.n; ++i) seed(i, r);
  }

  OpId put(std::string key, std::string value, Fence fence) {
    return started(coord_->start_write(std::move(key), std::move(value), false, fence, now_));
  }
  OpId del(std::string key, Fence fence) { return started(coord_->start_write(std::move(key), "", true, fence, now_)); }
  OpId fence(Fence fence) { return started(coord_->start_fence(fence, now_)); }
  OpId get(std::string key, const Fence& fence = {}) {
    return started(coord_->start_read(std::move(key), now_, fence));
  }
  OpId scan(std::string prefix, std::string after = "", size_t limit = 1000) {
    return started(coord_->start_scan(std::move(prefix), std::move(after), limit, now_));
  }
  OpId feed(std::string prefix, std::vector<uint64_t> after) {
    return started(coord_->start_feed(std::move(prefix), std::move(after), now_));
  }
  OpId started_feed_waiting(std::string prefix, std::vector<uint64_t> after) {
    return started(coord_->start_feed(std::move(prefix), std::move(after), now_, true));
  }
  const Coordinator& coordinator() const { return *coord_; }

  // Moves every clock to `elapsed` ms after the start, ticks the coordinator and
  // delivers what it sends.
  void advance_to(uint64_t elapsed) {
    REQUIRE(kStartMs + elapsed >= now_);
    now_ = kStartMs + elapsed;
    physical_.set_ms(now_);
    for (auto& r : replicas_) r->physical.set_ms(now_);
    coord_->on_tick(now_);
    run();
  }

  // Delivers the held messages that `which` matches (all when null), in the order
  // they were sent, whatever `hold` says now.
  void release(const Filter& which = nullptr) {
    std::vector<Send> go, keep;
    for (Send& s : held) (!which || which(s) ? go : keep).push_back(std::move(s));
    held = std::move(keep);
    for (const Send& s : go) deliver(s);
    run();
  }

  // Delivers `s` again (a duplicate on the network): its reply goes to the coordinator.
  void redeliver(const Send& s) {
    deliver(s);
    run();
  }

  bool done(OpId op) const { return results_.count(op) > 0; }
  WriteResult write_result(OpId op) const {
    REQUIRE(done(op));
    const auto* w = std::get_if<WriteResult>(&results_.at(op));
    REQUIRE(w != nullptr);
    return *w;
  }
  ReadResult read_result(OpId op) const {
    REQUIRE(done(op));
    const auto* r = std::get_if<ReadResult>(&results_.at(op));
    REQUIRE(r != nullptr);
    return *r;
  }

  ScanResult scan_result(OpId op) const {
    REQUIRE(done(op));
    const auto* r = std::get_if<ScanResult>(&results_.at(op));
    REQUIRE(r != nullptr);
    return *r;
  }

  FeedResult feed_result(OpId op) const {
    REQUIRE(done(op));
    const auto* r = std::get_if<FeedResult>(&results_.at(op));
    REQUIRE(r != nullptr);
    return *r;
  }

  // Everything the coordinator sent, in order.
  const std::vector<Send>& log() const { return log_; }
  // The sends of one request type from log index `from` on.
  template <class T>
  std::vector<std::pair<int, T>> sent(size_t from = 0) const {
    std::vector<std::pair<int, T>> out;
    for (size_t i = from; i < log_.size(); ++i) {
      if (const T* body = std::get_if<T>(&log_[i].request.body)) out.emplace_back(log_[i].replica, *body);
    }
    return out;
  }
  template <class T>
  std::vector<int> sent_to(size_t from = 0) const {
    std::vector<int> out;
    for (const auto& [replica, body] : sent<T>(from)) out.push_back(replica);
    return out;
  }
  std::vector<client::Completion> completions;

  Filter hold;
  std::vector<Send> held;
  std::set<int> unreachable;
  std::set<int> older_than_carried_commits;  // refuse a write's `commits`, as such replicas do
  bool replicas_forget_dropped = false;  // replies without `dropped`, as before design change 16
  std::set<int> foreign;  // replicas of another cluster: they answer wrong_cluster, unapplied
  // Rewrites a replica's reply before the coordinator gets it (a buggy or
  // hostile replica); the request it answers is applied as sent.
  std::function<void(int replica, ReplicaReply&)> tamper;

 private:
  OpId started(OpId op) {
    run();
    return op;
  }

  void deliver(const Send& s) {
    if (unreachable.count(s.replica)) return coord_->on_unreachable(s.replica, s.request.id, now_);
    if (foreign.count(s.replica)) {
      return coord_->on_reply(s.replica, wire::error_reply(s.request.id, Status(Code::kWrongCluster, "elsewhere")),
                              now_);
    }
    const auto* write = std::get_if<wire::WriteRequest>(&s.request.body);
    if (write != nullptr && !write->commits.empty() && older_than_carried_commits.count(s.replica)) {
      ReplicaReply refused =
          wire::error_reply(s.request.id, Status(Code::kBadRequest, "write has unknown field 'commits'"));
      return coord_->on_reply(s.replica, refused, now_);
    }
    ReplicaReply reply = replica(s.replica).call(s.request);
    if (replicas_forget_dropped) reply.dropped.reset();
    if (tamper) tamper(s.replica, reply);
    coord_->on_reply(s.replica, reply, now_);
  }

  void run() {
    for (int steps = 0;; ++steps) {
      // A coordinator that keeps sending without time passing would spin its I/O thread.
      REQUIRE(steps < 10'000);
      for (Send& s : coord_->take_sends()) {
        log_.push_back(s);
        queue_.push_back(std::move(s));
      }
      if (queue_.empty()) break;
      Send s = std::move(queue_.front());
      queue_.pop_front();
      if (hold && hold(s)) {
        held.push_back(std::move(s));
      } else {
        deliver(s);
        REQUIRE(coord_->check_invariants() == "");
      }
    }
    for (client::Completion& c : coord_->take_completions()) {
      REQUIRE_FALSE(done(c.op));  // one completion per operation
      results_.emplace(c.op, c.result);
      completions.push_back(std::move(c));
    }
  }

  CoordinatorOptions options_;
  uint64_t now_ = kStartMs;
  ManualClock physical_{kStartMs};
  HybridClock clock_{physical_};
  std::vector<std::unique_ptr<FakeReplica>> replicas_;
  std::unique_ptr<Coordinator> coord_;
  std::deque<Send> queue_;
  std::vector<Send> log_;
  std::map<OpId, client::OpResult> results_;
};

const Fence kFence3{"L", 3};

}  // namespace
}  // namespace palisade
