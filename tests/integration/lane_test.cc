// client::Lane against real palisade-replica processes: what one flush sends a
// replica leaves as one message once the replica answered a probe (two pings in
// one message); a replica that refuses it (as replicas before this framing did)
// gets one request per message, and every write lands. A proxy in front
// of one real replica counts the frames of each message, and can play an older
// replica (refusing messages of several frames) or a lossy link (dropping them).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "client/lane.h"
#include "client/zmq_links.h"
#include "client/replica_connection.h"
#include "base/physical_clock.h"
#include "wire/replica_protocol.h"
#include "transport/transport.h"
#include "tests/support/replica_process.h"
#include "tests/support/replica_requests.h"
#include "cli/process.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;

enum class Several { kForward, kRefuse, kDrop };

// Forwards whole messages between one client and a replica, noting the frame
// count of each message from the client. kRefuse answers a message of several
// frames as replicas before this framing did: one `malformed` reply, id 0.
class FramingProxy {
 public:
  FramingProxy(const std::string& replica, Several several)
      : endpoint_("tcp://127.0.0.1:" + std::to_string(cli::free_port())), several_(several) {
    front_ = transport::make_router(ctx_, endpoint_, {});
    back_ = transport::make_dealer(ctx_, replica, {.queue_until_connected = true});
    thread_ = std::thread([this] { run(); });
  }
  ~FramingProxy() {
    stop_ = true;
    thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }
  void set(Several several) { several_ = several; }
  // When not 0: the proxy answers a probe itself, its first reply carrying
  // this clock (the second, none: it reaches the lane's coordinator).
  void answer_probes_with_clock(uint64_t clock) { probe_clock_ = clock; }
  // Per message from the client, what each frame is: a write's key, or its type.
  std::vector<std::vector<std::string>> messages() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void run() {
    zmq::pollitem_t items[] = {{front_.handle(), 0, ZMQ_POLLIN, 0}, {back_.handle(), 0, ZMQ_POLLIN, 0}};
    while (!stop_) {
      zmq::poll(items, 2, 10ms);
      while (auto routed = transport::try_recv_routed(front_, 1000)) {
        identity_.copy(routed->identity);
        {
          std::lock_guard lock(mu_);
          seen_.emplace_back();
          for (size_t i = 0; i < routed->frames.size(); ++i) seen_.back().push_back(describe(routed->frame(i)));
        }
        if (routed->frames.size() > 1 && several_ == Several::kDrop) continue;
        if (probe_clock_ != 0 && answer_probe(*routed)) continue;
        if (routed->frames.size() > 1 && several_ == Several::kRefuse) {
          transport::send_routed(front_, *routed,
                                 wire::encode_reply(wire::error_reply(0, Status(Code::kMalformed, "a request is one ZeroMQ frame"))));
          continue;
        }
        for (size_t i = 0; i < routed->frames.size(); ++i) {
          back_.send(routed->frames[i], i + 1 < routed->frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        }
      }
      zmq::message_t frame;
      while (back_.recv(frame, zmq::recv_flags::dontwait)) {
        const bool more = frame.more();
        if (first_of_reply_) {
          zmq::message_t to;
          to.copy(identity_);
          front_.send(to, zmq::send_flags::sndmore);
        }
        front_.send(frame, more ? zmq::send_flags::sndmore : zmq::send_flags::none);
        first_of_reply_ = !more;
      }
    }
  }

  // Answers `routed` itself when it is a probe (pings only, more than one).
  bool answer_probe(transport::Routed& routed) {
    std::vector<std::string> replies;
    for (size_t i = 0; i < routed.frames.size(); ++i) {
      auto request = wire::decode_request(routed.frame(i), wire::Limits{});
      if (routed.frames.size() < 2 || !request.is_ok() ||
          !std::holds_alternative<wire::PingRequest>(request.value().body)) {
        return false;
      }
      wire::ReplicaReply pong;
      pong.id = request.value().id;
      pong.clock = i == 0 ? probe_clock_.load() : 0;
      replies.push_back(wire::encode_reply(pong));
    }
    std::vector<std::string_view> payloads(replies.begin(), replies.end());
    transport::send_routed(front_, routed, payloads);
    return true;
  }

  static std::string describe(std::string_view frame) {
    auto request = wire::decode_request(frame, wire::Limits{});
    if (!request.is_ok()) return "?";
    if (auto* w = std::get_if<wire::WriteRequest>(&request.value().body)) return w->key;
    if (std::holds_alternative<wire::PingRequest>(request.value().body)) return "ping";
    return "other";
  }

  zmq::context_t ctx_{1};
  std::string endpoint_;
  std::atomic<Several> several_;
  std::atomic<uint64_t> probe_clock_{0};
  zmq::socket_t front_, back_;
  zmq::message_t identity_;
  bool first_of_reply_ = true;
  std::mutex mu_;
  std::vector<std::vector<std::string>> seen_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

uint64_t now_ms() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// Three replicas, the first behind a FramingProxy, and a lane to them.
struct Setup {
  explicit Setup(Several several, uint64_t timeout_ms = 3000) {
    for (int i = 0; i < 3; ++i) replicas.push_back(std::make_unique<test::ReplicaProcess>(dir.sub("r" + std::to_string(i))));
    proxy = std::make_unique<FramingProxy>(replicas[0]->endpoint(), several);
    const std::vector<std::string> endpoints{proxy->endpoint(), replicas[1]->endpoint(), replicas[2]->endpoint()};
    links = std::make_unique<client::ZmqLinks>(ctx, endpoints, std::nullopt);
    lane = std::make_unique<client::Lane>(*links, endpoints, client::CoordinatorOptions{.timeout_ms = timeout_ms},
                                          clock, wire::Limits{});
    connect();
  }

  // Starts `count` writes of keys prefix0.. and sends them in one flush.
  // `later_ms` moves the clock the lane is given ahead.
  std::vector<client::OpId> write(const std::string& prefix, int count, uint64_t later_ms = 0) {
    std::vector<client::OpId> ops;
    const uint64_t now = now_ms() + later_ms;
    for (int i = 0; i < count; ++i) {
      ops.push_back(lane->coordinator().start_write(prefix + std::to_string(i), "v", false, Fence{}, now));
    }
    collect(lane->flush(now));
    return ops;
  }

  // Drives the lane until every op in `ops` completed; their results.
  std::vector<WriteResult> wait(const std::vector<client::OpId>& ops) {
    std::vector<WriteResult> results;
    drive_until([&] {
      results.clear();
      for (client::OpId op : ops) {
        if (auto it = done.find(op); it != done.end()) results.push_back(it->second);
      }
      return results.size() == ops.size();
    });
    return results;
  }

  // Receives, ticks and flushes until `done` holds (required within 10 s).
  template <typename Done>
  void drive_until(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done()) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::vector<zmq::pollitem_t> items;
      links->add_poll_items(items);
      zmq::poll(items.data(), items.size(), 10ms);
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].revents & ZMQ_POLLIN) links->receive(i, *lane, now_ms());
      }
      lane->coordinator().on_tick(now_ms());
      collect(lane->flush(now_ms()));
    }
  }

  // Writes one key at a time until one reached the proxy: the lane's socket to
  // it is connected (a send to a socket not connected yet fails at once).
  void connect() {
    for (int i = 0; proxy->messages().empty(); ++i) {
      REQUIRE(i < 1000);
      wait({lane->coordinator().start_write("warm-up", "v" + std::to_string(i), false, Fence{}, now_ms())});
    }
  }

  void collect(std::vector<client::Completion> completions) {
    for (client::Completion& c : completions) done[c.op] = std::get<WriteResult>(c.result);
  }

  // Whether the replica behind the proxy stores `key`.
  bool first_stores(const std::string& key) {
    client::ReplicaConnection conn(replicas[0]->endpoint());
    auto reply = conn.call(test::read_req(key));
    REQUIRE(reply.is_ok());
    return reply.value().newest() != nullptr;
  }

  TempDir dir;
  std::vector<std::unique_ptr<test::ReplicaProcess>> replicas;
  std::unique_ptr<FramingProxy> proxy;
  zmq::context_t ctx{1};
  SystemClock wall;
  HybridClock clock{wall};
  std::unique_ptr<client::ZmqLinks> links;
  std::unique_ptr<client::Lane> lane;
  std::map<client::OpId, WriteResult> done;
};

void require_ok(const std::vector<WriteResult>& results) {
  for (const WriteResult& r : results) REQUIRE(r.status.is_ok());
}

std::vector<std::string> keys(const std::string& prefix, int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// The frames of the last message that carried the write of `key`; empty when none did.
std::vector<std::string> message_with(const std::vector<std::vector<std::string>>& messages, const std::string& key) {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (std::find(it->begin(), it->end(), key) != it->end()) return *it;
  }
  return {};
}

const std::vector<std::string> kProbe = {"ping", "ping"};

size_t probes(const std::vector<std::vector<std::string>>& messages) {
  return static_cast<size_t>(std::count(messages.begin(), messages.end(), kProbe));
}

TEST_CASE("lane: a flush's requests to a replica leave as one message once it answered the probe",
          "[quorum_store][lane]") {
  Setup s(Several::kForward);
  auto first = s.write("a", 8);         // the probe goes first, then these one per message
  auto while_probing = s.write("b", 8);  // nothing received yet: the probe is unanswered
  require_ok(s.wait(first));
  require_ok(s.wait(while_probing));
  // Once the replicas answered the probe (the quorum may not have waited for it).
  s.drive_until([&] { return s.lane->batches_to(0) && s.lane->batches_to(1) && s.lane->batches_to(2); });
  require_ok(s.wait(s.write("c", 8)));
  s.drive_until([&] { return s.first_stores("c7"); });
  const auto messages = s.proxy->messages();
  CHECK(probes(messages) == 1);
  CHECK(std::find(messages.begin(), messages.end(), kProbe) < std::find(messages.begin(), messages.end(),
                                                                         std::vector<std::string>{"a0"}));
  for (const std::string& key : keys("a", 8)) CHECK(message_with(messages, key).size() == 1);
  for (const std::string& key : keys("b", 8)) CHECK(message_with(messages, key).size() == 1);
  CHECK(message_with(messages, "c0") == keys("c", 8));
  for (const char* key : {"a7", "b7"}) CHECK(s.first_stores(key));
}

TEST_CASE("lane: a replica that refuses the probe gets one request per message, and every write lands",
          "[quorum_store][lane]") {
  Setup s(Several::kRefuse);
  require_ok(s.wait(s.write("a", 8)));
  s.drive_until([&] { return s.first_stores("a7"); });
  require_ok(s.wait(s.write("b", 8)));
  s.drive_until([&] {
    for (const std::string& key : keys("b", 8)) {
      if (!s.first_stores(key)) return false;
    }
    return true;
  });
  for (const std::string& key : keys("a", 8)) CHECK(s.first_stores(key));
  CHECK_FALSE(s.lane->batches_to(0));
  CHECK(s.lane->batches_to(1));
  s.write("c", 8, /*later_ms=*/10000);  // long after a probe would have timed out
  s.drive_until([&] { return !message_with(s.proxy->messages(), "c7").empty(); });
  const auto messages = s.proxy->messages();
  CHECK(probes(messages) == 1);  // refused, and not asked again within a minute
  for (const auto& message : messages) {
    if (message != kProbe) CHECK(message.size() == 1);
  }
}

TEST_CASE("lane: a replica that refused the probe is asked again a minute later, and batches once it takes such "
          "messages",
          "[quorum_store][lane]") {
  Setup s(Several::kRefuse);
  require_ok(s.wait(s.write("a", 8)));
  // Until the refusal is taken: a probe still out when "b" comes half a
  // minute later would have timed out, and be sent again.
  s.drive_until(
      [&] { return probes(s.proxy->messages()) == 1 && s.first_stores("a7") && s.lane->refused_batching(0); });
  CHECK_FALSE(s.lane->batches_to(0));
  s.proxy->set(Several::kForward);  // as if the replica was upgraded
  // Not yet: half the wait, so that the real time that passed since the
  // refusal (seconds on a loaded machine) cannot make it due.
  s.write("b", 8, /*later_ms=*/client::Lane::kAskAgainAfterMs / 2);
  s.drive_until([&] { return s.first_stores("b7"); });
  CHECK(probes(s.proxy->messages()) == 1);
  s.write("c", 8, /*later_ms=*/client::Lane::kAskAgainAfterMs + 1000);
  s.drive_until([&] { return s.lane->batches_to(0); });
  CHECK(probes(s.proxy->messages()) == 2);
  require_ok(s.wait(s.write("d", 8, /*later_ms=*/client::Lane::kAskAgainAfterMs + 1000)));
  s.drive_until([&] { return s.first_stores("d7"); });
  const auto messages = s.proxy->messages();
  CHECK(message_with(messages, "b0").size() == 1);
  CHECK(message_with(messages, "d0") == keys("d", 8));
}

TEST_CASE("lane: the replies to a probe feed the client's clock, as every reply does", "[quorum_store][lane]") {
  Setup s(Several::kForward);
  // Ahead of every clock here, within what a client accepts from a replica.
  const uint64_t ahead = hlc::make(s.wall.now_ms() + s.clock.options().max_clock_offset_ms - 10, 0);
  s.proxy->answer_probes_with_clock(ahead);
  s.write("a", 8);
  s.drive_until([&] { return s.lane->batches_to(0); });  // the proxy's answer came
  CHECK(s.clock.last() >= ahead);
}

TEST_CASE("lane: a batching replica that starts refusing such messages is probed again", "[quorum_store][lane]") {
  Setup s(Several::kForward);
  require_ok(s.wait(s.write("a", 8)));
  s.drive_until([&] { return s.lane->batches_to(0); });
  s.proxy->set(Several::kRefuse);  // as if an older replica took its place
  s.write("b", 8);
  s.drive_until([&] { return !s.lane->batches_to(0); });
  s.write("c", 8);
  s.drive_until([&] { return probes(s.proxy->messages()) == 2; });
  // The second probe is refused too: one request per message from then on.
  require_ok(s.wait(s.write("d", 8)));
  s.drive_until([&] { return s.first_stores("d7"); });
  CHECK(message_with(s.proxy->messages(), "b0") == keys("b", 8));  // refused, lost to that replica
  CHECK(message_with(s.proxy->messages(), "d0").size() == 1);
  CHECK(s.first_stores("c0"));
}

TEST_CASE("lane: a probe lost on the way is sent again after the operation timeout", "[quorum_store][lane]") {
  Setup s(Several::kDrop, /*timeout_ms=*/2000);
  require_ok(s.wait(s.write("a", 8)));
  CHECK_FALSE(s.lane->batches_to(0));
  s.write("b", 8, /*later_ms=*/2500);  // a flush after the probe's timeout
  s.drive_until([&] { return probes(s.proxy->messages()) == 2; });
  CHECK(message_with(s.proxy->messages(), "a0").size() == 1);
}

}  // namespace
}  // namespace palisade
