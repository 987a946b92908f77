// All ZeroMQ socket setup lives here, so that limits and CurveZMQ encryption
// apply to every link at once. Daemons bind ROUTER sockets; clients
// connect DEALER sockets. Internal: public headers never include this.
//
// Framing: a DEALER sends a message of one frame per request (lockd takes one
// per message, replicas up to wire::kMaxRequestsPerMessage). A ROUTER receives
// [peer identity][optional empty delimiter][frames] and answers with the same
// envelope, so REQ sockets (which add the delimiter) work as clients too.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "palisade/credentials.h"
#include "transport/curve_keys.h"

namespace palisade::transport {

class ZapHandler;

// CurveZMQ on a socket (docs/security.md): encrypted, and both ends
// authenticated by their keys.
struct CurveOptions {
  CurveKeyPair keys;  // this end's
  // Dealers: the public key of the daemon they connect to (Z85).
  std::string server_key{};
  // Routers: who may connect. Required: without a ZAP handler in its
  // context, ZeroMQ would let any key through.
  const ZapHandler* zap = nullptr;
};

struct SocketOptions {
  // Frames larger than this make ZeroMQ drop the connection before anything is
  // decoded. Set well above wire::Limits so that oversize messages usually get a
  // TooLarge reply instead; this is the hard memory bound.
  int64_t max_frame_bytes = int64_t{128} << 20;
  int high_water_mark = 10000;  // messages queued per peer before sends block or drop
  int linger_ms = 0;            // unsent messages are dropped at close
  // Dealers only: queue requests while the daemon is not connected, instead of
  // failing the send. Such a request may arrive long after its sender gave up.
  bool queue_until_connected = false;
  // Unset: plaintext. A plaintext end and a CURVE end never complete a handshake.
  std::optional<CurveOptions> curve{};
};

// `options` for a dealer to `endpoint`, over CURVE with `credentials` when
// set. Throws std::invalid_argument when they name no key for the endpoint.
SocketOptions dealer_options(SocketOptions options, const std::optional<Credentials>& credentials,
                             const std::string& endpoint);

// Throws std::invalid_argument for CURVE without a ZAP handler or with a bad key.
zmq::socket_t make_router(zmq::context_t& ctx, const std::string& bind_endpoint, const SocketOptions& options);
// Unless queue_until_connected, sends fail (EAGAIN) while the daemon is not connected.
zmq::socket_t make_dealer(zmq::context_t& ctx, const std::string& connect_endpoint, const SocketOptions& options);

// One message received on a ROUTER, with the envelope to answer it.
struct Routed {
  zmq::message_t identity;
  bool delimited = false;            // the peer is a REQ socket
  std::vector<zmq::message_t> frames;  // the message: at least one frame (maybe empty), at most max_frames
  bool too_many_frames = false;        // the peer sent more than max_frames; the rest were dropped
  std::string user_id;  // over CURVE: the identity the ZAP handler named for the peer's key; else empty

  std::string_view frame(size_t i = 0) const {
    return {static_cast<const char*>(frames[i].data()), frames[i].size()};
  }
};

// Receives one message without blocking; nullopt when none is waiting.
std::optional<Routed> try_recv_routed(zmq::socket_t& router, size_t max_frames = 1);
// Sends `payloads`, one frame each, as one message back along `to`'s envelope.
// Returns false when the peer is gone.
bool send_routed(zmq::socket_t& router, Routed& to, std::span<const std::string_view> payloads);
inline bool send_routed(zmq::socket_t& router, Routed& to, std::string_view payload) {
  return send_routed(router, to, std::span<const std::string_view>(&payload, 1));
}

// zmq::poll, except that a signal caught by a handler of the program's
// (EINTR: poll is never restarted) ends the wait early with nothing ready,
// as a timeout does, where zmq::poll throws: an application's SIGTERM or
// SIGCHLD handler must not make a call fail. Other errors throw zmq::error_t.
int poll(std::span<zmq::pollitem_t> items, std::chrono::milliseconds timeout);

// socket.recv and socket.send, except that a signal a handler caught (EINTR,
// which ZeroMQ returns even without waiting: it reads its command mailbox
// first) tries again rather than throw. false when nothing is there to
// receive, or the frame would block (with dontwait or a send timeout).
// Other errors throw zmq::error_t.
bool recv(zmq::socket_t& socket, zmq::message_t& message, zmq::recv_flags flags = zmq::recv_flags::dontwait);
bool send(zmq::socket_t& socket, zmq::const_buffer frame, zmq::send_flags flags = zmq::send_flags::dontwait);

}  // namespace palisade::transport
