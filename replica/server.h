// Wires a ReplicaHandler to a ZeroMQ ROUTER socket: the palisade-replica loop,
// a shell over ReplicaDriver (replica/replica_driver.h), which owns the turn.
//
// Concurrency: one thread (but metrics(), see there). Each turn drains waiting messages (up to 64 requests
// each) into the driver until it holds max_batch requests or max_batch_bytes of
// them, applies them as one batch (one synced commit: group commit), then
// replies. While a commit syncs, new requests queue in ZeroMQ and form the
// next, larger batch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "base/log_limiter.h"
#include "wire/envelope.h"
#include "transport/transport.h"
#include "replica/handler.h"
#include "replica/replica_driver.h"
#include "replica/replica_metrics.h"

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
  std::optional<Permissions> permissions;  // ReplicaDriverOptions::permissions
  // Negative control of the fault campaign (palisade-replica-broken, never
  // the installed daemon): ReplicaDriverOptions::broken_ack_writes_without_storing.
  bool broken_ack_writes_without_storing = false;
};

class ReplicaServer final : ReplicaHost {
 public:
  // Binds the socket; throws zmq::error_t when the endpoint cannot be bound.
  ReplicaServer(zmq::context_t& ctx, ReplicaHandler& handler, HybridClock& clock, ServerOptions options);

  // Serves until `stop_fd` becomes readable (a signalfd in the daemon).
  // Between batches, when `reload_fd` (a SIGHUP signalfd; -1: none) becomes
  // readable, it is drained and `reload` runs.
  void run(int stop_fd, int reload_fd = -1, const std::function<void()>& reload = {});
  // A config certificate from elsewhere (ConfigRefresh, another thread): the
  // loop installs it between turns, within a second, as install_config would.
  void offer_config(std::string certificate);
  // What each identity may do from now on (a reload): ReplicaDriverOptions::permissions.
  void set_permissions(std::optional<Permissions> permissions) { driver_.set_permissions(std::move(permissions)); }

  uint64_t requests_served() const { return driver_.requests_served(); }
  // What it counts, for --metrics-listen; its registry and health may be read from any thread.
  ReplicaMetrics& metrics() { return metrics_; }

 private:
  void serve_batch();
  void install_offered();
  // ReplicaHost: `route` indexes peers_.
  void reply(uint64_t route, std::vector<std::string> replies) override;
  void refused(uint64_t request_id, size_t bytes, const Status& why, std::string_view type) override;
  void failed(uint64_t request_id, const Status& why) override;
  void fenced(const wire::WriteRequest& write, uint64_t floor) override;
  void floor_raised(std::string_view lock, uint64_t /*floor*/) override { metrics_.floor_raised(lock); }
  void answered(const wire::ReplicaRequest& request, const wire::ReplicaReply& reply) override {
    metrics_.answered(request, reply, std::chrono::steady_clock::now() - turn_start_);
  }

  ServerOptions options_;
  ReplicaHandler& handler_;  // whether it refuses writes, for /readyz; offered certificates
  std::mutex offered_mu_;
  std::optional<std::string> offered_;  // guarded by offered_mu_
  ReplicaMetrics metrics_;
  zmq::socket_t socket_;
  ReplicaDriver driver_;
  std::vector<transport::Routed> peers_;  // the senders of the turn's messages
  std::chrono::steady_clock::time_point turn_start_;  // when serve_batch() began taking messages in
  // Each counts its events and logs a few (base/log_limiter.h): a client that
  // resends a refused request, a zombie holder that writes on or a failing
  // disk cannot flood the log.
  LogLimiter refused_log_;
  LogLimiter failed_log_;
  LogLimiter fenced_log_;
};

}  // namespace palisade::replica
