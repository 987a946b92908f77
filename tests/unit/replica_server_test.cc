// The replica's server loop in-process, over an inproc socket: what a batch holds.
#include <catch2/catch.hpp>

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "common/physical_clock.h"
#include "common/transport.h"
#include "replica/memory_store.h"
#include "replica/server.h"
#include "tests/support/replica_requests.h"

namespace palisade {
namespace {

// A disk that records how many changes each commit made durable.
class BatchCountingStore final : public replica::ReplicaStore {
 public:
  Result<replica::Versions> get(std::string_view key) override { return inner_.get(key); }
  Result<uint64_t> fence_floor(std::string_view lock) override { return inner_.fence_floor(lock); }
  Status apply(const replica::Change& c) override {
    ++open_;
    return inner_.apply(c);
  }
  Status commit() override {
    batches.push_back(open_);
    open_ = 0;
    return inner_.commit();
  }
  void abort() override { inner_.abort(); }
  Result<wire::TreeNode> tree_node(uint32_t level, uint64_t index) override { return inner_.tree_node(level, index); }
  Status list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) override { return inner_.list_leaf(leaf, out); }
  Result<wire::ReplicaStats> stats(size_t max_floors) override { return inner_.stats(max_floors); }
  std::vector<int> batches;

 private:
  replica::MemoryStore inner_;
  int open_ = 0;
};

TEST_CASE("server: a batch holds at most max_batch_bytes of requests", "[replica][server]") {
  zmq::context_t ctx(1);
  SystemClock wall;
  HybridClock clock(wall);
  BatchCountingStore store;
  replica::ReplicaHandler handler(store, clock);
  replica::ServerOptions options;
  options.listen_endpoint = "inproc://replica-server-test";
  options.max_batch_bytes = 1000;  // two of the writes below, not three
  replica::ReplicaServer server(ctx, handler, clock, options);

  // inproc delivers at send: all ten are waiting before the server's first turn.
  zmq::socket_t client = transport::make_dealer(ctx, options.listen_endpoint, {.queue_until_connected = true});
  const int writes = 10;
  for (int i = 0; i < writes; ++i) {
    auto w = test::write_req("k" + std::to_string(i), std::string(600, 'v'), test::ts_now(0));
    w.id = static_cast<uint64_t>(i + 1);
    REQUIRE(client.send(zmq::buffer(wire::encode_request(w)), zmq::send_flags::none));
  }
  int stop_fd = eventfd(0, EFD_CLOEXEC);
  std::thread loop([&] { server.run(stop_fd); });
  for (int i = 0; i < writes; ++i) {
    zmq::message_t reply;
    client.set(zmq::sockopt::rcvtimeo, 10000);
    REQUIRE(client.recv(reply));
    auto decoded = wire::decode_reply({static_cast<const char*>(reply.data()), reply.size()}, wire::Limits{});
    REQUIRE(decoded.is_ok());
    CHECK(decoded.value().status.is_ok());
  }
  uint64_t one = 1;
  REQUIRE(write(stop_fd, &one, sizeof one) == sizeof one);
  loop.join();
  close(stop_fd);

  INFO("changes per commit: " << Catch::Detail::stringify(store.batches));
  CHECK(*std::max_element(store.batches.begin(), store.batches.end()) <= 2);
  CHECK(store.batches.size() >= writes / 2);
}

}  // namespace
}  // namespace palisade
