// The palisade-lockd turn, without sockets or disk: the one driver of a
// LockService, run by the daemon (LockdServer, on ZeroMQ and LMDB) and by the
// simulator (tests/sim/lock_sim.cc, on its network and MemoryPaxosStorage).
//
// It tells a peer's frame from a client's by its MAC (never by what it claims),
// drops and counts forged peer frames, answers malformed requests and requests
// of another cluster with a refusal, and feeds the rest to the service. A turn
// ends in a sync, in two phases so that the simulator can give the disk a
// latency: begin_sync() sends the master's early accepts, finish_sync()
// commits the acceptor state and only then sends the turn's peer messages and
// replies; when the commit fails it restarts the service from what is on disk.
//
// Concurrency: one thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/log_limiter.h"
#include "base/permissions.h"
#include "wire/envelope.h"
#include "lockgroup/lock_service.h"
#include "lockgroup/paxos_storage.h"
#include "lockgroup/peer_auth.h"

namespace palisade::lockgroup {

// What the driver needs from the process that runs it.
class LockdHost {
 public:
  virtual ~LockdHost() = default;
  // A sealed peer message; may be dropped (Paxos resends what matters).
  virtual void send_peer(NodeId to, std::string bytes) = 0;
  // The reply to the request that on_frame gave `route`.
  virtual void reply(uint64_t route, std::string bytes) = 0;
  // The service restarted from disk: no request waiting now gets a reply.
  virtual void forget_routes() = 0;
  // The reply to the request that on_frame gave `route`, about to be sent
  // (reply() follows): the daemon counts it.
  virtual void answered(uint64_t /*route*/, const wire::LockReply& /*reply*/) {}
  // The incarnation of the next start of the service (PaxosOptions::incarnation):
  // above every earlier one of this node, across restarts of the process too.
  virtual uint64_t next_incarnation() = 0;
};

struct LockdDriverOptions {
  LockServiceOptions service;  // its paxos.incarnation comes from the host
  // The cluster's id (base/cluster_id.h); client requests that name another
  // are answered wrong_cluster. Empty: requests that name any id are.
  std::string cluster_id;
  wire::Limits limits;
  // Catch-up messages carry snapshots of the whole lock table.
  size_t max_peer_message_bytes = size_t{64} << 20;
  // Over CURVE: the identity each node of the group serves as. A peer message
  // is then taken only from the identity of the node its `from` names; empty
  // (plaintext links): the MAC alone decides.
  std::map<NodeId, std::string> peer_identities;
  // Over CURVE: what each identity may do (base/permissions.h). An acquire of
  // a lock the sender's roles do not cover is answered permission_denied,
  // ungranted, and only admins see the whole status. Empty (plaintext links):
  // nothing is checked.
  std::optional<Permissions> permissions{};
  // Negative controls for the simulator: the checkers must object.
  // Peer messages and replies leave in begin_sync, before the journal sync.
  bool broken_reply_before_sync = false;
  // Acquires reach the service with lock_delay_ms 0.
  bool broken_ignore_lock_delay = false;
};

// What became of one frame.
enum class FrameOutcome {
  kPeerTaken,  // a peer's message, taken
  kPeerStale,  // a peer's message, dropped as not newer than the last from its sender
  kPeerMisaddressed,  // a peer's message for another node: refused
  kPeerImpostor,  // a peer's message sent by another identity than its `from` node's: refused
  kPeerMalformed,  // its MAC verifies but it does not decode: refused
  kPeerRefused,  // refused by the service's checks (LockService::on_peer)
  kForged,  // names a peer message type without a MAC that verifies: dropped
  kRequestRefused,  // a malformed request, or one of another cluster: answered now
  kRequest,  // a client's request, fed to the service: answered through the host
};

struct FrameResult {
  FrameOutcome outcome = FrameOutcome::kForged;
  uint64_t route = 0;  // kRequest: what LockdHost::reply will name
  uint64_t request_id = 0;  // the request's id, when it has one
  std::string_view type{};  // kRequest, kRequestRefused: wire::request_type, when it decoded
  std::string refusal{};  // kRequestRefused: the reply to send back
  Code refused_with = Code::kOk;  // kRequestRefused: its code
};

class LockdDriver {
 public:
  // Starts the service from `storage` (Status when it cannot be read).
  static Result<std::unique_ptr<LockdDriver>> start(LockdDriverOptions options, PaxosStorage& storage, LockdHost& host,
                                                    uint64_t now);

  // One frame from the socket; `extra_frames` when it came with more than one
  // ZeroMQ frame (a request is one); `sender`: the identity the CURVE
  // handshake proved (empty on plaintext links).
  FrameResult on_frame(std::string_view bytes, uint64_t now, bool extra_frames = false, std::string_view sender = {});
  // Replaces LockdDriverOptions::permissions (a reload): requests from now on see them.
  void set_permissions(std::optional<Permissions> permissions) { options_.permissions = std::move(permissions); }
  // Replaces LockdDriverOptions::peer_identities (a reload).
  void set_peer_identities(std::map<NodeId, std::string> identities) {
    options_.peer_identities = std::move(identities);
  }
  // Runs the service's timers when they are due.
  void tick(uint64_t now);
  // Ends the turn's input: proposes the batched commands and sends the
  // master's early accepts (they overlap its own sync). True when a sync has
  // something to make durable or to send.
  bool begin_sync(uint64_t now);
  // Commits the storage, then sends the peer messages and replies. When the
  // commit fails, drops them and restarts the service from disk; an error when
  // the disk cannot be read back.
  Status finish_sync(uint64_t now);
  // A planned stop: a master hands over and begins the sync that sends its
  // step-down (finish it before going); false when not master.
  bool stop(uint64_t now);

  const LockService& service() const { return *service_; }
  LockService& service() { return *service_; }
  // Frames that claim to be a peer's and whose MAC does not verify.
  uint64_t forged_peer_messages() const { return forged_peer_messages_.total(); }
  // Peer messages that verified but were refused.
  uint64_t refused_peer_messages() const { return refused_peer_messages_.total(); }
  // Bytes of the peer messages the service took: the log, snapshots and
  // heartbeats the others sent (a node that joins counts its catch-up here).
  uint64_t peer_bytes_taken() const { return peer_bytes_taken_; }
  // Client requests answered with a refusal before the service saw them:
  // malformed, of another cluster, or not permitted.
  uint64_t refused_requests() const { return refused_requests_.total(); }

 private:
  LockdDriver(LockdDriverOptions options, PaxosStorage& storage, LockdHost& host);
  FrameResult on_peer(std::string_view body, uint64_t now, std::string_view sender);
  FrameResult on_request(std::string_view bytes, uint64_t now, bool extra_frames, std::string_view sender);
  // Ok, or permission_denied when `sender` may not make `request`.
  Status check_permission(const wire::LockRequest& request, std::string_view sender) const;
  void count_refused(std::string_view body, const Result<PeerMessage>& peer, const Status& why, uint64_t now);
  void count_forged(size_t bytes, std::string_view why, uint64_t now);
  // Sends the early accepts; keeps the other outputs for after the sync.
  void take_outputs();
  void send_outputs();
  Status restart(uint64_t now);

  LockdDriverOptions options_;
  PaxosStorage& storage_;
  LockdHost& host_;
  PeerAuth auth_;
  std::unique_ptr<LockService> service_;
  std::vector<PeerMessage> outbox_;  // in the order taken: serials grow
  std::vector<ClientReply> replies_;
  uint64_t next_route_ = 1;
  // Each counts its events and logs a few (base/log_limiter.h): a peer, a
  // client or a disk that fails without end cannot flood the log.
  LogLimiter forged_peer_messages_;
  LogLimiter refused_peer_messages_;
  LogLimiter refused_requests_;
  LogLimiter failed_commits_;
  uint64_t peer_bytes_taken_ = 0;
};

}  // namespace palisade::lockgroup
