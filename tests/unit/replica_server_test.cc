// The replica's server loop in-process, over an inproc socket: what a batch
// holds, and what its metrics count of batches and requests.
#include <catch2/catch.hpp>

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>

#include "base/physical_clock.h"
#include "transport/transport.h"
#include "replica/memory_store.h"
#include "replica/server.h"
#include "tests/support/replica_requests.h"

namespace palisade {
namespace {

// A disk that records how many changes each commit made durable.
class BatchCountingStore final : public replica::ReplicaStore {
 public:
  Result<replica::Versions> get(std::string_view key) override { return inner_.get(key); }
  Result<std::vector<std::string>> keys_in(std::string_view prefix, std::string_view after, size_t max) override {
    return inner_.keys_in(prefix, after, max);
  }
  Result<uint64_t> fence_floor(std::string_view lock) override { return inner_.fence_floor(lock); }
  Status apply(const replica::Change& c) override {
    ++open_;
    return inner_.apply(c);
  }
  Status commit() override {
    std::this_thread::sleep_for(commit_delay);  // a slow disk's sync
    batches.push_back(open_);
    open_ = 0;
    return inner_.commit();
  }
  void abort() override { inner_.abort(); }
  Result<wire::TreeNode> tree_node(uint32_t level, uint64_t index) override { return inner_.tree_node(level, index); }
  Status list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) override { return inner_.list_leaf(leaf, out); }
  Result<wire::ReplicaStats> stats(size_t max_floors) override { return inner_.stats(max_floors); }
  Result<std::string> config_certificate() override { return inner_.config_certificate(); }
  Status save_config_certificate(std::string_view t) override { return inner_.save_config_certificate(t); }
  std::vector<int> batches;
  std::chrono::milliseconds commit_delay{0};

 private:
  replica::MemoryStore inner_;
  int open_ = 0;
};

// A ReplicaServer over inproc with a BatchCountingStore, and a client socket.
// inproc delivers at send: what the client sends before start() is waiting
// before the server's first turn.
struct Served {
  explicit Served(replica::ServerOptions options)
      : server(ctx, handler, clock, options),
        client(transport::make_dealer(ctx, options.listen_endpoint, {.queue_until_connected = true})) {
    client.set(zmq::sockopt::rcvtimeo, 10000);
  }
  ~Served() {
    stop();
    close(stop_fd);
  }
  // Ends the server loop: its store may be read after this.
  void stop() {
    uint64_t one = 1;
    if (!loop.joinable()) return;
    (void)!write(stop_fd, &one, sizeof one);  // an eventfd: cannot be full
    loop.join();
  }
  void start() {
    loop = std::thread([this] { server.run(stop_fd); });
  }
  // The replies of the next message.
  std::vector<wire::ReplicaReply> receive() {
    std::vector<wire::ReplicaReply> replies;
    zmq::message_t frame;
    do {
      REQUIRE(client.recv(frame));
      auto decoded = wire::decode_reply(frame.to_string_view(), wire::Limits{});
      REQUIRE(decoded.is_ok());
      replies.push_back(decoded.value());
    } while (frame.more());
    return replies;
  }

  zmq::context_t ctx{1};
  SystemClock wall;
  HybridClock clock{wall};
  BatchCountingStore store;
  replica::ReplicaHandler handler{store, clock};
  replica::ReplicaServer server;
  zmq::socket_t client;
  int stop_fd = eventfd(0, EFD_CLOEXEC);
  std::thread loop;
};

// The value of `series` (name and labels, as rendered) in the server's metrics; 0 when absent.
double metric(replica::ReplicaServer& server, const std::string& series) {
  std::istringstream lines(server.metrics().registry().render());
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
  }
  return 0;
}

TEST_CASE("server: a batch holds at most max_batch_bytes of requests", "[replica][server]") {
  replica::ServerOptions options;
  options.listen_endpoint = "inproc://replica-server-test";
  options.max_batch_bytes = 1000;  // two of the writes below, not three
  Served s(options);
  const int writes = 10;
  for (int i = 0; i < writes; ++i) {
    auto w = test::write_req("k" + std::to_string(i), std::string(600, 'v'), test::ts_now(0));
    w.id = static_cast<uint64_t>(i + 1);
    REQUIRE(s.client.send(zmq::buffer(wire::encode_request(w)), zmq::send_flags::none));
  }
  s.start();
  for (int i = 0; i < writes; ++i) {
    auto replies = s.receive();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].status.is_ok());
  }
  s.stop();
  INFO("changes per commit: " << Catch::Detail::stringify(s.store.batches));
  CHECK(*std::max_element(s.store.batches.begin(), s.store.batches.end()) <= 2);
  CHECK(s.store.batches.size() >= writes / 2);
  CHECK(metric(s.server, "palisade_replica_request_seconds_count{type=\"write\"}") == writes);
}

TEST_CASE("server: max_batch counts request frames, refused ones too, and a message's replies come back together",
          "[replica][server]") {
  // One message below is a write and three frames that are not requests.
  replica::ServerOptions options;
  options.listen_endpoint = "inproc://replica-server-frames-test";
  options.max_batch = 4;
  Served s(options);
  const int messages = 5;
  for (int i = 0; i < messages; ++i) {
    auto w = test::write_req("k" + std::to_string(i), "v", test::ts_now(0));
    w.id = static_cast<uint64_t>(i + 1);
    REQUIRE(s.client.send(zmq::buffer(wire::encode_request(w)), zmq::send_flags::sndmore));
    for (int g = 0; g < 3; ++g) {
      REQUIRE(s.client.send(zmq::str_buffer("\xc1"), g < 2 ? zmq::send_flags::sndmore : zmq::send_flags::none));
    }
  }
  s.start();
  for (int i = 0; i < messages; ++i) {
    auto replies = s.receive();
    REQUIRE(replies.size() == 4);
    CHECK(replies[0].id == static_cast<uint64_t>(i + 1));
    CHECK(replies[0].status.is_ok());
    for (int g = 1; g < 4; ++g) CHECK(replies[g].status.code() == Code::kMalformed);
  }
  s.stop();
  // Counted by requests decoded, all five messages would fit in one turn.
  INFO("changes per commit: " << Catch::Detail::stringify(s.store.batches));
  CHECK(s.store.batches == std::vector<int>(messages, 1));
  // Each turn stopped at max_batch frames; the refused frames have no latency.
  CHECK(metric(s.server, "palisade_replica_full_batches_total") == messages);
  CHECK(metric(s.server, "palisade_replica_request_seconds_count{type=\"write\"}") == messages);
  CHECK(metric(s.server, "palisade_replica_requests_total{type=\"undecoded\",outcome=\"malformed\"}") == 3 * messages);
}

TEST_CASE("server: a batch that holds all that waited is not full, and each request's time is its turn's",
          "[replica][server]") {
  replica::ServerOptions options;
  options.listen_endpoint = "inproc://replica-server-latency-test";
  Served s(options);
  s.store.commit_delay = std::chrono::milliseconds(50);
  auto w = test::write_req("k", "v", test::ts_now(0));
  REQUIRE(s.client.send(zmq::buffer(wire::encode_request(w)), zmq::send_flags::sndmore));
  REQUIRE(s.client.send(zmq::buffer(wire::encode_request(test::read_req("k"))), zmq::send_flags::none));
  s.start();
  REQUIRE(s.receive().size() == 2);
  s.stop();
  CHECK(metric(s.server, "palisade_replica_full_batches_total") == 0);
  CHECK(metric(s.server, "palisade_replica_request_seconds_count{type=\"write\"}") == 1);
  CHECK(metric(s.server, "palisade_replica_request_seconds_count{type=\"read\"}") == 1);
  // Both are answered after the batch's commit, the read too.
  CHECK(metric(s.server, "palisade_replica_request_seconds_sum{type=\"write\"}") >= 0.05);
  CHECK(metric(s.server, "palisade_replica_request_seconds_sum{type=\"read\"}") >= 0.05);
}

}  // namespace
}  // namespace palisade
