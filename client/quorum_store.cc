#include "palisade/quorum_store.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <variant>

#include "client/coordinator.h"
#include "client/outcome_counter.h"
#include "client/lane.h"
#include "client/replica_view.h"
#include "client/zmq_links.h"
#include "client/send_sweeper.h"
#include "client/shared_context.h"
#include "transport/lockd_call.h"
#include "transport/transport.h"
#include "base/cluster_id.h"
#include "base/physical_clock.h"
#include "wire/sequencer.h"

namespace palisade {
namespace {

uint64_t steady_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

wire::Limits limits_of(const QuorumStoreOptions& o) {
  wire::Limits limits;
  limits.max_key_bytes = o.max_key_bytes;
  limits.max_value_bytes = o.max_value_bytes;
  return limits;
}

Status check_sizes(const wire::Limits& limits, std::string_view key, std::string_view value, const Fence& fence) {
  if (key.size() > limits.max_key_bytes) {
    return Status(Code::kTooLarge, "key of " + std::to_string(key.size()) + " bytes (limit " +
                                       std::to_string(limits.max_key_bytes) + ")");
  }
  if (value.size() > limits.max_value_bytes) {
    return Status(Code::kTooLarge, "value of " + std::to_string(value.size()) + " bytes (limit " +
                                       std::to_string(limits.max_value_bytes) + ")");
  }
  if (fence.lock.size() > limits.max_lock_bytes) return Status(Code::kTooLarge, "lock name too long");
  if (fence.sequencer.size() > wire::Limits::kMaxSequencerBytes) {
    return Status(Code::kTooLarge, "sequencer of " + std::to_string(fence.sequencer.size()) + " bytes (limit " +
                                       std::to_string(wire::Limits::kMaxSequencerBytes) + ")");
  }
  return Status::ok();
}

}  // namespace

// A store's asynchronous calls still running on its engine: closing the store
// waits for them, as when every store had an engine of its own.
struct QuorumStore::Calls {
  // How its calls ended, by Submission::Kind (kWrite, kDelete, kFence, kRead, kScan).
  std::array<client::OutcomeCounter, 5> outcomes;

  std::mutex mu;
  std::condition_variable none_left;
  size_t running = 0;  // guarded by mu

  void begin() {
    std::lock_guard lock(mu);
    ++running;
  }
  void end() {
    std::lock_guard lock(mu);
    if (--running == 0) none_left.notify_all();
  }
  void wait_for_none() {
    std::unique_lock lock(mu);
    none_left.wait(lock, [&] { return running == 0; });
  }
};

namespace {

struct Submission {
  // kFlush: send the held-back requests now (a store closes).
  // kFeed: a watcher's read of the change feeds (QuorumStore::read_feeds).
  enum class Kind { kWrite, kDelete, kFence, kRead, kScan, kFlush, kFeed } kind;
  std::string key;  // a scan's prefix
  std::string value;  // a scan's `after`
  Fence fence;
  std::promise<WriteResult> write_done;
  std::promise<ReadResult> read_done;
  std::promise<ScanResult> scan_done{};
  std::promise<client::FeedResult> feed_done{};
  std::vector<uint64_t> after{};  // a feed read's positions
  bool wait_for_all = false;  // a feed read's
  size_t limit = 0;  // a scan's
  std::shared_ptr<QuorumStore::Calls> calls{};  // of an asynchronous call: its store's
  bool resent = false;  // started again on a newer replica set

  // Answers the call (a kRead with `read`, a kScan with `scan`, the others with `write`).
  void finish(client::OpResult result) {
    if (auto* w = std::get_if<WriteResult>(&result); w != nullptr && resent) {
      *w = client::answer_of_resent_write(std::move(*w));
    }
    const Code code = std::visit([](const auto& r) { return r.status.code(); }, result);
    if (auto* w = std::get_if<WriteResult>(&result)) write_done.set_value(std::move(*w));
    if (auto* r = std::get_if<ReadResult>(&result)) read_done.set_value(std::move(*r));
    if (auto* r = std::get_if<ScanResult>(&result)) scan_done.set_value(std::move(*r));
    if (auto* r = std::get_if<client::FeedResult>(&result)) feed_done.set_value(std::move(*r));
    if (calls) {
      count(*calls, kind, code);
      calls->end();
    }
  }

  static void count(QuorumStore::Calls& calls, Kind kind, Code code) {
    if (kind != Kind::kFlush && kind != Kind::kFeed) calls.outcomes[static_cast<size_t>(kind)].add(code);
  }
};

// The answer of a call of `kind` refused before it started.
client::OpResult refusal(Submission::Kind kind, Status why) {
  if (kind == Submission::Kind::kRead) return ReadResult{std::move(why), false, {}, {}, {}};
  if (kind == Submission::Kind::kScan) return ScanResult{std::move(why), {}, {}};
  if (kind == Submission::Kind::kFeed) return client::FeedResult{std::move(why)};
  return WriteResult{std::move(why), {}, 0};
}

// A blocking call's result, counted.
template <class Result>
Result counted(QuorumStore::Calls& calls, Submission::Kind kind, Result result) {
  Submission::count(calls, kind, result.status.code());
  return result;
}

// Starts the operation `s` asks for (not a kFlush) on `coordinator`.
client::OpId start_on(client::Coordinator& coordinator, const Submission& s, uint64_t now) {
  switch (s.kind) {
    case Submission::Kind::kWrite: return coordinator.start_write(s.key, s.value, false, s.fence, now);
    case Submission::Kind::kDelete: return coordinator.start_write(s.key, "", true, s.fence, now);
    case Submission::Kind::kFence: return coordinator.start_fence(s.fence, now);
    case Submission::Kind::kRead:
      return coordinator.start_read(s.key, now, s.fence);
    case Submission::Kind::kScan:
      return coordinator.start_scan(s.key, s.value, s.limit, now);
    case Submission::Kind::kFeed:
      return coordinator.start_feed(s.key, s.after, now, s.wait_for_all);
    case Submission::Kind::kFlush: break;
  }
  throw std::logic_error("a flush is not an operation");
}

// A lane and its links to one replica set.
struct Wiring {
  Wiring(zmq::context_t& ctx, const client::ReplicaView& view, const client::CoordinatorOptions& options,
         HybridClock& clock, wire::Limits limits)
      : version(view.version),
        links(ctx, view.endpoints, view.credentials),
        lane(links, view.endpoints, for_view(options, view), clock, limits) {}

  static client::CoordinatorOptions for_view(client::CoordinatorOptions o, const client::ReplicaView& view) {
    o.n = static_cast<int>(view.endpoints.size());
    o.r = view.read_quorum;
    o.w = view.write_quorum;
    o.config = view.version;
    o.config_certificate = view.certificate;
    o.paused = view.paused;
    return o;
  }

  uint64_t version;
  client::ZmqLinks links;
  client::Lane lane;
};

}  // namespace

// Concurrency: callers enqueue Submissions under `mu` and poke `wake_fd`; the I/O
// thread alone drives `background` and touches `waiting`. A blocking call drives
// `direct` on its own thread while it holds `direct_mu` (or, when another
// caller holds it, goes through the I/O thread). The commits a direct write
// leaves held back go out with the next direct call, or from the process's
// SendSweeper once `direct_due_ms` has passed with no call.
//
// Both lanes hand the config certificates replicas return to learn(), which
// keeps the newest replica set that checks out in `view`; each lane moves to
// it, with the operations it runs, where its driver can (rewire()).
struct QuorumStore::Impl {
  QuorumStoreOptions options;
  client::CoordinatorOptions coordinator_options;
  wire::Limits limits;
  SystemClock wall_clock;
  HybridClock clock;
  std::shared_ptr<zmq::context_t> context = client::shared_context();
  zmq::context_t& ctx = *context;
  client::SignatureCheck check_signature;

  std::mutex view_mu;
  client::ReplicaView view;  // guarded by view_mu
  std::atomic<uint64_t> view_version{0};

  std::unique_ptr<Wiring> background;  // the I/O thread's
  std::mutex direct_mu;
  std::unique_ptr<Wiring> direct;  // guarded by direct_mu
  // When the direct lane's held-back sends are due; 0: none, or a caller drives it.
  // Written under direct_mu.
  std::atomic<uint64_t> direct_due_ms{0};
  std::shared_ptr<client::SendSweeper> sweeper = client::shared_sweeper();
  uint64_t sweep_id = 0;
  int wake_fd = -1;

  std::mutex mu;
  std::deque<Submission> queue;  // guarded by mu
  bool stopping = false;         // guarded by mu

  std::map<client::OpId, Submission> waiting;
  std::vector<Submission> flushes;  // answered once the held-back requests are sent
  std::thread io;

  // `start`: the set it sends to first (first_view, or a newer one the lock group records).
  Impl(QuorumStoreOptions o, client::CoordinatorOptions co, client::ReplicaView start)
      : options(std::move(o)),
        coordinator_options(std::move(co)),
        limits(limits_of(options)),
        clock(wall_clock, {.max_clock_offset_ms = options.max_clock_offset_ms}),
        view(std::move(start)),
        view_version(view.version),
        background(std::make_unique<Wiring>(ctx, view, coordinator_options, clock, limits)),
        direct(std::make_unique<Wiring>(ctx, view, coordinator_options, clock, limits)) {
    if (options.config_check) check_signature = options.config_check->signature_verifies;
    wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    // Nothing may throw once the I/O thread runs: a joinable thread left by a
    // failed constructor would end the process.
    try {
      sweep_id = sweeper->add([this](uint64_t now) {
        flush_direct(now);
        return direct_due_ms != 0;
      });
      io = std::thread([this] { run(); });
    } catch (...) {
      if (sweep_id != 0) sweeper->remove(sweep_id);
      close(wake_fd);
      throw;
    }
  }

  ~Impl() {
    sweeper->remove(sweep_id);
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    wake();
    io.join();
    close(wake_fd);
  }

  void wake() {
    uint64_t one = 1;
    (void)!write(wake_fd, &one, sizeof one);
  }

  void submit(Submission s) {
    std::unique_lock lock(mu);
    if (!stopping) {
      // The I/O thread takes the whole queue after each wake-up, so only the
      // submission that finds it empty needs to wake it (one write(2), and one
      // wake-up of the I/O thread, per batch rather than per operation).
      bool was_empty = queue.empty();
      queue.push_back(std::move(s));
      lock.unlock();
      if (was_empty) wake();
      return;
    }
    lock.unlock();
    s.finish(refusal(s.kind, Status(Code::kUnavailable, "the store is closed")));
  }

  // An asynchronous call of the store whose calls are `calls`.
  void submit_async(Submission s, const std::shared_ptr<QuorumStore::Calls>& calls) {
    calls->begin();
    s.calls = calls;
    submit(std::move(s));
  }

  // A closing store's held-back requests (commits, purges) leave now rather
  // than with another store's next call (the sockets linger when the engine
  // stops).
  void send_held_back() {
    {
      std::lock_guard lock(direct_mu);
      direct->lane.coordinator().release_held_back();
      (void)direct->lane.flush(steady_ms());
      schedule_direct_flush();
    }
    Submission flush{Submission::Kind::kFlush, "", "", {}, {}, {}};
    auto sent = flush.write_done.get_future();
    submit(std::move(flush));
    sent.wait();
  }

  // Takes the newest replica set that the certificates `wired`'s replicas
  // returned give, when it checks out (one that does not is left: the calls
  // that met it end with the replicas' refusals).
  void learn(Wiring& wired) { learn(wired.lane.coordinator().take_newer_configs()); }
  void learn(const std::vector<std::string>& certificates) {
    if (certificates.empty()) return;
    std::lock_guard lock(view_mu);
    view = client::newest_view(std::move(view), certificates, check_signature);
    view_version = view.version;
  }

  // A lane and links to the newest set when `wired` has an older one; null
  // when it is current, or when links to the new set cannot be made (it
  // keeps the old set: its replicas' refusals end its calls).
  std::unique_ptr<Wiring> rewire(const Wiring& wired) {
    if (view_version.load() <= wired.version) return nullptr;
    std::lock_guard lock(view_mu);
    try {
      return std::make_unique<Wiring>(ctx, view, coordinator_options, clock, limits);
    } catch (const std::exception&) {
      return nullptr;
    }
  }

  void start(Submission s, uint64_t now) {
    if (s.kind == Submission::Kind::kFlush) {
      background->lane.coordinator().release_held_back();
      flushes.push_back(std::move(s));
      return;
    }
    client::OpId id = start_on(background->lane.coordinator(), s, now);
    waiting.emplace(id, std::move(s));
  }

  void deliver(std::vector<client::Completion> done) {
    for (client::Completion& c : done) {
      auto it = waiting.find(c.op);
      if (it == waiting.end()) continue;
      it->second.finish(std::move(c.result));
      waiting.erase(it);
    }
  }

  // The I/O thread: moves to a newer replica set, and starts the calls in
  // flight again there. A write is sent again with a new timestamp; what the
  // old set took of it stays, so a refusal by the new set is not final for
  // it (client::answer_of_resent_write).
  void follow_view(uint64_t now) {
    learn(*background);
    std::unique_ptr<Wiring> next = rewire(*background);
    if (!next) return;
    std::map<client::OpId, Submission> moved;
    for (auto& [id, s] : waiting) {
      s.resent = true;
      moved.emplace(start_on(next->lane.coordinator(), s, now), std::move(s));
    }
    waiting = std::move(moved);
    background = std::move(next);
  }

  // Starts `s` on the direct lane and runs it to its end on the calling
  // thread, which holds direct_mu.
  client::Completion run_here(const Submission& s) {
    direct_due_ms = 0;  // this call sends whatever is held back
    if (auto next = rewire(*direct)) direct = std::move(next);
    uint64_t now = steady_ms();
    client::OpId id = start_on(direct->lane.coordinator(), s, now);
    bool resent = false;
    std::vector<zmq::pollitem_t> items;
    direct->links.add_poll_items(items);
    for (;;) {
      now = steady_ms();
      for (client::Completion& c : direct->lane.flush(now)) {
        if (c.op != id) continue;
        schedule_direct_flush();
        if (auto* w = std::get_if<WriteResult>(&c.result); w != nullptr && resent) {
          *w = client::answer_of_resent_write(std::move(*w));
        }
        return std::move(c);
      }
      client::Coordinator& coordinator = direct->lane.coordinator();
      long timeout = 100;
      if (auto d = coordinator.next_deadline_ms()) timeout = *d > now ? static_cast<long>(*d - now) : 0;
      transport::poll(items, std::chrono::milliseconds(timeout));
      now = steady_ms();
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].revents & ZMQ_POLLIN) direct->links.receive(i, direct->lane, now);
      }
      coordinator.on_tick(now);
      learn(*direct);
      if (auto next = rewire(*direct)) {  // the call starts again on the new set
        direct = std::move(next);
        id = start_on(direct->lane.coordinator(), s, now);
        resent = true;
        items.clear();
        direct->links.add_poll_items(items);
      }
    }
  }

  // After a direct call (direct_mu held): when the direct lane's held-back
  // sends are due, for the sweeper.
  void schedule_direct_flush() {
    auto due = direct->lane.coordinator().next_deadline_ms();
    direct_due_ms = due ? std::max<uint64_t>(*due, 1) : 0;
    if (due) sweeper->wake();
  }

  // Sweeper: sends the direct lane's held-back requests once due, unless a
  // caller drives the lane (it sends them itself).
  void flush_direct(uint64_t now) {
    uint64_t due = direct_due_ms;
    if (due == 0 || now < due) return;
    std::unique_lock lock(direct_mu, std::try_to_lock);
    if (!lock) return;
    for (size_t i = 0; i < direct->lane.replicas(); ++i) direct->links.receive(i, direct->lane, now);  // late replies
    direct->lane.coordinator().on_tick(now);
    (void)direct->lane.flush(now);
    learn(*direct);
    schedule_direct_flush();
  }

  // The caller's own thread runs the call when the direct lane is free;
  // otherwise (another caller drives it) the I/O thread does.
  client::OpResult run_blocking(Submission s) {
    const Submission::Kind kind = s.kind;
    auto refused = [kind](Status why) { return refusal(kind, std::move(why)); };
    if (Status bad = check_sizes(limits, s.key, s.value, s.fence); !bad.is_ok()) return refused(bad);
    std::unique_lock lock(direct_mu, std::try_to_lock);
    if (lock) {
      try {
        return run_here(s).result;
      } catch (const std::exception& e) {
        schedule_direct_flush();  // what the lane holds back still goes out
        return refused(Status(Code::kInternal, std::string("call failed: ") + e.what()));
      }
    }
    auto read_done = s.read_done.get_future();
    auto write_done = s.write_done.get_future();
    auto scan_done = s.scan_done.get_future();
    auto feed_done = s.feed_done.get_future();
    submit(std::move(s));
    if (kind == Submission::Kind::kRead) return read_done.get();
    if (kind == Submission::Kind::kScan) return scan_done.get();
    if (kind == Submission::Kind::kFeed) return feed_done.get();
    return write_done.get();
  }

  // Returns false once stopping and every accepted operation has finished.
  bool take_submissions(uint64_t now) {
    uint64_t count;
    (void)!read(wake_fd, &count, sizeof count);
    std::deque<Submission> batch;
    bool stop;
    {
      std::lock_guard lock(mu);
      batch.swap(queue);
      stop = stopping;
    }
    for (Submission& s : batch) start(std::move(s), now);
    return !stop;
  }

  void run() {
    std::vector<zmq::pollitem_t> items;
    auto poll_items = [&] {
      items.clear();
      background->links.add_poll_items(items);
      items.push_back({nullptr, wake_fd, ZMQ_POLLIN, 0});
    };
    poll_items();
    bool running = true;
    while (running || background->lane.coordinator().in_flight() > 0) {
      client::Lane& lane = background->lane;
      uint64_t now = steady_ms();
      std::optional<uint64_t> next = lane.coordinator().next_deadline_ms();
      long timeout = -1;
      if (next) timeout = *next > now ? static_cast<long>(*next - now) : 0;
      if (!running) timeout = std::min<long>(timeout < 0 ? 100 : timeout, 100);
      try {
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds(timeout));
      } catch (const zmq::error_t&) {
        continue;
      }
      now = steady_ms();
      if (items.back().revents & ZMQ_POLLIN) running = take_submissions(now) && running;
      // Nothing may escape this thread; what failed here ends as its operation's timeout.
      try {
        for (size_t i = 0; i + 1 < items.size(); ++i) {
          if (items[i].revents & ZMQ_POLLIN) background->links.receive(i, lane, now);
        }
        lane.coordinator().on_tick(now);
        deliver(lane.flush(now));
        const Wiring* before = background.get();
        follow_view(now);
        if (background.get() != before) {
          poll_items();
          deliver(background->lane.flush(now));
        }
      } catch (const std::exception&) {
      }
      for (Submission& f : std::exchange(flushes, {})) f.finish(WriteResult{});  // sent, or never will be
    }
  }
};

namespace {

client::CoordinatorOptions coordinator_options(const QuorumStoreOptions& o) {
  client::CoordinatorOptions co{static_cast<int>(o.replicas.size()), o.read_quorum, o.write_quorum,
                                static_cast<uint64_t>(o.timeout.count()), static_cast<uint64_t>(o.hedge_after.count())};
  co.cluster_id = cluster_id_from_hex(o.cluster_id).value_or("");
  return co;
}

// The config certificates the lock group's nodes serve (get_replicas), when
// the options name them: the sets a store starts from when newer than the
// replicas it was given. Nodes that do not answer within a second are left.
struct RecordedSets {
  std::vector<std::string> certificates;
  size_t answered = 0;  // nodes that answered, with a set or with none recorded
};
RecordedSets recorded_sets(const QuorumStoreOptions& o) {
  RecordedSets out;
  if (o.lock_group.empty()) return out;
  const auto timeout = std::min(o.timeout, std::chrono::milliseconds(1000));
  for (const auto& reply :
       transport::call_lockd_endpoints(*client::shared_context(), o.lock_group, wire::GetReplicasRequest{}, timeout,
                                       cluster_id_from_hex(o.cluster_id).value_or(""), o.credentials)) {
    if (!reply || !reply->status.is_ok()) continue;
    ++out.answered;
    if (!reply->config.empty()) out.certificates.push_back(reply->config);
  }
  return out;
}

// The set the options list (version 0), which a recorded set replaces when newer.
client::ReplicaView first_view(const QuorumStoreOptions& o) {
  return {.endpoints = o.replicas,
          .read_quorum = o.read_quorum,
          .write_quorum = o.write_quorum,
          .credentials = o.credentials};
}

// Why a store given no replicas has none to send to.
Status no_recorded_set(const QuorumStoreOptions& o, const RecordedSets& recorded) {
  if (recorded.answered == 0) {
    return Status(Code::kUnavailable, "the store lists no replicas, and no lock group node answered get_replicas (" +
                                          std::to_string(o.lock_group.size()) +
                                          " asked) in time: it has no replica set to use");
  }
  if (recorded.certificates.empty()) {
    return Status(Code::kUnavailable,
                  "the lock group records no replica set yet, and its nodes' cluster files list none: list the "
                  "replicas ([[replica]] entries) in the lock group's cluster file");
  }
  return Status(Code::kBadRequest, "the lock group's replica set does not check out: " +
                                       client::next_view(first_view(o), recorded.certificates.front(),
                                                         o.config_check ? o.config_check->signature_verifies : nullptr)
                                           .status()
                                           .message());
}

// What makes two stores' engines interchangeable: every option.
static_assert(sizeof(QuorumStoreOptions) ==
                  136 + sizeof(std::optional<Credentials>) + sizeof(std::optional<ConfigCheck>),
              "an option was added or removed: update engine_key");
std::string engine_key(const QuorumStoreOptions& o) {
  std::string key;
  for (const std::string& r : o.replicas) key += r + '\n';
  for (const std::string& n : o.lock_group) key += "lockd " + n + '\n';
  key += o.cluster_id + '\n';
  if (o.credentials) {  // the secret key names the client: the rest follows from the endpoints
    key += o.credentials->secret_key + '\n';
    for (const auto& [endpoint, server] : o.credentials->server_keys) key += endpoint + '=' + server + '\n';
  }
  key += (o.config_check ? "check " + o.config_check->public_key : "no check") + '\n';
  for (uint64_t n : {uint64_t(o.read_quorum), uint64_t(o.write_quorum), uint64_t(o.timeout.count()),
                     uint64_t(o.hedge_after.count()), o.max_clock_offset_ms, uint64_t(o.max_key_bytes),
                     uint64_t(o.max_value_bytes)}) {
    key += std::to_string(n) + ',';
  }
  return key;
}

}  // namespace

// The process's engines by options: one per set of equal options while a store uses it.
Result<std::shared_ptr<QuorumStore::Impl>> QuorumStore::engine_for(QuorumStoreOptions options) {
  client::CoordinatorOptions co = coordinator_options(options);
  // Only a new engine asks the lock group: a running one follows the set already.
  auto started = [&]() -> Result<std::shared_ptr<Impl>> {
    const RecordedSets recorded = recorded_sets(options);
    client::ReplicaView view =
        client::newest_view(first_view(options), recorded.certificates,
                            options.config_check ? options.config_check->signature_verifies : nullptr);
    if (view.endpoints.empty()) return no_recorded_set(options, recorded);
    return std::make_shared<Impl>(std::move(options), co, std::move(view));
  };
  if (!options.share_connections) return started();
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<Impl>> engines;
  std::string key = engine_key(options);
  std::lock_guard lock(mu);
  std::erase_if(engines, [](const auto& e) { return e.second.expired(); });
  if (auto engine = engines[key].lock()) return engine;
  auto engine = started();
  if (engine.is_ok()) engines[key] = engine.value();
  return engine;
}

Result<std::unique_ptr<QuorumStore>> QuorumStore::open(QuorumStoreOptions options) {
  if (options.timeout.count() <= 0 || options.hedge_after.count() < 0) {
    return Status(Code::kBadRequest, "timeout must be positive and hedge_after not negative");
  }
  if (!options.cluster_id.empty() && !cluster_id_from_hex(options.cluster_id)) {
    return Status(Code::kBadRequest, "cluster_id '" + options.cluster_id + "' is not 32 hex digits");
  }
  // With no replicas, the lock group's record gives them and the quorums (checked as it is taken).
  if (options.replicas.empty() && options.lock_group.empty()) {
    return Status(Code::kBadRequest, "the store needs its replicas, or the lock group that records them");
  }
  if (!options.replicas.empty()) {
    if (Status s = client::validate(coordinator_options(options)); !s.is_ok()) return s;
  }
  try {
    auto engine = engine_for(std::move(options));
    if (!engine.is_ok()) return engine.status();
    return std::unique_ptr<QuorumStore>(new QuorumStore(std::move(engine).value()));
  } catch (const zmq::error_t& e) {
    return Status(Code::kBadRequest, std::string("cannot connect to a replica: ") + e.what());
  } catch (const std::invalid_argument& e) {  // credentials
    return Status(Code::kBadRequest, e.what());
  } catch (const std::exception& e) {
    return Status(Code::kInternal, std::string("cannot start the store: ") + e.what());
  }
}

Result<Fence> Fence::from_sequencer(std::string_view text) {
  auto parsed = parse_sequencer(text);
  if (!parsed.is_ok()) return parsed.status();
  return Fence{parsed.value().lock, parsed.value().token, std::string(text)};
}

QuorumStore::QuorumStore(std::shared_ptr<Impl> impl) : impl_(std::move(impl)), calls_(std::make_shared<Calls>()) {}

QuorumStore::~QuorumStore() {
  calls_->wait_for_none();
  impl_->send_held_back();
}

namespace {

// An asynchronous call refused before it started, counted.
std::future<WriteResult> ready(QuorumStore::Calls& calls, Submission::Kind kind, Status s) {
  Submission::count(calls, kind, s.code());
  std::promise<WriteResult> p;
  p.set_value({std::move(s), {}, 0});
  return p.get_future();
}

}  // namespace

std::future<WriteResult> QuorumStore::put_async(std::string_view key, std::string_view value, const Fence& fence) {
  if (Status s = check_sizes(impl_->limits, key, value, fence); !s.is_ok()) {
    return ready(*calls_, Submission::Kind::kWrite, s);
  }
  Submission sub{Submission::Kind::kWrite, std::string(key), std::string(value), fence, {}, {}};
  auto f = sub.write_done.get_future();
  impl_->submit_async(std::move(sub), calls_);
  return f;
}

std::future<WriteResult> QuorumStore::del_async(std::string_view key, const Fence& fence) {
  if (Status s = check_sizes(impl_->limits, key, "", fence); !s.is_ok()) {
    return ready(*calls_, Submission::Kind::kDelete, s);
  }
  Submission sub{Submission::Kind::kDelete, std::string(key), "", fence, {}, {}};
  auto f = sub.write_done.get_future();
  impl_->submit_async(std::move(sub), calls_);
  return f;
}

std::future<WriteResult> QuorumStore::fence_async(const Fence& fence) {
  if (Status s = check_sizes(impl_->limits, "", "", fence); !s.is_ok()) {
    return ready(*calls_, Submission::Kind::kFence, s);
  }
  Submission sub{Submission::Kind::kFence, "", "", fence, {}, {}};
  auto f = sub.write_done.get_future();
  impl_->submit_async(std::move(sub), calls_);
  return f;
}

std::future<ReadResult> QuorumStore::get_async(std::string_view key) { return get_async(key, Fence{}); }

std::future<ReadResult> QuorumStore::get_async(std::string_view key, const Fence& fence) {
  Submission sub{Submission::Kind::kRead, std::string(key), "", fence, {}, {}};
  auto f = sub.read_done.get_future();
  if (Status s = check_sizes(impl_->limits, key, "", fence); !s.is_ok()) {
    Submission::count(*calls_, Submission::Kind::kRead, s.code());
    sub.read_done.set_value({s, false, {}, {}, {}});
    return f;
  }
  impl_->submit_async(std::move(sub), calls_);
  return f;
}

WriteResult QuorumStore::put(std::string_view key, std::string_view value, const Fence& fence) {
  using enum Submission::Kind;
  return counted(
      *calls_, kWrite,
      std::get<WriteResult>(impl_->run_blocking({kWrite, std::string(key), std::string(value), fence, {}, {}})));
}
WriteResult QuorumStore::del(std::string_view key, const Fence& fence) {
  using enum Submission::Kind;
  return counted(*calls_, kDelete,
                 std::get<WriteResult>(impl_->run_blocking({kDelete, std::string(key), "", fence, {}, {}})));
}
WriteResult QuorumStore::fence(const Fence& fence) {
  using enum Submission::Kind;
  return counted(*calls_, kFence, std::get<WriteResult>(impl_->run_blocking({kFence, "", "", fence, {}, {}})));
}
ReadResult QuorumStore::get(std::string_view key) { return get(key, Fence{}); }
ReadResult QuorumStore::get(std::string_view key, const Fence& fence) {
  using enum Submission::Kind;
  return counted(*calls_, kRead,
                 std::get<ReadResult>(impl_->run_blocking({kRead, std::string(key), "", fence, {}, {}})));
}

namespace {

// A scan's submission: its prefix as the key, `after` as the value.
Submission scan_submission(std::string_view prefix, std::string_view after, size_t limit) {
  Submission sub{Submission::Kind::kScan, std::string(prefix), std::string(after), {}, {}, {}};
  sub.limit = limit;
  return sub;
}

// `after` is a key: it has the key's limit, not the value's.
Status check_scan(const wire::Limits& limits, std::string_view after) { return check_sizes(limits, after, "", {}); }

}  // namespace

std::future<ScanResult> QuorumStore::scan_async(std::string_view prefix, std::string_view after, size_t limit) {
  Submission sub = scan_submission(prefix, after, limit);
  auto f = sub.scan_done.get_future();
  Status s = check_sizes(impl_->limits, prefix, "", {});
  if (s.is_ok()) s = check_scan(impl_->limits, after);
  if (!s.is_ok()) {
    sub.scan_done.set_value(ScanResult{s, {}, {}});
    Submission::count(*calls_, Submission::Kind::kScan, s.code());
    return f;
  }
  impl_->submit_async(std::move(sub), calls_);
  return f;
}

ScanResult QuorumStore::scan(std::string_view prefix, std::string_view after, size_t limit) {
  if (Status s = check_scan(impl_->limits, after); !s.is_ok()) {
    return counted(*calls_, Submission::Kind::kScan, ScanResult{s, {}, {}});
  }
  return counted(*calls_, Submission::Kind::kScan,
                 std::get<ScanResult>(impl_->run_blocking(scan_submission(prefix, after, limit))));
}

client::FeedResult QuorumStore::read_feeds(std::string_view prefix, std::vector<uint64_t> after, bool wait_for_all) {
  Submission sub{Submission::Kind::kFeed, std::string(prefix), {}, {}, {}, {}};
  sub.after = std::move(after);
  sub.wait_for_all = wait_for_all;
  return std::get<client::FeedResult>(impl_->run_blocking(std::move(sub)));
}

ReplicaSetInUse QuorumStore::replica_set() const {
  std::lock_guard lock(impl_->view_mu);
  const client::ReplicaView& v = impl_->view;
  return {.version = v.version, .replicas = v.endpoints, .read_quorum = v.read_quorum, .write_quorum = v.write_quorum};
}

StoreCounters QuorumStore::counters() const {
  using enum Submission::Kind;
  const auto read = [&](Submission::Kind kind) { return calls_->outcomes[static_cast<size_t>(kind)].read(); };
  return {.puts = read(kWrite),
          .deletes = read(kDelete),
          .gets = read(kRead),
          .scans = read(kScan),
          .fences = read(kFence)};
}

namespace {

// The fence a lease writes under, or why it cannot write.
Result<Fence> fence_of(const Lease& lease) {
  if (lease.mode() != LockMode::kExclusive) {
    return Status(Code::kBadRequest, "lock '" + lease.name() + "' is held shared: fenced writes need an exclusive lease");
  }
  if (!lease.valid()) {
    return Status(Code::kNoSession, "the lease is not valid: lock '" + lease.name() + "' (token " +
                                         std::to_string(lease.token()) +
                                         ") was released, or its session is in jeopardy or expired");
  }
  return Fence{lease.name(), lease.token(), lease.sequencer()};
}

}  // namespace

std::future<WriteResult> QuorumStore::put_async(std::string_view key, std::string_view value, const Lease& lease) {
  Result<Fence> fence = fence_of(lease);
  if (!fence.is_ok()) return ready(*calls_, Submission::Kind::kWrite, fence.status());
  return put_async(key, value, fence.value());
}

std::future<WriteResult> QuorumStore::del_async(std::string_view key, const Lease& lease) {
  Result<Fence> fence = fence_of(lease);
  if (!fence.is_ok()) return ready(*calls_, Submission::Kind::kDelete, fence.status());
  return del_async(key, fence.value());
}

WriteResult QuorumStore::put(std::string_view key, std::string_view value, const Lease& lease) {
  Result<Fence> fence = fence_of(lease);
  if (!fence.is_ok()) return counted(*calls_, Submission::Kind::kWrite, WriteResult{fence.status(), {}, 0});
  return put(key, value, fence.value());
}
WriteResult QuorumStore::del(std::string_view key, const Lease& lease) {
  Result<Fence> fence = fence_of(lease);
  if (!fence.is_ok()) return counted(*calls_, Submission::Kind::kDelete, WriteResult{fence.status(), {}, 0});
  return del(key, fence.value());
}
ReadResult QuorumStore::get(std::string_view key, const Lease& lease) {
  Result<Fence> fence = fence_of(lease);
  if (!fence.is_ok()) return counted(*calls_, Submission::Kind::kRead, ReadResult{fence.status(), false, {}, {}, {}});
  return get(key, fence.value());
}

}  // namespace palisade
