// CurveZMQ in the transport: key files (their mode, their fields, a key pair
// that belongs together) and routers whose ZAP handler admits only the keys on
// its allow-list, on real sockets over loopback TCP.
#include <sys/stat.h>
#include <zmq.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "base/temp_dir.h"
#include "transport/curve_keys.h"
#include "transport/transport.h"
#include "transport/zap_handler.h"

namespace palisade::transport {
namespace {

void write_text(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  REQUIRE(::chmod(path.c_str(), mode) == 0);
}

TEST_CASE("curve keys: a key file written is read back, with mode 0600", "[transport]") {
  TempDir dir;
  const KeyFile file{"alice", generate_curve_keys()};
  REQUIRE(is_z85_key(file.keys.public_key));
  REQUIRE(is_z85_key(file.keys.secret_key));
  REQUIRE(write_key_file(dir.sub("alice.key"), file).is_ok());
  struct stat st {};
  REQUIRE(::stat(dir.sub("alice.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto read = read_key_file(dir.sub("alice.key"));
  REQUIRE(read.is_ok());
  CHECK(read.value().identity == "alice");
  CHECK(read.value().keys.public_key == file.keys.public_key);
  CHECK(read.value().keys.secret_key == file.keys.secret_key);
  // Never replaced: the old secret would be lost.
  Status again = write_key_file(dir.sub("alice.key"), {"alice", generate_curve_keys()});
  CHECK(again.code() == Code::kBadRequest);
  CHECK_THAT(again.message(), Catch::Contains("exists already"));
  CHECK(read_key_file(dir.sub("alice.key")).value().keys.secret_key == file.keys.secret_key);
}

TEST_CASE("curve keys: a key file others may read is refused, saying how to fix it", "[transport]") {
  TempDir dir;
  const std::string path = dir.sub("k");
  write_text(path, key_file_text({"alice", generate_curve_keys()}), 0644);
  auto read = read_key_file(path);
  REQUIRE_FALSE(read.is_ok());
  CHECK_THAT(read.status().message(), Catch::Contains("mode 0644") && Catch::Contains("chmod 600 " + path));
  REQUIRE(::chmod(path.c_str(), 0640) == 0);
  CHECK_FALSE(read_key_file(path).is_ok());
  REQUIRE(::chmod(path.c_str(), 0400) == 0);
  CHECK(read_key_file(path).is_ok());
}

TEST_CASE("curve keys: malformed key files get errors that name the problem", "[transport]") {
  const CurveKeyPair keys = generate_curve_keys();
  const CurveKeyPair other = generate_curve_keys();
  const std::string id = "identity = \"alice\"\n";
  const std::string pub = "public-key = \"" + keys.public_key + "\"\n";
  const std::string sec = "secret-key = \"" + keys.secret_key + "\"\n";
  struct Case {
    std::string text;
    std::string says;
  };
  for (const Case& c : {
           Case{pub + sec, "no 'identity'"},
           Case{id + sec, "no 'public-key'"},
           Case{id + pub, "no 'secret-key'"},
           Case{id + id + pub + sec, "line 2: 'identity' given twice"},
           Case{id + pub + sec + "colour = \"blue\"\n", "line 4: unknown field 'colour'"},
           Case{id + pub + sec + "secret\n", "line 4: expected name = \"value\""},
           Case{"identity = alice\n" + pub + sec, "must be a plain \"quoted\" string"},
           Case{"identity = \"-alice\"\n" + pub + sec, "'-alice' is not an identity name"},
           Case{id + "public-key = \"short\"\n" + sec, "public-key is not 40 characters of Z85"},
           Case{id + pub + "secret-key = \"ab\"cd\"\n", "must be a plain"},
           Case{id + pub + "secret-key = \"" + std::string(40, '~') + "\"\n", "secret-key is not 40 characters"},
           Case{id + "public-key = \"" + other.public_key + "\"\n" + sec, "is not the secret key's"},
       }) {
    INFO(c.text);
    auto parsed = parse_key_file(c.text, "k.key");
    REQUIRE_FALSE(parsed.is_ok());
    CHECK_THAT(parsed.status().message(), Catch::StartsWith("key file k.key: ") && Catch::Contains(c.says));
  }
  // Comments, blank lines and spaces are fine.
  auto ok = parse_key_file("# mine\n\n  " + id + pub + "\t" + sec, "k.key");
  CHECK(ok.is_ok());
}

// A ROUTER under CURVE with a ZAP handler, and dealers that connect to it.
struct CurveServer {
  zmq::context_t ctx;
  CurveKeyPair keys = generate_curve_keys();
  ZapHandler zap;
  zmq::socket_t router;
  std::string endpoint;

  explicit CurveServer(AllowList allowed) : zap(ctx, std::move(allowed)) {
    router = make_router(ctx, "tcp://127.0.0.1:*", {.curve = CurveOptions{.keys = keys, .zap = &zap}});
    endpoint = router.get(zmq::sockopt::last_endpoint);
  }

  zmq::socket_t dealer(std::optional<CurveKeyPair> client_keys, std::string server_key = "") {
    SocketOptions o{.queue_until_connected = true};
    if (client_keys)
      o.curve = CurveOptions{.keys = *client_keys, .server_key = server_key.empty() ? keys.public_key : server_key};
    return make_dealer(ctx, endpoint, o);
  }

  // The next message within 5 s (it comes at once when the handshake passed).
  std::optional<Routed> receive() {
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::seconds(5)) == 0) return std::nullopt;
    return try_recv_routed(router);
  }

  // A socket that receives an event for each handshake the router fails.
  zmq::socket_t watch_handshake_failures() {
    static int n = 0;
    const std::string endpoint = "inproc://curve-test-monitor-" + std::to_string(++n);
    REQUIRE(zmq_socket_monitor(router.handle(), endpoint.c_str(),
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                   ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0);
    zmq::socket_t monitor(ctx, zmq::socket_type::pair);
    monitor.connect(endpoint);
    return monitor;
  }
  static bool event_within_5s(zmq::socket_t& monitor) {
    zmq::pollitem_t item{monitor.handle(), 0, ZMQ_POLLIN, 0};
    return zmq::poll(&item, 1, std::chrono::seconds(5)) == 1;
  }

  // Waits (up to 5 s) until the handler has refused `n` handshakes.
  bool rejected_reaches(uint64_t n) {
    for (int i = 0; i < 500 && zap.rejected() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return zap.rejected() >= n;
  }
};

bool nothing_waiting(zmq::socket_t& s) {
  zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
  return zmq::poll(&item, 1, std::chrono::milliseconds(0)) == 0;
}

TEST_CASE("curve transport: a key on the allow-list talks, named by its identity", "[transport]") {
  const CurveKeyPair alice = generate_curve_keys();
  CurveServer server({{alice.public_key, "alice"}});
  zmq::socket_t d = server.dealer(alice);
  d.send(zmq::str_buffer("hello"));
  auto got = server.receive();
  REQUIRE(got);
  CHECK(got->frame() == "hello");
  CHECK(got->user_id == "alice");
  REQUIRE(send_routed(server.router, *got, "hi alice"));
  zmq::message_t reply;
  REQUIRE(d.recv(reply));
  CHECK(reply.to_string() == "hi alice");
  CHECK(server.zap.accepted() == 1);
  CHECK(server.zap.rejected() == 0);
}

TEST_CASE("curve transport: an unknown key is refused in the handshake and counted", "[transport]") {
  const CurveKeyPair alice = generate_curve_keys();
  const CurveKeyPair mallory = generate_curve_keys();
  CurveServer server({{alice.public_key, "alice"}});
  zmq::socket_t d = server.dealer(mallory);
  d.send(zmq::str_buffer("let me in"));
  REQUIRE(server.rejected_reaches(1));
  CHECK(nothing_waiting(server.router));  // the handshake failed: no byte of it reached the router
  CHECK(server.zap.accepted() == 0);

  // A reload that lists the key lets a new connection in, under its name.
  server.zap.set_allowed({{alice.public_key, "alice"}, {mallory.public_key, "mallory"}});
  zmq::socket_t again = server.dealer(mallory);
  again.send(zmq::str_buffer("now?"));
  auto got = server.receive();
  REQUIRE(got);
  CHECK(got->frame() == "now?");
  CHECK(got->user_id == "mallory");
}

TEST_CASE("curve transport: a plaintext client never reaches a CURVE router", "[transport]") {
  const CurveKeyPair alice = generate_curve_keys();
  CurveServer server({{alice.public_key, "alice"}});
  // Wait for the handshake failure a plaintext greeting causes, then check
  // nothing was received.
  zmq::socket_t monitor = server.watch_handshake_failures();
  zmq::socket_t d = server.dealer(std::nullopt);
  d.send(zmq::str_buffer("plaintext"));
  REQUIRE(CurveServer::event_within_5s(monitor));
  CHECK(nothing_waiting(server.router));
  CHECK(server.zap.accepted() == 0);
}

TEST_CASE("curve transport: a client that expects another server's key does not connect", "[transport]") {
  const CurveKeyPair alice = generate_curve_keys();
  CurveServer server({{alice.public_key, "alice"}});
  const CurveKeyPair impostor = generate_curve_keys();
  zmq::socket_t monitor = server.watch_handshake_failures();
  // The client encrypts to a key the server does not hold: the server cannot
  // read its hello, so it never reaches the ZAP handler or the router.
  zmq::socket_t d = server.dealer(alice, impostor.public_key);
  d.send(zmq::str_buffer("to the wrong server"));
  REQUIRE(CurveServer::event_within_5s(monitor));
  CHECK(nothing_waiting(server.router));
  CHECK(server.zap.accepted() == 0);
}

TEST_CASE("curve transport: a CURVE router without a ZAP handler, or with a bad key, is refused", "[transport]") {
  zmq::context_t ctx;
  const CurveKeyPair keys = generate_curve_keys();
  CHECK_THROWS_AS(make_router(ctx, "tcp://127.0.0.1:*", {.curve = CurveOptions{.keys = keys}}), std::invalid_argument);
  CHECK_THROWS_AS(make_dealer(ctx, "tcp://127.0.0.1:1", {.curve = CurveOptions{.keys = keys, .server_key = "x"}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(
      make_dealer(ctx, "tcp://127.0.0.1:1",
                  {.curve = CurveOptions{.keys = {keys.public_key, "short"}, .server_key = keys.public_key}}),
      std::invalid_argument);
}

}  // namespace
}  // namespace palisade::transport
