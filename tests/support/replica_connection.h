// A blocking test client for one palisade-replica: a DEALER socket that sends a
// request and waits for its reply, with a timeout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "common/replica_protocol.h"

namespace palisade::test {

class ReplicaConnection {
 public:
  explicit ReplicaConnection(const std::string& endpoint);

  // Sends `request` (its id is replaced by a fresh one) and returns the reply;
  // Timeout when none comes within `timeout_ms`.
  Result<wire::ReplicaReply> call(wire::ReplicaRequest request, int timeout_ms = 5000);
  // Sends arbitrary frames and returns the next decoded reply.
  Result<wire::ReplicaReply> call_raw(const std::vector<std::string>& frames, int timeout_ms = 5000);

 private:
  Result<wire::ReplicaReply> receive(int timeout_ms);

  zmq::context_t ctx_;
  zmq::socket_t socket_;
  uint64_t next_id_ = 1;
  wire::Limits limits_;
};

// Request builders.
wire::ReplicaRequest write_req(std::string key, std::string value, FencedTimestamp ts, std::string lock = "");
wire::ReplicaRequest delete_req(std::string key, FencedTimestamp ts, std::string lock = "");
wire::ReplicaRequest fence_req(std::string lock, uint64_t token);
wire::ReplicaRequest commit_req(std::string key, FencedTimestamp ts);
wire::ReplicaRequest purge_req(std::string key, FencedTimestamp ts);
wire::ReplicaRequest read_req(std::string key);
wire::ReplicaRequest ping_req();

// A timestamp with `token` at the current wall-clock millisecond plus `logical`.
FencedTimestamp ts_now(uint64_t token, uint64_t logical = 0);

}  // namespace palisade::test
