// The ZAP handler (ZeroMQ's authentication protocol, RFC 27): ZeroMQ asks it,
// for every CURVE handshake on a router of its context, whether the peer's
// public key may connect. A key on the allow-list gets in, under the identity
// the list names (what Routed::user_id then says of each of its messages);
// any other key is refused in the handshake, so the daemon's code never sees
// a byte from it, and counted. One per ZeroMQ context; its own thread answers.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <zmq.hpp>

namespace palisade::transport {

// The ZAP domain palisade's CURVE routers name.
inline constexpr const char* kZapDomain = "palisade";

// Public key (Z85) -> identity name. An identity may have several keys (a key
// being rotated in beside the old one).
using AllowList = std::map<std::string, std::string>;

class ZapHandler {
 public:
  // Binds inproc://zeromq.zap.01 in `ctx` (throws zmq::error_t when another
  // handler holds it) and starts answering.
  ZapHandler(zmq::context_t& ctx, AllowList allowed);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Replaces the allow-list (a reload): later handshakes see it; connections
  // already made stay.
  void set_allowed(AllowList allowed);

  uint64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }
  // Handshakes refused: an unknown key, another mechanism, a malformed request.
  uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }

 private:
  void run();
  void answer(zmq::socket_t& socket);

  zmq::socket_t socket_;  // REP, used by the thread only
  std::mutex mu_;
  AllowList allowed_;  // guarded by mu_
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> rejected_{0};
  std::thread thread_;
};

}  // namespace palisade::transport
