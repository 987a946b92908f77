// Wires a ReplicaHandler to a ZeroMQ ROUTER socket: the palisade-replica loop.
//
// Concurrency: one thread. Each turn drains waiting messages (up to 64 requests
// each) until it holds max_batch requests or max_batch_bytes of them, applies
// them as one batch (one synced commit: group commit), then replies. While a commit syncs, new requests queue in ZeroMQ and
// form the next, larger batch.
#pragma once

#include <cstdint>
#include <string>

#include <zmq.hpp>

#include "wire/envelope.h"
#include "transport/transport.h"
#include "replica/handler.h"

namespace palisade::replica {

struct ServerOptions {
  std::string listen_endpoint = "tcp://127.0.0.1:7400";
  // The cluster's id (base/cluster_id.h): requests that name another are
  // answered wrong_cluster, unapplied. Empty: requests that name any id are.
  std::string cluster_id;
  wire::Limits limits;
  transport::SocketOptions socket;
  size_t max_batch = 1024;                      // requests per commit
  size_t max_batch_bytes = size_t{64} << 20;    // request bytes held per batch
};

class ReplicaServer {
 public:
  // Binds the socket; throws zmq::error_t when the endpoint cannot be bound.
  ReplicaServer(zmq::context_t& ctx, ReplicaHandler& handler, HybridClock& clock, ServerOptions options);

  // Serves until `stop_fd` becomes readable (a signalfd in the daemon).
  void run(int stop_fd);

  uint64_t requests_served() const { return served_; }

 private:
  void serve_batch();

  ReplicaHandler& handler_;
  HybridClock& clock_;
  ServerOptions options_;
  zmq::socket_t socket_;
  uint64_t served_ = 0;
};

}  // namespace palisade::replica
