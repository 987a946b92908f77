// palisade-lockd on ZeroMQ and LMDB: a socket shell over the LockdDriver
// (lockgroup/lockd_driver.h), which holds the turn itself.
//
// One ROUTER on the node's endpoint receives both client requests and peer
// messages (peers send through one DEALER per peer, made when the first
// message to that peer goes out, at the address the membership or the
// cluster file gives: set_lock_nodes reaches nodes added since). Each turn drains what is
// waiting into the driver, runs its timers, and syncs (begin_sync and
// finish_sync back to back: one commit per turn, group commit), which sends the
// turn's messages and replies through this shell. Time is CLOCK_BOOTTIME,
// which keeps counting through a suspend, so a suspended master cannot believe
// in a lease that ran out.
//
// Concurrency: one thread (but metrics(), see there).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <zmq.hpp>

#include "transport/transport.h"
#include "lockgroup/lockd_driver.h"
#include "lockgroup/lockd_metrics.h"
#include "lockgroup/paxos_storage.h"

namespace palisade::lockgroup {

// Milliseconds of CLOCK_BOOTTIME.
uint64_t boottime_ms();

// Where the lock group's nodes listen and, over CURVE, who each is: the
// cluster file's [[lockd]] entries, read at start and again at SIGHUP.
struct LockNodes {
  std::map<NodeId, std::string> endpoints;
  std::map<std::string, std::string> keys;  // over CURVE: each daemon's public key, by endpoint
  std::map<NodeId, std::string> identities;  // over CURVE: the identity each node serves as
};

struct LockdServerOptions {
  LockdDriverOptions driver;
  std::string listen_endpoint;
  transport::SocketOptions socket;  // the router's; peers' dealers take it too
  // Over CURVE: each peer's public key, by its endpoint.
  std::map<std::string, std::string> peer_keys;
  size_t max_batch = 4096;  // messages drained per turn
  // How long a stopping master waits, at most, for its step-down to leave.
  int stop_linger_ms = 500;
};

class LockdServer : private LockdHost {
 public:
  // Binds the socket (throws zmq::error_t when it cannot) and starts the
  // driver on `storage` (Status when the storage cannot be read).
  static Result<std::unique_ptr<LockdServer>> create(zmq::context_t& ctx, PaxosStorage& storage,
                                                     LockdServerOptions options);

  // Serves until `stop_fd` becomes readable (a signalfd in the daemon): ok. A
  // master then hands over (LockService::hand_over) and waits up to
  // stop_linger_ms for its step-down to leave. An error when the acceptor
  // state can no longer be read back from disk. Between turns, when
  // `reload_fd` (a SIGHUP signalfd; -1: none) becomes readable, it is drained
  // and `reload` runs.
  Status run(int stop_fd, int reload_fd = -1, const std::function<void()>& reload = {});

  const LockService& service() const { return driver_->service(); }
  // What each identity may do from now on (a reload): LockdDriverOptions::permissions.
  void set_permissions(std::optional<Permissions> permissions) { driver_->set_permissions(std::move(permissions)); }
  // The cluster file read again: peers are reached at these endpoints (unless
  // the membership names another address) with these keys, and their
  // messages taken from these identities.
  void set_lock_nodes(LockNodes nodes);
  // Messages dropped because they claim to be a peer's and their MAC does not
  // verify (forged, or signed with another key or group).
  uint64_t forged_peer_messages() const { return driver_->forged_peer_messages(); }
  uint64_t refused_requests() const { return driver_->refused_requests(); }
  // Peer messages that verified but were refused (see LockService::on_peer).
  uint64_t refused_peer_messages() const { return driver_->refused_peer_messages(); }
  // What it counts, for --metrics-listen; its registry and health may be read from any thread.
  LockdMetrics& metrics() { return metrics_; }

 private:
  LockdServer(zmq::context_t& ctx, const LockdServerOptions& options);
  // Drains waiting messages into the driver; returns how many.
  size_t receive(uint64_t now);
  // The driver's turn ends: commit, then send (or restart from disk).
  Status sync(uint64_t now);
  // A planned stop: a master hands over and finishes the turn that sends it.
  Status stop(uint64_t now);
  // Logs becoming master, losing it, campaigning, following a new one, and
  // what the master applied (`events`: grants, releases, closed and expired sessions).
  void log_changes(uint64_t now, const std::vector<LockEvent>& events);

  // The socket to `peer` at its address now, made if need be; null when the
  // peer cannot be reached (no address, no key), which is logged once.
  zmq::socket_t* peer_socket(NodeId peer);
  // Makes a socket to every node the cluster file or the membership names,
  // ahead of the first message: a dealer drops what it cannot send yet
  // (ZMQ_IMMEDIATE), and the first message to a peer is often a prepare or a
  // promise, which nobody sends again within the campaign.
  void connect_peers();
  // Logs that this node became a member or was removed.
  void log_membership();

  // LockdHost
  void send_peer(NodeId to, std::string bytes) override;
  void reply(uint64_t route, std::string bytes) override;
  void forget_routes() override { routes_.clear(); }
  void answered(uint64_t route, const wire::LockReply& reply) override;
  // The wall clock in microseconds, and above the previous one of this process.
  uint64_t next_incarnation() override;

  zmq::context_t& ctx_;
  LockdServerOptions options_;
  LockdMetrics metrics_;
  zmq::socket_t router_;
  struct Peer {
    std::string endpoint;
    zmq::socket_t socket;
  };
  std::map<NodeId, Peer> peers_;
  std::set<std::string> unreachable_logged_;  // "id endpoint" of peers already logged as unreachable
  uint64_t connected_members_version_ = 0;  // the membership connect_peers last saw
  std::unique_ptr<LockdDriver> driver_;
  // A request waiting for its reply.
  struct Waiting {
    transport::Routed routed;
    std::string_view type;  // FrameResult::type
    std::chrono::steady_clock::time_point arrived;
  };
  std::map<uint64_t, Waiting> routes_;
  bool was_master_ = false;
  std::optional<bool> was_member_;  // unset: nothing logged yet
  NodeId last_hint_ = 0;
  Ballot last_campaign_ = 0;  // the epoch of the last campaign logged
  uint64_t last_incarnation_ = 0;
  uint64_t next_stuck_log_ms_ = 0;  // when to say again that the node is stuck at the top round
};

}  // namespace palisade::lockgroup
