// palisade-replica as a real process: durability across SIGKILL, bad input,
// on-disk corruption, data dir locking, clean shutdown, a full disk, flags.
// Every wait is bounded by a deadline.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <signal.h>
#include <regex>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "wire/envelope.h"
#include "wire/replica_protocol.h"
#include "auth/cluster_key.h"
#include "auth/config_certificate.h"
#include "wire/replica_set.h"
#include "tests/support/sequencers.h"
#include "transport/transport.h"
#include "replica/lmdb_store.h"
#include "cli/process.h"
#include "tests/support/raw_lmdb.h"
#include "client/replica_connection.h"
#include "tests/support/replica_requests.h"
#include "tests/support/replica_process.h"
#include "base/temp_dir.h"

namespace palisade {
namespace {

using test::commit_req;
using test::fence_req;
using test::ping_req;
using test::read_req;
using client::ReplicaConnection;
using test::ReplicaProcess;
using test::ts_now;
using test::with_sequencer;
using test::write_req;
using wire::ReplicaReply;

constexpr int kExitTimeoutMs = 20000;  // a replica waits 10 s for the lock group

// The reply to `request`, which must arrive.
ReplicaReply call(ReplicaConnection& conn, wire::ReplicaRequest request, int timeout_ms = 5000) {
  auto reply = conn.call(std::move(request), timeout_ms);
  INFO(reply.status().to_string());
  REQUIRE(reply.is_ok());
  return std::move(reply).value();
}

// The value stored for `key`, which must be readable and present.
std::string read_value(ReplicaConnection& conn, const std::string& key) {
  ReplicaReply r = call(conn, read_req(key));
  INFO("read " << key << ": " << r.status.to_string());
  REQUIRE(r.status.is_ok());
  REQUIRE(r.newest());
  return r.newest()->value;
}

void write_ok(ReplicaConnection& conn, const std::string& key, const std::string& value,
              FencedTimestamp ts, const std::string& lock) {
  ReplicaReply r = call(conn, write_req(key, value, ts, lock));
  INFO("write " << key << ": " << r.status.to_string());
  REQUIRE(r.status.is_ok());
}

bool exited_with(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

// Stops the daemon with SIGTERM and requires a clean exit.
void stop(ReplicaProcess& daemon) {
  daemon.process().signal(SIGTERM);
  auto status = daemon.process().wait(kExitTimeoutMs);
  INFO(daemon.process().log());
  REQUIRE(exited_with(status, 0));
}

// A request map written field by field, for requests the codec would never make.
class RawMessage {
 public:
  // The envelope plus `extra_fields` fields to come.
  RawMessage(std::string_view type, uint32_t extra_fields, uint64_t id = 77) {
    wire::write_envelope(pk_, 3 + extra_fields, id, type);
  }
  // A map that may lack the envelope.
  explicit RawMessage(uint32_t fields) { pk_.pack_map(fields); }

  RawMessage& text(std::string_view name, std::string_view v) {
    wire::pack_text(pk_, name);
    wire::pack_text(pk_, v);
    return *this;
  }
  RawMessage& bin(std::string_view name, std::string_view v) {
    wire::pack_text(pk_, name);
    wire::pack_bytes(pk_, v);
    return *this;
  }
  RawMessage& uint(std::string_view name, uint64_t v) {
    wire::pack_text(pk_, name);
    pk_.pack_uint64(v);
    return *this;
  }
  RawMessage& integer(std::string_view name, int64_t v) {
    wire::pack_text(pk_, name);
    pk_.pack_int64(v);
    return *this;
  }
  RawMessage& boolean(std::string_view name, bool v) {
    wire::pack_text(pk_, name);
    pk_.pack(v);
    return *this;
  }
  RawMessage& ts(std::string_view name, FencedTimestamp v) {
    wire::pack_text(pk_, name);
    wire::pack_timestamp(pk_, v);
    return *this;
  }
  std::string str() const { return {buf_.data(), buf_.size()}; }

 private:
  msgpack::sbuffer buf_;
  msgpack::packer<msgpack::sbuffer> pk_{buf_};
};

// A daemon on a fresh data dir, and a client of it.
struct Fixture {
  explicit Fixture(std::vector<std::string> args = {}) : daemon(tmp.sub("data"), std::move(args)) {}
  TempDir tmp;
  ReplicaProcess daemon;
  ReplicaConnection conn{daemon.endpoint()};
};

TEST_CASE("daemon: every acknowledged write survives SIGKILL", "[replica][daemon]") {
  Fixture f;
  struct Expected {
    std::string value;
    std::string lock;
    FencedTimestamp ts;
    bool committed = false;
  };
  std::map<std::string, Expected> expected;
  std::map<std::string, uint64_t> floors;  // lock -> highest token acknowledged

  // One by one: each write is its own synced batch.
  constexpr int kSequential = 120;
  for (int i = 0; i < kSequential; ++i) {
    std::string key = "seq" + std::to_string(i), lock = "L" + std::to_string(i % 4);
    uint64_t token = 1 + static_cast<uint64_t>(i / 4);
    Expected e{"value " + std::to_string(i) + std::string(static_cast<size_t>(i), '.'), lock, ts_now(token, 0)};
    write_ok(f.conn, key, e.value, e.ts, lock);
    floors[lock] = token;
    if (i % 3 == 0) {
      ReplicaReply c = call(f.conn, commit_req(key, e.ts));
      REQUIRE(c.status.is_ok());
      REQUIRE(c.applied);
      e.committed = true;
    }
    if (i % 10 == 0) {
      std::string fence = "F" + std::to_string(i);
      REQUIRE(call(f.conn, fence_req(fence, 1000 + static_cast<uint64_t>(i))).status.is_ok());
      floors[fence] = 1000 + static_cast<uint64_t>(i);
    }
    expected[key] = e;
  }

  // Pipelined: many requests in flight, so the daemon groups them into batches.
  // It is killed the moment the last reply arrives.
  constexpr int kPipelined = 100;
  {
    zmq::context_t ctx(1);
    zmq::socket_t dealer = transport::make_dealer(ctx, f.daemon.endpoint(), transport::SocketOptions{});
    dealer.set(zmq::sockopt::immediate, false);
    std::map<uint64_t, std::pair<std::string, Expected>> in_flight;
    for (int i = 0; i < kPipelined; ++i) {
      std::string key = "burst" + std::to_string(i);
      Expected e{"burst value " + std::to_string(i), "B", ts_now(1 + static_cast<uint64_t>(i), 0)};
      auto request = write_req(key, e.value, e.ts, e.lock);
      request.id = 10'000 + static_cast<uint64_t>(i);
      dealer.send(zmq::buffer(wire::encode_request(request)), zmq::send_flags::none);
      in_flight[request.id] = {key, e};
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!in_flight.empty()) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(100));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t msg;
      REQUIRE(dealer.recv(msg));
      auto reply = wire::decode_reply(msg.to_string_view(), wire::Limits{});
      REQUIRE(reply.is_ok());
      auto it = in_flight.find(reply.value().id);
      REQUIRE(it != in_flight.end());
      INFO(reply.value().status.to_string());
      REQUIRE(reply.value().status.is_ok());
      expected[it->second.first] = it->second.second;
      floors["B"] = std::max(floors["B"], it->second.second.ts.token);
      in_flight.erase(it);
    }
    f.daemon.process().kill();  // SIGKILL, right after the last acknowledgement
  }
  REQUIRE(expected.size() == kSequential + kPipelined);

  f.daemon.restart();
  ReplicaConnection conn(f.daemon.endpoint());
  for (const auto& [key, e] : expected) {
    ReplicaReply r = call(conn, read_req(key));
    INFO("key " << key);
    REQUIRE(r.status.is_ok());
    REQUIRE(r.versions.size() == 1);
    const wire::Version& v = r.versions.front();
    CHECK(v.value == e.value);
    CHECK(v.lock == e.lock);
    CHECK(v.ts == e.ts);
    CHECK(v.state == (e.committed ? wire::VersionState::kCommitted : wire::VersionState::kPending));
    REQUIRE(r.floors.count(e.lock) == 1);
    CHECK(r.floors.at(e.lock) == floors[e.lock]);
  }
  for (const auto& [lock, floor] : floors) {
    INFO("lock " << lock);
    ReplicaReply r = call(conn, fence_req(lock, 1));  // a fence below the floor reports the floor
    REQUIRE(r.status.is_ok());
    CHECK(r.floor == floor);
  }
  // And the floors still fence.
  ReplicaReply fenced = call(conn, write_req("seq0", "late", ts_now(1, 0), "L0"));
  CHECK(fenced.status.code() == Code::kFenced);
}

TEST_CASE("daemon: bad input gets an error reply and changes nothing", "[replica][daemon]") {
  Fixture f;
  const FencedTimestamp stored_ts = ts_now(3, 0);
  write_ok(f.conn, "k", "precious", stored_ts, "L");

  const std::string good_write = wire::encode_request(write_req("k", "overwritten", ts_now(9, 0), "L"));
  struct Case {
    const char* name;
    std::vector<std::string> frames;
    Code code;
    uint64_t id;  // the id the reply must carry (0 when the request's id cannot be read)
  };
  const std::vector<Case> cases = {
      {"garbage bytes", {"\xc1 this is not MessagePack"}, Code::kMalformed, 0},
      {"truncated MessagePack", {good_write.substr(0, good_write.size() / 2)}, Code::kMalformed, 0},
      {"trailing bytes", {good_write + "x"}, Code::kMalformed, 0},
      {"not a map", {"\x93\x01\x02\x03"}, Code::kMalformed, 0},
      {"an empty frame", {""}, Code::kMalformed, 0},
      {"65 frames in one message", std::vector<std::string>(wire::kMaxRequestsPerMessage + 1, good_write),
       Code::kMalformed, 0},
      {"no envelope", {RawMessage(1).text("key", "k").str()}, Code::kBadRequest, 0},
      {"unknown message type", {RawMessage("frobnicate", 0).str()}, Code::kUnknownType, 77},
      {"unknown field", {RawMessage("ping", 1).uint("extra", 1).str()}, Code::kBadRequest, 77},
      {"duplicate field",
       {RawMessage("read", 2).bin("key", "k").bin("key", "k").str()}, Code::kMalformed, 0},
      {"key of the wrong type",
       {RawMessage("write", 5).uint("key", 5).bin("value", "x").ts("ts", ts_now(9)).text("lock", "L")
            .boolean("tombstone", false).str()},
       Code::kBadRequest, 77},
      {"timestamp of the wrong type",
       {RawMessage("write", 4).bin("key", "k").bin("value", "x").text("ts", "9@now").text("lock", "L").str()},
       Code::kBadRequest, 77},
      {"negative token",
       {RawMessage("fence", 2).text("lock", "L").integer("token", -1).str()}, Code::kBadRequest, 77},
      {"tombstone of the wrong type",
       {RawMessage("write", 5).bin("key", "k").bin("value", "x").ts("ts", ts_now(9)).text("lock", "L")
            .uint("tombstone", 1).str()},
       Code::kBadRequest, 77},
      {"missing field", {RawMessage("write", 2).bin("key", "k").bin("value", "x").str()}, Code::kBadRequest, 77},
      {"unsupported protocol version",
       {RawMessage(3).uint("v", 2).uint("id", 5).text("type", "ping").str()}, Code::kUnsupportedVersion, 5},
      {"key longer than LMDB keys",  // the daemon's key limit is LMDB's, below the wire default
       {wire::encode_request(write_req(std::string(replica::LmdbStore::kMaxKeyBytes + 1, 'k'), "x", ts_now(9), "L"))},
       Code::kTooLarge, 0},
      {"read of a key longer than LMDB keys",
       {wire::encode_request(read_req(std::string(replica::LmdbStore::kMaxKeyBytes + 1, 'k')))}, Code::kTooLarge, 0},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    auto reply = f.conn.call_raw(c.frames);
    INFO(reply.status().to_string());
    REQUIRE(reply.is_ok());
    CHECK(reply.value().status.code() == c.code);
    CHECK_FALSE(reply.value().status.message().empty());
    if (c.id != 0) CHECK(reply.value().id == c.id);
    REQUIRE(call(f.conn, ping_req()).status.is_ok());
  }

  SECTION("a 100 MB message is too large") {
    std::string huge;
    {
      auto request = write_req("k", std::string(size_t{100} << 20, 'v'), ts_now(9, 0), "L");
      huge = wire::encode_request(request);
    }
    auto reply = f.conn.call_raw({huge}, 30000);
    huge = {};
    INFO(reply.status().to_string());
    REQUIRE(reply.is_ok());
    CHECK(reply.value().status.code() == Code::kTooLarge);
  }

  SECTION("a REQ socket gets a normal reply") {
    zmq::context_t ctx(1);
    zmq::socket_t req(ctx, zmq::socket_type::req);
    req.set(zmq::sockopt::linger, 0);
    req.connect(f.daemon.endpoint());
    auto request = read_req("k");
    request.id = 4242;
    req.send(zmq::buffer(wire::encode_request(request)), zmq::send_flags::none);
    zmq::pollitem_t item{req.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(5000));
    REQUIRE((item.revents & ZMQ_POLLIN));
    zmq::message_t msg;
    REQUIRE(req.recv(msg));
    CHECK_FALSE(msg.more());  // one frame: the delimiter was taken off by the REQ socket
    auto reply = wire::decode_reply(msg.to_string_view(), wire::Limits{});
    REQUIRE(reply.is_ok());
    CHECK(reply.value().id == 4242);
    REQUIRE(reply.value().status.is_ok());
    REQUIRE(reply.value().newest());
    CHECK(reply.value().newest()->value == "precious");
  }

  // Still serving, nothing changed, and every refusal was logged.
  REQUIRE(call(f.conn, ping_req()).status.is_ok());
  ReplicaReply r = call(f.conn, read_req("k"));
  REQUIRE(r.status.is_ok());
  REQUIRE(r.versions.size() == 1);
  CHECK(r.versions.front().value == "precious");
  CHECK(r.versions.front().ts == stored_ts);
  CHECK(f.daemon.process().running());
  CHECK_THAT(f.daemon.process().log(), Catch::Contains("refused request"));
}

// Sends `frames` as one message on `dealer` and returns the replies of the one message that answers it.
std::vector<ReplicaReply> call_message(zmq::socket_t& dealer, const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    dealer.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, std::chrono::milliseconds(5000));
  REQUIRE((item.revents & ZMQ_POLLIN));
  std::vector<ReplicaReply> replies;
  zmq::message_t frame;
  do {
    REQUIRE(dealer.recv(frame));
    auto reply = wire::decode_reply(frame.to_string_view(), wire::Limits{});
    REQUIRE(reply.is_ok());
    replies.push_back(std::move(reply).value());
  } while (frame.more());
  return replies;
}

std::string encoded(wire::ReplicaRequest request, uint64_t id) {
  request.id = id;
  return wire::encode_request(request);
}

TEST_CASE("daemon: a message of several requests gets one message with their replies, in order",
          "[replica][daemon]") {
  Fixture f;
  zmq::context_t ctx(1);
  zmq::socket_t dealer = transport::make_dealer(ctx, f.daemon.endpoint(), {.queue_until_connected = true});

  // Applied in order: the read sees the write before it; a bad frame gets its own refusal.
  auto replies = call_message(dealer, {encoded(write_req("k", "v", ts_now(1, 0), "L"), 11), "\xc1 garbage",
                                       encoded(read_req("k"), 13)});
  REQUIRE(replies.size() == 3);
  CHECK(replies[0].id == 11);
  CHECK(replies[0].status.is_ok());
  CHECK(replies[1].id == 0);
  CHECK(replies[1].status.code() == Code::kMalformed);
  CHECK(replies[2].id == 13);
  REQUIRE(replies[2].newest());
  CHECK(replies[2].newest()->value == "v");

  std::vector<std::string> fences;
  for (uint64_t i = 0; i < wire::kMaxRequestsPerMessage; ++i) fences.push_back(encoded(fence_req("M", i + 1), 100 + i));
  replies = call_message(dealer, fences);
  REQUIRE(replies.size() == wire::kMaxRequestsPerMessage);
  for (uint64_t i = 0; i < replies.size(); ++i) {
    CHECK(replies[i].id == 100 + i);
    CHECK(replies[i].floor == i + 1);
  }

  // One more than the limit: one refusal, and none of them applied.
  fences.push_back(encoded(fence_req("M", 1000), 999));
  replies = call_message(dealer, fences);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].id == 0);
  CHECK(replies[0].status.code() == Code::kMalformed);
  CHECK(call(f.conn, fence_req("M", 1)).floor == wire::kMaxRequestsPerMessage);
}

TEST_CASE("daemon: a value corrupted on disk is reported, never returned", "[replica][daemon]") {
  Fixture f;
  const FencedTimestamp ts = ts_now(2, 0);
  const std::string value = "the victim's value";
  write_ok(f.conn, "victim", value, ts, "L");
  REQUIRE(call(f.conn, commit_req("victim", ts)).applied);
  write_ok(f.conn, "bystander", "fine", ts, "L");
  stop(f.daemon);

  {
    test::RawLmdb raw(f.daemon.data_dir());
    auto rec = raw.get("versions", "victim");
    REQUIRE(rec);
    REQUIRE(rec->size() > value.size() + 8);
    size_t value_at = rec->size() - 8 - value.size();  // the value sits just before the 8-byte checksum
    REQUIRE(rec->substr(value_at, value.size()) == value);
    std::string damaged = *rec;
    damaged[value_at + 4] = static_cast<char>(damaged[value_at + 4] ^ 0x20);
    raw.put("versions", "victim", damaged);
    raw.commit();
  }
  f.daemon.restart();
  ReplicaConnection conn(f.daemon.endpoint());

  ReplicaReply r = call(conn, read_req("victim"));
  CHECK(r.status.code() == Code::kCorrupt);
  CHECK(r.versions.empty());
  CHECK(read_value(conn, "bystander") == "fine");
  CHECK_THAT(f.daemon.process().log(), Catch::Contains("corrupt"));
  // A plain write does not replace it (the record may have held a newer
  // committed version); a repair, a committed write, does when it names the
  // damaged record's digest from the `corrupt` answer.
  CHECK(call(conn, write_req("victim", "plain", ts_now(3, 0), "L")).status.code() == Code::kCorrupt);
  auto repair = write_req("victim", "repaired", ts_now(3, 1), "L");
  std::get<wire::WriteRequest>(repair.body).committed = true;
  CHECK(call(conn, repair).status.code() == Code::kCorrupt);
  REQUIRE(r.digest);
  std::get<wire::WriteRequest>(repair.body).replaces = r.digest;
  REQUIRE(call(conn, repair).status.is_ok());
  CHECK(read_value(conn, "victim") == "repaired");
}

TEST_CASE("daemon: a second daemon on the same data dir is refused", "[replica][daemon]") {
  Fixture f;
  write_ok(f.conn, "k", "v", ts_now(1), "L");
  cli::Process second({test::replica_binary(), "--data-dir", f.daemon.data_dir(), "--listen",
                        "tcp://127.0.0.1:" + std::to_string(cli::free_port()), "--insecure"},
                       f.tmp.sub("second.log"));
  auto status = second.wait(kExitTimeoutMs);
  INFO(second.log());
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) != 0);
  CHECK_THAT(second.log(), Catch::Contains("in use"));
  REQUIRE(f.daemon.process().running());
  REQUIRE(call(f.conn, ping_req()).status.is_ok());
  CHECK(read_value(f.conn, "k") == "v");
  write_ok(f.conn, "k2", "v2", ts_now(1), "L");
}

TEST_CASE("daemon: a data dir of another storage format is refused", "[replica][daemon]") {
  Fixture f;
  write_ok(f.conn, "k", "v", ts_now(1), "L");
  stop(f.daemon);
  {
    test::RawLmdb raw(f.daemon.data_dir());
    raw.put("meta", "format", "5");
    raw.commit();
  }
  cli::Process refused(
      {test::replica_binary(), "--data-dir", f.daemon.data_dir(), "--listen", f.daemon.endpoint(), "--insecure"},
                        f.tmp.sub("refused.log"));
  auto status = refused.wait(kExitTimeoutMs);
  INFO(refused.log());
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) != 0);
  CHECK_THAT(refused.log(), Catch::Contains("storage format '5'"));
  test::RawLmdb raw(f.daemon.data_dir());  // left as it was
  CHECK(raw.get("meta", "format") == "5");
  CHECK(raw.get("versions", "k").has_value());
}

TEST_CASE("daemon: SIGTERM stops it cleanly", "[replica][daemon]") {
  Fixture f;
  write_ok(f.conn, "k", "v", ts_now(1), "L");
  stop(f.daemon);
  std::string log = f.daemon.process().log();
  CHECK_THAT(log, Catch::Contains("started"));
  CHECK_THAT(log, Catch::Contains("stopped cleanly"));
  f.daemon.restart();  // and what it stored is there after it
  ReplicaConnection conn(f.daemon.endpoint());
  CHECK(read_value(conn, "k") == "v");
}

TEST_CASE("daemon: a full disk fails writes, not the daemon", "[replica][daemon]") {
  Fixture f({"--map-size", "1MB"});
  const std::string chunk(60 * 1024, 'x');
  std::map<std::string, std::string> acknowledged;
  std::optional<ReplicaReply> refusal;
  std::string refused_key;
  for (int i = 0; i < 64 && !refusal; ++i) {  // 64 * 60 KiB is far beyond 1 MB
    std::string key = "big" + std::to_string(i), value = std::to_string(i) + chunk;
    ReplicaReply r = call(f.conn, write_req(key, value, ts_now(1), "L"));
    if (r.status.is_ok()) {
      acknowledged[key] = value;
    } else {
      refusal = r;
      refused_key = key;
    }
  }
  REQUIRE(refusal);
  INFO(refusal->status.to_string());
  CHECK(refusal->status.code() == Code::kStorageError);
  CHECK(acknowledged.size() >= 4);

  auto check_all = [&](ReplicaConnection& conn) {
    REQUIRE(call(conn, ping_req()).status.is_ok());
    for (const auto& [key, value] : acknowledged) CHECK(read_value(conn, key) == value);
    ReplicaReply r = call(conn, read_req(refused_key));
    REQUIRE(r.status.is_ok());
    CHECK(r.versions.empty());
  };
  check_all(f.conn);
  CHECK(f.daemon.process().running());
  CHECK_THAT(f.daemon.process().log(), Catch::Contains("storage_error") && Catch::Contains("requests failed so far"));

  stop(f.daemon);
  f.daemon.restart();
  ReplicaConnection conn(f.daemon.endpoint());
  check_all(conn);
}

TEST_CASE("daemon: --help prints usage, a missing --data-dir or a bad --map-size is refused", "[replica][daemon]") {
  TempDir tmp;
  {
    cli::Process help({test::replica_binary(), "--help"}, tmp.sub("help.log"));
    auto status = help.wait(kExitTimeoutMs);
    INFO(help.log());
    CHECK(exited_with(status, 0));
    CHECK_THAT(help.log(), Catch::Contains("Usage") && Catch::Contains("--data-dir") && Catch::Contains("--map-size"));
  }
  {
    cli::Process missing({test::replica_binary(), "--listen", "tcp://127.0.0.1:1"}, tmp.sub("missing.log"));
    auto status = missing.wait(kExitTimeoutMs);
    INFO(missing.log());
    REQUIRE(status);
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) != 0);
    CHECK_THAT(missing.log(), Catch::Contains("--data-dir"));
  }
  {
    cli::Process bad_size({test::replica_binary(), "--data-dir", tmp.sub("d"), "--map-size", "lots"},
                           tmp.sub("bad_size.log"));
    auto status = bad_size.wait(kExitTimeoutMs);
    INFO(bad_size.log());
    REQUIRE(status);
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) != 0);
    CHECK_THAT(bad_size.log(), Catch::Contains("--map-size"));
  }
}

TEST_CASE("daemon: settings come from a config file, and flags override it", "[replica][daemon]") {
  TempDir tmp;
  std::string endpoint = "tcp://127.0.0.1:" + std::to_string(cli::free_port());
  {
    std::ofstream config(tmp.sub("replica.toml"));
    config << "data-dir = \"" << tmp.sub("data") << "\"\n"
           << "listen = \"" << endpoint << "\"\n"
           << "max-value-bytes = 16\n"
           << "insecure = true\n";
  }
  std::string other = "tcp://127.0.0.1:" + std::to_string(cli::free_port());
  cli::Process daemon({test::replica_binary(), "--config", tmp.sub("replica.toml"), "--listen", other},
                        tmp.sub("daemon.log"));
  ReplicaConnection conn(other);
  auto ping = conn.call(ping_req(), 10000);
  INFO(daemon.log());
  REQUIRE(ping.is_ok());
  // The file's value limit holds: a 17-byte value is too large.
  auto reply = conn.call(write_req("k", std::string(17, 'v'), ts_now(0)));
  REQUIRE(reply.is_ok());
  CHECK(reply.value().status.code() == Code::kTooLarge);
  CHECK(std::filesystem::exists(tmp.sub("data") + "/data.mdb"));
}

// A cluster file and key file for a replica that checks sequencers.
struct KeyedCluster {
  KeyedCluster() {
    std::ofstream(tmp.sub("cluster.key")) << key.to_hex() << "\n";
    std::ofstream(tmp.sub("cluster.toml")) << "group = \"it-1\"\nkey_file = \"cluster.key\"\n"
                                           << "[[lockd]]\nid = 1\nendpoint = \"tcp://127.0.0.1:1\"\n"
                                           << "[[replica]]\nendpoint = \"tcp://127.0.0.1:2\"\n";
  }
  std::string sign(const std::string& lock, uint64_t token, const ClusterKey& with) const {
    return sign_sequencer({"it-1", lock, LockMode::kExclusive, token}, with);
  }
  TempDir tmp;
  ClusterKey key = ClusterKey::generate();
};

Code exit_code_and_log(const std::vector<std::string>& args, const std::string& log, std::string* text) {
  cli::Process p(args, log);
  auto status = p.wait(kExitTimeoutMs);
  *text = p.log();
  INFO(*text);
  REQUIRE(status);
  REQUIRE(WIFEXITED(*status));
  return WEXITSTATUS(*status) == 0 ? Code::kOk : WEXITSTATUS(*status) == 1 ? Code::kBadRequest : Code::kInternal;
}

TEST_CASE("daemon: with the cluster key, it refuses forged sequencers and accepts signed ones",
          "[replica][daemon][sequencer]") {
  KeyedCluster cluster;
  ReplicaProcess daemon(cluster.tmp.sub("data"), {"--cluster", cluster.tmp.sub("cluster.toml")});
  ReplicaConnection conn(daemon.endpoint());
  const ClusterKey forger = ClusterKey::generate();
  const uint64_t huge = uint64_t{1} << 63;

  ReplicaReply forged_fence = call(conn, with_sequencer(fence_req("L", huge), cluster.sign("L", huge, forger)));
  CHECK(forged_fence.status.code() == Code::kBadSequencer);
  CHECK_THAT(forged_fence.status.message(), Catch::Contains("signature check"));
  CHECK(call(conn, fence_req("L", 5)).status.code() == Code::kBadSequencer);
  ReplicaReply forged_write =
      call(conn, with_sequencer(write_req("k", "evil", ts_now(huge), "L"), cluster.sign("L", huge, forger)));
  CHECK(forged_write.status.code() == Code::kBadSequencer);
  CHECK(call(conn, write_req("k", "evil", ts_now(5), "L")).status.code() == Code::kBadSequencer);
  ReplicaReply nothing = call(conn, read_req("k"));
  CHECK(nothing.status.is_ok());
  CHECK(nothing.versions.empty());

  ReplicaReply fenced = call(conn, with_sequencer(fence_req("L", 5), cluster.sign("L", 5, cluster.key)));
  INFO(fenced.status.to_string());
  // A cluster file without replica_key_file: the replica reads the cluster key, and says what that means.
  CHECK_THAT(daemon.process().log(), Catch::Contains("so this replica reads the cluster key"));
  CHECK(fenced.status.is_ok());
  CHECK(fenced.floor == 5);
  write_ok(conn, "plain", "v", ts_now(0), "");  // unfenced: no sequencer needed
  ReplicaReply signed_write =
      call(conn, with_sequencer(write_req("k", "good", ts_now(5), "L"), cluster.sign("L", 5, cluster.key)));
  INFO(signed_write.status.to_string());
  CHECK(signed_write.status.is_ok());
  CHECK(read_value(conn, "k") == "good");
  CHECK_THAT(daemon.process().log(), Catch::Contains("sequencer of lock group 'it-1'"));
  stop(daemon);
}

TEST_CASE("daemon: it keeps the newest config certificate through a SIGKILL, and holds requests to it",
          "[replica][daemon][config]") {
  KeyedCluster cluster;
  ReplicaProcess daemon(cluster.tmp.sub("data"), {"--cluster", cluster.tmp.sub("cluster.toml")});
  auto certificate = [&](uint64_t version, const ClusterKey& key) {
    wire::ReplicaSet set{.version = version,
                         .replicas = {{1, "tcp://127.0.0.1:2"}, {2, "tcp://127.0.0.1:3"}, {3, "tcp://127.0.0.1:4"}},
                         .write_quorum = 2,
                         .read_quorum = 2};
    return sign_config_certificate(SequencerSigner(key, "it-1"), set);
  };
  auto install = [&](ReplicaConnection& conn, const std::string& text) {
    wire::ReplicaRequest r;
    r.body = wire::InstallConfigRequest{text};
    return call(conn, r);
  };
  auto naming = [](wire::ReplicaRequest r, uint64_t config) {
    r.config = config;
    return r;
  };
  {
    ReplicaConnection conn(daemon.endpoint());
    write_ok(conn, "before", "v", ts_now(0), "");  // no certificate yet: version 0 is served
    ReplicaReply forged = install(conn, certificate(9, ClusterKey::generate()));
    CHECK(forged.status.code() == Code::kBadRequest);
    CHECK_THAT(forged.status.message(), Catch::Contains("signature"));
    ReplicaReply installed = install(conn, certificate(2, cluster.key));
    INFO(installed.status.to_string());
    REQUIRE(installed.status.is_ok());
    CHECK(installed.config == certificate(2, cluster.key));
  }
  daemon.process().kill();  // SIGKILL, right after the install was answered
  daemon.restart();
  ReplicaConnection conn(daemon.endpoint());
  ReplicaReply stale = call(conn, write_req("k", "old file's list", ts_now(0), ""));
  CHECK(stale.status.code() == Code::kStaleConfig);
  CHECK(stale.config == certificate(2, cluster.key));
  CHECK(call(conn, naming(read_req("before"), 3)).status.code() == Code::kUnknownConfig);
  ReplicaReply read = call(conn, naming(read_req("before"), 2));
  REQUIRE(read.status.is_ok());
  CHECK(read.versions.size() == 1);
  CHECK(call(conn, naming(write_req("k", "v", ts_now(0), ""), 2)).status.is_ok());
  stop(daemon);
}

TEST_CASE("daemon: with a replica key of its own it never reads the cluster key, and nothing its host holds "
          "signs a sequencer",
          "[replica][daemon][sequencer]") {
  TempDir tmp;
  const ClusterKey lock_group_key = ClusterKey::generate();  // on the lockd hosts only
  const ClusterKey replica_key = ClusterKey::generate();
  std::ofstream(tmp.sub("replica.key")) << replica_key.to_hex() << "\n";
  std::ofstream(tmp.sub("cluster.toml")) << "group = \"it-1\"\nkey_file = \"not-on-this-host/cluster.key\"\n"
                                         << "sequencer_public_key = \""
                                         << SequencerSigner(lock_group_key, "it-1").public_key() << "\"\n"
                                         << "replica_key_file = \"replica.key\"\n"
                                         << "[[lockd]]\nid = 1\nendpoint = \"tcp://127.0.0.1:1\"\n"
                                         << "[[replica]]\nendpoint = \"tcp://127.0.0.1:2\"\n";
  ReplicaProcess daemon(tmp.sub("data"), {"--cluster", tmp.sub("cluster.toml")});
  ReplicaConnection conn(daemon.endpoint());
  auto fence_with = [&](const ClusterKey& key, uint64_t token) {
    return call(conn, with_sequencer(fence_req("L", token),
                                     SequencerSigner(key, "it-1").sign({"it-1", "L", LockMode::kExclusive, token})));
  };
  // What the replica host holds (its replica key) signs nothing the replica takes.
  ReplicaReply minted = fence_with(replica_key, uint64_t{1} << 62);
  CHECK(minted.status.code() == Code::kBadSequencer);
  CHECK_THAT(minted.status.message(), Catch::Contains("signature check"));
  // The lock group's grant is checked with the public key alone.
  ReplicaReply granted = fence_with(lock_group_key, 7);
  INFO(granted.status.to_string());
  CHECK(granted.status.is_ok());
  CHECK(granted.floor == 7);
  // Its receipts are made with the replica key.
  ReplicaReply written =
      call(conn, with_sequencer(write_req("k", "v", ts_now(7), "L"),
                                SequencerSigner(lock_group_key, "it-1").sign({"it-1", "L", LockMode::kExclusive, 7})));
  REQUIRE(written.status.is_ok());
  CHECK(written.receipts.size() == 1);
  CHECK_THAT(daemon.process().log(), !Catch::Contains("reads the cluster key"));
}

TEST_CASE("daemon: without a cluster file it starts only with --insecure", "[replica][daemon][sequencer]") {
  TempDir tmp;
  cli::Process bare({test::replica_binary(), "--data-dir", tmp.sub("d"), "--listen",
                       "tcp://127.0.0.1:" + std::to_string(cli::free_port())},
                      tmp.sub("bare.log"));
  auto status = bare.wait(kExitTimeoutMs);
  INFO(bare.log());
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 1);
  CHECK_THAT(bare.log(), Catch::Contains("no cluster file") && Catch::Contains("--insecure"));
  CHECK_FALSE(std::filesystem::exists(tmp.sub("d")));  // refused before it touched anything
}

TEST_CASE("daemon: on a cluster file without identities, so plaintext links, it starts only with --insecure",
          "[replica][daemon][security]") {
  KeyedCluster cluster;
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(cli::free_port());
  std::vector<std::string> argv = {
      test::replica_binary(),         "--data-dir", cluster.tmp.sub("d"), "--listen", endpoint, "--cluster",
      cluster.tmp.sub("cluster.toml")};
  std::string log;
  CHECK(exit_code_and_log(argv, cluster.tmp.sub("plain.log"), &log) == Code::kBadRequest);  // exit status 1
  CHECK_THAT(log, Catch::Contains("lists no identities") && Catch::Contains("--insecure"));
  CHECK_FALSE(std::filesystem::exists(cluster.tmp.sub("d")));  // refused before it touched anything

  argv.push_back("--insecure");
  cli::Process daemon(argv, cluster.tmp.sub("daemon.log"));
  ReplicaConnection conn(endpoint);
  auto ping = conn.call(ping_req(), 10000);
  INFO(daemon.log());
  REQUIRE(ping.is_ok());
  CHECK_THAT(daemon.log(), Catch::Contains("INSECURE (--insecure): plaintext links"));
  // Its sequencer checks stay: only the links are plaintext.
  CHECK(call(conn, fence_req("L", 5)).status.code() == Code::kBadSequencer);
  const ReplicaReply stats = call(conn, {1, wire::StatsRequest{}});
  REQUIRE(stats.stats);
  CHECK_FALSE(stats.stats->insecure);
}

TEST_CASE("daemon: --insecure takes any fenced write, says so in its log and its stats", "[replica][daemon][sequencer]") {
  Fixture f;  // started --insecure, as every keyless test replica is
  CHECK(call(f.conn, with_sequencer(fence_req("L", 5), "ps2.not.genuine")).status.is_ok());
  write_ok(f.conn, "k", "v", ts_now(5), "L");
  CHECK_THAT(f.daemon.process().log(), Catch::Contains("INSECURE") && Catch::Contains("not authenticated"));
  // Log lines carry their time with its zone (ISO 8601).
  CHECK(std::regex_search(f.daemon.process().log(),
                          std::regex(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d palisade-replica)")));
  const ReplicaReply stats = call(f.conn, {1, wire::StatsRequest{}});
  REQUIRE(stats.stats);
  CHECK(stats.stats->insecure);
}

TEST_CASE("daemon: with a cluster key its stats do not say insecure", "[replica][daemon][sequencer]") {
  KeyedCluster cluster;
  test::ReplicaProcess daemon(cluster.tmp.sub("data"), {"--cluster", cluster.tmp.sub("cluster.toml")});
  ReplicaConnection conn(daemon.endpoint());
  const ReplicaReply stats = call(conn, {1, wire::StatsRequest{}});
  REQUIRE(stats.stats);
  CHECK_FALSE(stats.stats->insecure);
  stop(daemon);
}

TEST_CASE("daemon: an unreadable key or cluster file stops it with a clear error", "[replica][daemon][sequencer]") {
  KeyedCluster cluster;
  const std::string bin = test::replica_binary();
  const std::string data = cluster.tmp.sub("data");
  std::ofstream(cluster.tmp.sub("bad.key")) << "not a key\n";
  std::ofstream(cluster.tmp.sub("notakey.toml"))
      << "group = \"it-1\"\nkey_file = \"bad.key\"\n"
      << "[[lockd]]\nid = 1\nendpoint = \"tcp://127.0.0.1:1\"\n[[replica]]\nendpoint = \"tcp://127.0.0.1:2\"\n";
  std::ofstream(cluster.tmp.sub("bad.toml")) << "group = \"it-1\"\nkey_file = \"absent.key\"\n"
                                             << "[[lockd]]\nid = 1\nendpoint = \"tcp://127.0.0.1:1\"\n[[replica]]\nendpoint = \"tcp://127.0.0.1:2\"\n";
  std::ofstream(cluster.tmp.sub("noreplicakey.toml"))
      << "group = \"it-1\"\nkey_file = \"cluster.key\"\nreplica_key_file = \"absent-replica.key\"\n"
      << "sequencer_public_key = \"" << SequencerSigner(cluster.key, "it-1").public_key() << "\"\n"
      << "[[lockd]]\nid = 1\nendpoint = \"tcp://127.0.0.1:1\"\n[[replica]]\nendpoint = \"tcp://127.0.0.1:2\"\n";
  std::ofstream(cluster.tmp.sub("nokey.toml")) << "group = \"it-1\"\n"
                                               << "[[lockd]]\nid = 1\nendpoint = \"tcp://127.0.0.1:1\"\n[[replica]]\nendpoint = \"tcp://127.0.0.1:2\"\n";
  std::ofstream(cluster.tmp.sub("noreplicas.toml"))
      << "group = \"it-1\"\nkey_file = \"cluster.key\"\n[[lockd]]\nid = 1\nendpoint = \"tcp://127.0.0.1:1\"\n";
  struct Case {
    const char* name;
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"missing cluster file", {"--cluster", cluster.tmp.sub("absent.toml")}, "cannot read cluster file"},
      {"cluster file naming a missing key file", {"--cluster", cluster.tmp.sub("bad.toml")}, "absent.key"},
      {"cluster file naming a key file that holds no key", {"--cluster", cluster.tmp.sub("notakey.toml")}, "bad.key"},
      {"cluster file naming no key file",
       {"--cluster", cluster.tmp.sub("nokey.toml")},
       "names no replica_key_file or key_file"},
      {"cluster file naming a missing replica key file",
       {"--cluster", cluster.tmp.sub("noreplicakey.toml")},
       "absent-replica.key"},
      {"cluster file naming only the lock group, which does not answer (for 10 s)",
       {"--cluster", cluster.tmp.sub("noreplicas.toml")},
       "lists no [[replica]], and the lock group gave no replica set: no lock group node answered get_replicas"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      std::vector<std::string> argv = {bin, "--data-dir", data, "--listen",
                                       "tcp://127.0.0.1:" + std::to_string(cli::free_port())};
      argv.insert(argv.end(), c.args.begin(), c.args.end());
      argv.push_back("--insecure");  // the file is plaintext: the key is what fails
      std::string log;
      CHECK(exit_code_and_log(argv, cluster.tmp.sub("daemon.log"), &log) == Code::kBadRequest);  // exit status 1
      CHECK_THAT(log, Catch::Contains(c.says));
    }
  }
  SECTION("the retired --key-file, or --key without --cluster, is a usage error") {
    for (const auto& [extra, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"--insecure", "--key-file", cluster.tmp.sub("cluster.key")}, "--key-file"},
             {{"--insecure", "--key", cluster.tmp.sub("cluster.key")}, "--cluster"}}) {
      std::vector<std::string> argv = {bin, "--data-dir", data};
      argv.insert(argv.end(), extra.begin(), extra.end());
      std::string log;
      CHECK(exit_code_and_log(argv, cluster.tmp.sub("usage.log"), &log) != Code::kOk);
      CHECK_THAT(log, Catch::Contains(says));
    }
  }
  SECTION("--help documents the options") {
    std::string log;
    CHECK(exit_code_and_log({bin, "--help"}, cluster.tmp.sub("help.log"), &log) == Code::kOk);
    CHECK_THAT(log, Catch::Contains("--cluster") && Catch::Contains("--key") && Catch::Contains("--insecure") &&
                        Catch::Contains("any token") && Catch::Contains("sequencer_public_key"));
    CHECK_THAT(log, !Catch::Contains("--key-file") && !Catch::Contains("--write-quorum"));
  }
}

}  // namespace
}  // namespace palisade
