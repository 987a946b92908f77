// A blocking connection to one palisade-replica: a DEALER socket that sends a
// request and waits for its reply. For tools and tests that talk to one replica
// on purpose (status, inspection, fault tests); applications use QuorumStore.
// Requests queue until the connection is up, so one that timed out may still
// reach the replica later. Thread safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "palisade/credentials.h"
#include "wire/replica_protocol.h"

namespace palisade::client {

class ReplicaConnection {
 public:
  // With a ZeroMQ context of its own. Over CURVE when `credentials` are set
  // (throws std::invalid_argument when they name no key for `endpoint`).
  explicit ReplicaConnection(const std::string& endpoint, const std::optional<Credentials>& credentials = {});
  // On `ctx`, which must outlive it (many connections, one set of I/O threads).
  ReplicaConnection(zmq::context_t& ctx, const std::string& endpoint,
                    const std::optional<Credentials>& credentials = {});

  // Sends `request` (its id is replaced by a fresh one) and returns the reply;
  // Timeout when none comes within `timeout_ms`.
  Result<wire::ReplicaReply> call(wire::ReplicaRequest request, int timeout_ms = 5000);
  // Sends arbitrary frames as one message and returns the next decoded reply
  // frame (a message of several requests leaves the later replies queued).
  Result<wire::ReplicaReply> call_raw(const std::vector<std::string>& frames, int timeout_ms = 5000);

 private:
  Result<wire::ReplicaReply> receive(int timeout_ms);

  std::unique_ptr<zmq::context_t> own_ctx_;  // null when the context is borrowed
  zmq::socket_t socket_;
  uint64_t next_id_ = 1;
  wire::Limits limits_;
};

}  // namespace palisade::client
