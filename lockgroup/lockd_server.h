// Wires a LockService to ZeroMQ and LMDB: the palisade-lockd loop.
//
// One ROUTER on the node's endpoint receives both client requests and peer
// messages (peers send through one DEALER per peer); a peer's message is told
// from a client's by its MAC (lockgroup/peer_auth.h), never by what it claims. Each turn drains what is
// waiting, feeds it to the service, proposes the batched commands, commits the
// acceptor state with one sync (group commit), and only then sends the turn's
// messages and replies. Time is CLOCK_BOOTTIME, which keeps counting through a
// suspend, so a suspended master cannot believe in a lease that ran out.
//
// Concurrency: one thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "base/cluster_id.h"
#include "wire/envelope.h"
#include "transport/transport.h"
#include "lockgroup/lock_service.h"
#include "lockgroup/peer_auth.h"
#include "lockgroup/paxos_storage.h"

namespace palisade::lockgroup {

// Milliseconds of CLOCK_BOOTTIME.
uint64_t boottime_ms();

struct LockdServerOptions {
  LockServiceOptions service;
  std::string listen_endpoint;
  // The cluster's id (base/cluster_id.h); client requests that name another
  // are answered wrong_cluster. Empty: requests that name any id are.
  std::string cluster_id;
  wire::Limits limits;
  transport::SocketOptions socket;
  size_t max_batch = 4096;  // messages drained per turn
  // How long a stopping master waits, at most, for its step-down to leave.
  int stop_linger_ms = 500;
  // Catch-up messages carry snapshots of the whole lock table.
  size_t max_peer_message_bytes = size_t{64} << 20;
};

class LockdServer {
 public:
  // Binds the socket (throws zmq::error_t when it cannot) and starts the
  // service from `storage` (Status when the storage cannot be read).
  static Result<std::unique_ptr<LockdServer>> create(zmq::context_t& ctx, PaxosStorage& storage,
                                                     LockdServerOptions options);

  // Serves until `stop_fd` becomes readable (a signalfd in the daemon): ok. A
  // master then hands over (LockService::hand_over) and waits up to
  // stop_linger_ms for its step-down to leave. An error when the acceptor
  // state can no longer be read back from disk.
  Status run(int stop_fd);

  const LockService& service() const { return *service_; }
  // Messages dropped because they claim to be a peer's and their MAC does not
  // verify (forged, or signed with another key or group).
  uint64_t forged_peer_messages() const { return forged_peer_messages_; }
  // Peer messages that verified but were refused (see LockService::on_peer).
  uint64_t refused_peer_messages() const { return refused_peer_messages_; }

 private:
  LockdServer(zmq::context_t& ctx, PaxosStorage& storage, LockdServerOptions options);
  // Drains waiting messages into the service.
  void receive(uint64_t now);
  void handle(transport::Routed routed, uint64_t now);
  // A message whose MAC verified.
  void handle_peer(std::string_view body, uint64_t now);
  void count_forged(size_t bytes, std::string_view why);
  // The incarnation of the next start of the service (PaxosOptions::incarnation):
  // the wall clock in microseconds, and above the previous one of this process.
  uint64_t next_incarnation();
  // Commits, then sends; restarts the service from storage when the commit fails.
  Status finish_turn(uint64_t now);
  void send_peer(const PeerMessage& m);
  // A planned stop: a master hands over and finishes the turn that sends it.
  Status stop(uint64_t now);
  // Logs becoming master, losing it, campaigning, following a new one, and
  // what the master applied (grants, releases, closed and expired sessions).
  void log_changes(uint64_t now);

  PaxosStorage& storage_;
  LockdServerOptions options_;
  PeerAuth auth_;
  zmq::socket_t router_;
  std::map<NodeId, zmq::socket_t> peers_;
  std::unique_ptr<LockService> service_;
  std::map<uint64_t, transport::Routed> routes_;  // requests waiting for a reply
  uint64_t next_route_ = 1;
  bool was_master_ = false;
  NodeId last_hint_ = 0;
  Ballot last_campaign_ = 0;  // the epoch of the last campaign logged
  uint64_t forged_peer_messages_ = 0;
  uint64_t refused_peer_messages_ = 0;
  uint64_t last_incarnation_ = 0;
  uint64_t next_stuck_log_ms_ = 0;  // when to say again that the node is stuck at the top round
};

}  // namespace palisade::lockgroup
