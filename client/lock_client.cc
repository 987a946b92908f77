#include "palisade/lock_client.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "client/grant_fence.h"
#include "client/lease_clock.h"
#include "client/lock_session.h"
#include "client/outcome_counter.h"
#include "client/shared_context.h"
#include "base/cluster_id.h"
#include "wire/lock_protocol.h"
#include "transport/transport.h"
#include "palisade/quorum_store.h"

namespace palisade {
namespace {

constexpr size_t kMaxReplyBytes = size_t{16} << 20;  // a status reply lists up to 1000 locks
constexpr long kMaxPollMs = 500;

uint64_t ms(std::chrono::milliseconds d) { return d.count() > 0 ? static_cast<uint64_t>(d.count()) : 0; }

std::atomic<uint64_t> next_instance{0};

}  // namespace

// Concurrency: the session core, `waiting` and `handed` are shared under
// `core_mu`. The I/O thread owns `sockets` and `wake_recv`: it runs queued
// tasks, KeepAlives, timers and session events. A blocking call that finds
// `direct_mu` free drives its call itself on `direct_sockets` (two thread
// hand-offs fewer per call); what else the core wants sent meanwhile goes to
// the I/O thread through `handed`. Leases read `clock` (atomics) from anywhere.
// Locks are taken in the order direct_mu, core_mu, mu.
struct LockClient::Impl {
  using Task = std::function<void(uint64_t now)>;  // runs under core_mu

  LockClientOptions options;
  std::shared_ptr<zmq::context_t> context = client::shared_context();
  zmq::context_t& ctx = *context;
  std::shared_ptr<LeaseClock> clock = std::make_shared<LeaseClock>();
  std::atomic<uint64_t> session{0};
  std::atomic<uint64_t> epoch{0};
  client::OutcomeCounter acquires;
  client::OutcomeCounter releases;
  std::atomic<uint64_t> jeopardy{0};
  std::atomic<uint64_t> safe_again{0};
  std::atomic<uint64_t> expired{0};

  std::mutex mu;
  zmq::socket_t wake_send;  // guarded by mu
  std::deque<Task> tasks;   // guarded by mu
  bool stopping = false;    // guarded by mu

  std::mutex core_mu;
  client::LockSession core;                                          // guarded by core_mu
  std::map<uint64_t, std::promise<client::CallDone>> waiting;        // guarded by core_mu
  std::vector<client::Outgoing> handed;                              // guarded by core_mu
  uint64_t direct_call = 0;  // the call a blocking caller drives; guarded by core_mu

  // I/O thread only.
  std::vector<zmq::socket_t> sockets;  // one DEALER per lockd node
  zmq::socket_t wake_recv;
  std::promise<Status> opened;
  bool opened_set = false;

  std::mutex direct_mu;
  std::vector<zmq::socket_t> direct_sockets;  // guarded by direct_mu
  // The direct sockets the current direct call sent on, the only ones it polls:
  // libzmq checks each polled socket with a poll(2) of its own, twice per wait.
  std::vector<char> direct_sent;  // guarded by direct_mu
  int direct_wake_fd = -1;  // the I/O thread ended direct_call

  // The released flag of each grant, shared by every Lease of it.
  std::mutex flags_mu;
  std::map<std::string, std::pair<uint64_t, std::shared_ptr<std::atomic<bool>>>, std::less<>> flags;

  std::thread io;

  static client::LockSessionOptions core_options(const LockClientOptions& o) {
    return {.nodes = o.nodes.size(),
            .request_timeout_ms = std::max<uint64_t>(1, ms(o.request_timeout)),
            .grace_ms = ms(o.grace),
            .max_drift_ppm = o.max_clock_drift_ppm,
            .call_timeout_ms = std::max<uint64_t>(1, ms(o.call_timeout)),
            .retry_backoff_ms = std::clamp<uint64_t>(ms(o.request_timeout) / 20, 1, 50),
            .session_lease_ms = ms(o.session_ttl),
            .cluster_id = cluster_id_from_hex(o.cluster_id).value_or("")};
  }

  explicit Impl(LockClientOptions o) : options(std::move(o)), core(core_options(options), boottime_ms()) {
    core.set_endpoints(options.nodes);
    for (const std::string& endpoint : options.nodes) {
      // Checked here: a node the credentials cannot reach is an error at open.
      (void)transport::dealer_options({}, options.credentials, endpoint);
    }
    add_sockets(sockets);
    add_sockets(direct_sockets);
    direct_sent.assign(direct_sockets.size(), 0);
    const std::string wake_endpoint = "inproc://palisade-lock-client-" + std::to_string(next_instance++);
    wake_recv = zmq::socket_t(ctx, zmq::socket_type::pair);
    wake_recv.bind(wake_endpoint);
    wake_send = zmq::socket_t(ctx, zmq::socket_type::pair);
    wake_send.connect(wake_endpoint);
    direct_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (direct_wake_fd < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }

  void start() {
    io = std::thread([this] { run(); });
  }

  ~Impl() {
    if (io.joinable()) {
      // Best effort: close the session so that its locks are free at once.
      std::future<client::CallDone> closing =
          call([](client::LockSession& core, uint64_t now) { return core.close(now); });
      closing.wait_for(std::min(options.request_timeout * 2, std::chrono::milliseconds(5000)));
      {
        std::lock_guard lock(mu);
        stopping = true;
        wake_locked();
      }
      io.join();
    }
    if (direct_wake_fd >= 0) close(direct_wake_fd);
  }

  bool on_io_thread() const { return std::this_thread::get_id() == io.get_id(); }

  // Under core_mu (or before the I/O thread starts): a socket for every node
  // the session knows and `to` has none for yet, as it learns new members.
  // A request to a node that is not connected fails at once (and the session
  // asks the next one) instead of waiting in a queue to arrive late.
  void add_sockets(std::vector<zmq::socket_t>& to) {
    const transport::SocketOptions plain{.linger_ms = 0, .queue_until_connected = false};
    const std::vector<std::string>& endpoints = core.endpoints();
    for (size_t i = to.size(); i < endpoints.size(); ++i) {
      std::optional<Credentials> credentials = options.credentials;
      if (credentials && !core.key_of(i).empty()) credentials->server_keys[endpoints[i]] = core.key_of(i);
      if (credentials && !credentials->server_keys.contains(endpoints[i])) {
        // A member whose key neither the group nor the credentials give: a
        // socket connected nowhere, on which every send fails at once.
        to.emplace_back(ctx, zmq::socket_type::dealer).set(zmq::sockopt::linger, 0);
        continue;
      }
      to.push_back(
          transport::make_dealer(ctx, endpoints[i], transport::dealer_options(plain, credentials, endpoints[i])));
    }
  }

  void wake_locked() {
    try {
      (void)wake_send.send(zmq::message_t(), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
      // The I/O thread wakes at least every kMaxPollMs anyway.
    }
  }

  void wake_io() {
    std::lock_guard lock(mu);
    wake_locked();
  }

  // Queues `task` for the I/O thread; false once the client is closing.
  bool post(Task task) {
    std::lock_guard lock(mu);
    if (stopping) return false;
    const bool was_empty = tasks.empty();
    tasks.push_back(std::move(task));
    if (was_empty) wake_locked();
    return true;
  }

  // Runs `start` on the I/O thread; the future holds the call's end, and `id`
  // (when given) the call's id once started.
  std::future<client::CallDone> call(std::function<uint64_t(client::LockSession&, uint64_t)> start,
                                     std::shared_ptr<std::atomic<uint64_t>> id = nullptr) {
    auto promise = std::make_shared<std::promise<client::CallDone>>();
    std::future<client::CallDone> done = promise->get_future();
    const bool posted = post([this, start = std::move(start), promise, id](uint64_t now) {
      const uint64_t call_id = start(core, now);
      if (id) *id = call_id;
      waiting.emplace(call_id, std::move(*promise));
    });
    if (!posted) promise->set_value({0, Status(Code::kUnavailable, "the lock client is closing")});
    return done;
  }

  // A blocking call: on the caller's thread when no other caller drives the
  // direct sockets, else through the I/O thread. `cancel` ends it with Cancelled.
  client::CallDone run_blocking(const std::function<uint64_t(client::LockSession&, uint64_t)>& start,
                                std::stop_token cancel = {}) {
    std::unique_lock direct(direct_mu, std::try_to_lock);
    if (!direct) {
      auto id = std::make_shared<std::atomic<uint64_t>>(0);
      std::future<client::CallDone> done = call(start, id);
      // Runs after the call's start: the I/O thread takes tasks in order.
      std::stop_callback on_cancel(cancel, [this, id] {
        post([this, id](uint64_t now) { core.cancel(*id, now); });
      });
      return done.get();
    }
    try {
      return call_here(start, cancel);
    } catch (const std::exception& e) {
      // Its end, if it comes, goes to the promise nobody reads any more.
      std::lock_guard lock(core_mu);
      direct_call = 0;
      return {0, Status(Code::kInternal, std::string("lock call failed: ") + e.what())};
    }
  }

  // Under direct_mu.
  client::CallDone call_here(const std::function<uint64_t(client::LockSession&, uint64_t)>& start,
                             std::stop_token cancel) {
    std::future<client::CallDone> done;
    uint64_t id = 0;
    std::fill(direct_sent.begin(), direct_sent.end(), 0);
    {
      std::lock_guard lock(core_mu);
      const uint64_t now = boottime_ms();
      id = start(core, now);
      done = waiting[id].get_future();
      direct_call = id;
      route_direct();
    }
    std::stop_callback on_cancel(cancel, [this] {
      uint64_t one = 1;
      (void)!write(direct_wake_fd, &one, sizeof one);
    });
    std::vector<zmq::pollitem_t> items;
    std::vector<size_t> polled;  // the node of each socket in items
    while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      items.clear();
      polled.clear();
      for (size_t i = 0; i < direct_sockets.size(); ++i) {
        if (!direct_sent[i]) continue;
        items.push_back({direct_sockets[i].handle(), 0, ZMQ_POLLIN, 0});
        polled.push_back(i);
      }
      items.push_back({nullptr, direct_wake_fd, ZMQ_POLLIN, 0});
      long timeout = kMaxPollMs;
      {
        std::lock_guard lock(core_mu);
        const uint64_t now = boottime_ms(), next = core.next_timer_ms();
        if (next != client::LockSession::kNever) {
          timeout = next > now ? static_cast<long>(std::min<uint64_t>(next - now, kMaxPollMs)) : 0;
        }
      }
      transport::poll(items, std::chrono::milliseconds(timeout));
      if (items.back().revents & ZMQ_POLLIN) {
        uint64_t count;
        (void)!read(direct_wake_fd, &count, sizeof count);
      }
      std::lock_guard lock(core_mu);
      const uint64_t now = boottime_ms();
      for (size_t k = 0; k < polled.size(); ++k) {
        if (items[k].revents & ZMQ_POLLIN) receive(direct_sockets[polled[k]], polled[k], now);
      }
      if (cancel.stop_requested()) core.cancel(id, now);
      core.tick(now);
      route_direct();
    }
    std::lock_guard lock(core_mu);
    direct_call = 0;
    return done.get();
  }

  // Under core_mu, on the direct caller's thread: sends direct_call's requests
  // on the direct sockets and hands the rest (and any session event) to the I/O thread.
  void route_direct() {
    add_sockets(direct_sockets);
    direct_sent.resize(direct_sockets.size(), 0);
    bool for_io = false;
    for (client::Outgoing& o : core.take_outgoing()) {
      // A direct socket not (yet) connected: the I/O thread's may be.
      if (direct_call == 0 || o.call != direct_call || !try_send(direct_sockets[o.node], o)) {
        handed.push_back(std::move(o));
        for_io = true;
      } else {
        direct_sent[o.node] = 1;
      }
    }
    end_calls(false);
    publish();
    if (for_io || core.has_events()) wake_io();
  }

  static bool try_send(zmq::socket_t& socket, const client::Outgoing& o) {
    const std::string bytes = wire::encode_lock_request(o.request);
    try {
      return transport::send(socket, zmq::buffer(bytes));
    } catch (const zmq::error_t&) {
      return false;
    }
  }

  // Under core_mu: fulfils the promises of the calls that ended.
  void end_calls(bool io_thread) {
    for (client::CallDone& d : core.take_done()) {
      auto it = waiting.find(d.call);
      if (it == waiting.end()) continue;
      const bool was_direct = d.call == direct_call;
      it->second.set_value(std::move(d));
      waiting.erase(it);
      if (was_direct && io_thread) {
        uint64_t one = 1;
        (void)!write(direct_wake_fd, &one, sizeof one);
      }
    }
  }

  // I/O thread, under core_mu. Returns false once stopping.
  bool take_tasks(uint64_t now) {
    zmq::message_t msg;
    while (wake_recv.recv(msg, zmq::recv_flags::dontwait)) {
    }
    std::deque<Task> batch;
    bool stop;
    {
      std::lock_guard lock(mu);
      batch.swap(tasks);
      stop = stopping;
    }
    for (Task& task : batch) task(now);
    return !stop;
  }

  // I/O thread, under core_mu: sends everything the core (or a direct caller)
  // wants sent, ends calls, and returns the session events to report.
  std::vector<client::SessionState> flush(uint64_t now) {
    add_sockets(sockets);
    std::vector<client::Outgoing> out = std::exchange(handed, {});
    for (client::Outgoing& o : core.take_outgoing()) out.push_back(std::move(o));
    for (const client::Outgoing& o : out) {
      if (!try_send(sockets[o.node], o)) core.on_unreachable(o.node, o.request.id, now);
    }
    end_calls(true);
    publish();
    return core.take_events();
  }

  // I/O thread, without core_mu: tells the application (and connect) of state changes.
  void report(const std::vector<client::SessionState>& states, const Status& open_error) {
    for (client::SessionState state : states) {
      std::optional<SessionEvent> event;
      switch (state) {
        case client::SessionState::kSafe:
          if (!opened_set) {
            opened_set = true;
            opened.set_value(Status::ok());
          } else {
            event = SessionEvent::kSafe;
          }
          break;
        case client::SessionState::kJeopardy:
          event = SessionEvent::kJeopardy;
          break;
        case client::SessionState::kExpired:
          if (!opened_set) {
            // Never opened: the master refused it (connect returns why).
            opened_set = true;
            opened.set_value(open_error.is_ok() ? Status(Code::kUnavailable, "the session could not be opened")
                                                : open_error);
          } else {
            event = SessionEvent::kExpired;
          }
          break;
        default:
          break;
      }
      if (event) {
        std::atomic<uint64_t>& n = *event == SessionEvent::kJeopardy ? jeopardy
                                   : *event == SessionEvent::kSafe   ? safe_again
                                                                     : expired;
        n.fetch_add(1, std::memory_order_relaxed);
      }
      if (event && options.on_event) {
        try {
          options.on_event(*event);
        } catch (...) {
          // The application's callback must not stop the session.
        }
      }
    }
  }

  // Under core_mu.
  void publish() {
    const client::SessionState state = core.state();
    if (state == client::SessionState::kExpired || state == client::SessionState::kClosed) {
      clock->void_all();
    } else {
      clock->publish(state == client::SessionState::kSafe, core.lease_deadline());
    }
    session.store(core.session(), std::memory_order_relaxed);
    epoch.store(core.epoch(), std::memory_order_relaxed);
  }

  // Under core_mu.
  void receive(zmq::socket_t& socket, size_t node, uint64_t now) {
    zmq::message_t msg;
    while (transport::recv(socket, msg)) {
      auto reply = wire::decode_lock_reply({static_cast<const char*>(msg.data()), msg.size()}, kMaxReplyBytes);
      if (reply.is_ok()) core.on_reply(node, reply.value(), now);
    }
  }

  // I/O thread, under core_mu (try_lock cannot deadlock against the usual
  // order): replies that reach the direct sockets after their caller left, a
  // late grant to give back say, wait at most kMaxPollMs rather than for the
  // next blocking call.
  void drain_direct(uint64_t now) {
    std::unique_lock direct(direct_mu, std::try_to_lock);
    if (!direct) return;
    for (size_t i = 0; i < direct_sockets.size(); ++i) receive(direct_sockets[i], i, now);
  }

  void run() {
    std::vector<zmq::pollitem_t> items;
    bool running = true;
    while (running) {
      // Nothing may escape this thread: what fails here ends as a call's timeout.
      try {
        long timeout = kMaxPollMs;
        std::vector<client::SessionState> states;
        Status open_error;
        {
          std::lock_guard lock(core_mu);
          const uint64_t now = boottime_ms();
          running = take_tasks(now);
          core.tick(now);
          states = flush(now);
          if (!opened_set) open_error = core.open_error();
          const uint64_t next = core.next_timer_ms();
          if (next != client::LockSession::kNever) {
            timeout = next > now ? static_cast<long>(std::min<uint64_t>(next - now, kMaxPollMs)) : 0;
          }
        }
        report(states, open_error);
        if (!running) break;
        if (items.size() != sockets.size() + 1) {  // at start, and when the session learnt a member
          items.clear();
          for (zmq::socket_t& s : sockets) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
          items.push_back({wake_recv.handle(), 0, ZMQ_POLLIN, 0});
        }
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds(timeout));
        std::lock_guard lock(core_mu);
        const uint64_t now = boottime_ms();
        for (size_t i = 0; i < sockets.size(); ++i) {
          if (items[i].revents & ZMQ_POLLIN) receive(sockets[i], i, now);
        }
        drain_direct(now);
      } catch (const std::exception&) {
      }
    }
    // Whoever still waits gets an answer.
    std::lock_guard lock(core_mu);
    for (auto& [id, promise] : waiting) {
      promise.set_value({id, Status(Code::kUnavailable, "the lock client closed")});
    }
    waiting.clear();
    if (!opened_set) {
      opened_set = true;
      opened.set_value(Status(Code::kUnavailable, "the lock client closed"));
    }
    clock->void_all();
  }

  std::shared_ptr<std::atomic<bool>> flag_for(const std::string& lock, uint64_t token) {
    std::lock_guard guard(flags_mu);
    auto& entry = flags[lock];
    if (!entry.second || entry.first != token || entry.second->load()) {
      entry = {token, std::make_shared<std::atomic<bool>>(false)};
    }
    return entry.second;
  }

  void forget_flag(const std::string& lock, const std::shared_ptr<std::atomic<bool>>& flag) {
    std::lock_guard guard(flags_mu);
    auto it = flags.find(lock);
    if (it != flags.end() && it->second.second == flag) flags.erase(it);
  }
};

Result<std::unique_ptr<LockClient>> LockClient::connect(LockClientOptions options, std::chrono::milliseconds timeout) {
  if (options.nodes.empty()) return Status(Code::kBadRequest, "no lock group nodes given");
  if (options.request_timeout.count() <= 0 || options.call_timeout.count() <= 0 || options.grace.count() < 0) {
    return Status(Code::kBadRequest, "request_timeout and call_timeout must be positive, grace not negative");
  }
  if (options.max_clock_drift_ppm >= 1'000'000) return Status(Code::kBadRequest, "max_clock_drift_ppm must be < 1e6");
  if (!options.cluster_id.empty() && !cluster_id_from_hex(options.cluster_id)) {
    return Status(Code::kBadRequest, "cluster_id '" + options.cluster_id + "' is not 32 hex digits");
  }
  const auto ttl = options.session_ttl.count();
  if (ttl != 0 && (ttl < static_cast<int64_t>(wire::kMinSessionLeaseMs) ||
                   ttl > static_cast<int64_t>(wire::kMaxSessionLeaseMs))) {
    // The master checks again, with its own heartbeat in the lower bound.
    return Status(Code::kBadRequest, "session_ttl " + std::to_string(ttl) + " ms is outside " +
                                         std::to_string(wire::kMinSessionLeaseMs) + " to " +
                                         std::to_string(wire::kMaxSessionLeaseMs) + " ms (0: the cluster's default)");
  }
  std::unique_ptr<Impl> impl;
  try {
    impl = std::make_unique<Impl>(std::move(options));
  } catch (const zmq::error_t& e) {
    return Status(Code::kBadRequest, std::string("cannot connect to a lock group node: ") + e.what());
  } catch (const std::invalid_argument& e) {  // credentials
    return Status(Code::kBadRequest, e.what());
  } catch (const std::exception& e) {
    return Status(Code::kInternal, std::string("cannot start the lock client: ") + e.what());
  }
  std::future<Status> opened = impl->opened.get_future();
  impl->start();
  if (opened.wait_for(timeout) != std::future_status::ready) {
    return Status(Code::kUnavailable,
                  "no lock group master answered within " + std::to_string(timeout.count()) + " ms");
  }
  Status s = opened.get();
  if (!s.is_ok()) return s;
  return std::unique_ptr<LockClient>(new LockClient(std::move(impl)));
}

LockClient::LockClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LockClient::~LockClient() = default;

namespace {

Status from_event_thread() {
  return Status(Code::kBadRequest, "LockClient calls cannot be made from its on_event callback");
}

}  // namespace

Result<Lease> LockClient::acquire(std::string_view lock, AcquireOptions options) {
  Result<Lease> result = acquire_uncounted(lock, std::move(options));
  impl_->acquires.add(result.code());
  return result;
}

Result<Lease> LockClient::acquire_uncounted(std::string_view lock, AcquireOptions options) {
  if (impl_->on_io_thread()) return from_event_thread();
  if (options.wait.count() < 0 || options.lock_delay.count() < 0) {
    return Status(Code::kBadRequest, "wait and lock_delay must not be negative");
  }
  const uint64_t wait = ms(options.wait);
  const uint64_t delay = ms(options.lock_delay);
  client::CallDone done = impl_->run_blocking(
      [lock = std::string(lock), mode = options.mode, wait, delay](client::LockSession& core, uint64_t now) {
        return core.acquire(lock, mode, delay, wait, now);
      },
      options.cancel);
  if (!done.status.is_ok()) return done.status;
  if (!done.grant) return Status(Code::kInternal, "a grant without its fields");
  client::GrantInfo& g = *done.grant;
  Lease lease(g.lock, g.mode, g.token, g.sequencer, impl_->clock);
  // A grant bounds the session's local deadline by the lease the master had
  // left, counted from when the acquire was sent: after a wait longer than
  // that, the deadline has passed and the session asks for a KeepAlive at
  // once. Its answer makes the lease valid; wait for it (one request timeout
  // at most) rather than hand out a lease that is not valid yet.
  impl_->clock->wait_valid(impl_->options.request_timeout);
  lease.released_ = impl_->flag_for(g.lock, g.token);
  // Shared holders make no fenced writes (replicas refuse them): nothing to fence.
  if (impl_->options.store != nullptr && g.mode == LockMode::kExclusive) {
    WriteResult fenced = impl_->options.store->fence(Fence{g.lock, g.token, g.sequencer});
    if (Status s = client::grant_fence_status(fenced, g.lock, g.token); !s.is_ok()) {
      // Give back this grant only. While the fence was on its way, another
      // thread of this session may have got the same grant, released it and
      // acquired the lock again: release() goes by the lock's name, and would
      // free that newer grant.
      if (!lease.released_->exchange(true)) {
        impl_->forget_flag(g.lock, lease.released_);
        (void)impl_->run_blocking([lock = g.lock, token = g.token](client::LockSession& core, uint64_t now) {
          return core.release_grant(lock, token, now);
        });
      }
      return s;
    }
  }
  return lease;
}

Result<Lease> LockClient::try_acquire(std::string_view lock, AcquireOptions options) {
  options.wait = std::chrono::milliseconds(0);
  return acquire(lock, options);
}

Status LockClient::release(Lease& lease) {
  Status status = release_uncounted(lease);
  impl_->releases.add(status.code());
  return status;
}

Status LockClient::release_uncounted(Lease& lease) {
  if (impl_->on_io_thread()) return from_event_thread();
  if (!lease.clock_ || lease.clock_ != impl_->clock)
    return Status(Code::kBadRequest, "the lease is not from this client");
  if (lease.released_->exchange(true)) return Status::ok();
  impl_->forget_flag(lease.name(), lease.released_);
  client::CallDone done = impl_->run_blocking(
      [lock = lease.name()](client::LockSession& core, uint64_t now) { return core.release(lock, now); });
  return done.status;
}

Result<bool> LockClient::check_sequencer(std::string_view sequencer) {
  if (impl_->on_io_thread()) return from_event_thread();
  client::CallDone done = impl_->run_blocking([seq = std::string(sequencer)](client::LockSession& core, uint64_t now) {
    return core.check_sequencer(seq, now);
  });
  if (!done.status.is_ok()) return done.status;
  return done.current;
}

Result<std::optional<Grant>> LockClient::current_grant(std::string_view lock) {
  if (impl_->on_io_thread()) return from_event_thread();
  if (lock.empty()) return Status(Code::kBadRequest, "no lock named");
  client::CallDone done = impl_->run_blocking(
      [name = std::string(lock)](client::LockSession& core, uint64_t now) { return core.current_grant(name, now); });
  if (!done.status.is_ok()) return done.status;
  if (!done.grant) return std::optional<Grant>();
  return std::optional<Grant>(Grant{.token = done.grant->token, .mode = done.grant->mode});
}

QuorumStore* LockClient::store() const { return impl_->options.store; }

uint64_t LockClient::session() const { return impl_->session.load(std::memory_order_relaxed); }
uint64_t LockClient::epoch() const { return impl_->epoch.load(std::memory_order_relaxed); }
bool LockClient::safe() const { return impl_->clock->valid_at(boottime_ms()); }

LockCounters LockClient::counters() const {
  return {.acquires = impl_->acquires.read(),
          .releases = impl_->releases.read(),
          .jeopardy = impl_->jeopardy.load(std::memory_order_relaxed),
          .safe_again = impl_->safe_again.load(std::memory_order_relaxed),
          .expired = impl_->expired.load(std::memory_order_relaxed)};
}

}  // namespace palisade
