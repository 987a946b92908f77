// run_anti_entropy: the I/O side of the anti-entropy session. One DEALER socket
// per replica; the run (anti_entropy_run.h) decides what to send and when a
// request is late, this loop sends, seals and receives.
#include "antientropy/anti_entropy.h"

#include <chrono>
#include <map>
#include <optional>
#include <set>

#include <zmq.hpp>

#include "antientropy/anti_entropy_run.h"
#include "base/cluster_id.h"
#include "base/physical_clock.h"
#include "auth/repair_seal.h"
#include "transport/transport.h"

namespace palisade {
namespace {

using Clock = std::chrono::steady_clock;

Status validate(const AntiEntropyOptions& o, int n, int w) {
  if (o.replicas.size() < 2) return Status(Code::kBadRequest, "anti-entropy compares at least two replicas");
  if (n < static_cast<int>(o.replicas.size())) {
    return Status(Code::kBadRequest, "cluster_size " + std::to_string(n) + " is below the " +
                                         std::to_string(o.replicas.size()) + " replicas compared");
  }
  if (w < 1 || w > n || w <= n / 2) {
    return Status(Code::kBadRequest, "write quorum " + std::to_string(w) + " must be a majority of " +
                                         std::to_string(n) + " replicas");
  }
  if (o.timeout.count() <= 0) return Status(Code::kBadRequest, "timeout must be positive");
  if (!o.cluster_id.empty() && !cluster_id_from_hex(o.cluster_id)) {
    return Status(Code::kBadRequest, "cluster_id '" + o.cluster_id + "' is not 32 hex digits");
  }
  if (o.gc_grace && o.gc_grace->count() < 0) return Status(Code::kBadRequest, "gc_grace must not be negative");
  if (o.key_file.empty() != o.group.empty()) {
    return Status(Code::kBadRequest, "a repairer's seal needs both the cluster key file and the group");
  }
  std::set<std::string> seen;
  for (const auto* list : {&o.replicas, &o.targets}) {
    for (const std::string& endpoint : *list) {
      if (o.credentials && !o.credentials->server_keys.contains(endpoint)) {
        return Status(Code::kBadRequest, "the credentials name no public key for " + endpoint);
      }
      if (!seen.insert(endpoint).second) return Status(Code::kBadRequest, endpoint + " is named twice");
    }
  }
  return Status::ok();
}

uint64_t steady_ms() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count());
}

// Sends the run's install requests (every replica compared is given the
// certificate that lets the next run through) and waits, at most
// options.timeout, for their answers: a replica keeps it only when it is
// newer than its own, and the certificate proves itself.
void install_everywhere(std::vector<zmq::socket_t>& sockets, const AntiEntropyOptions& options,
                        const client::AntiEntropyRun& run) {
  size_t waiting = 0;
  for (const client::AntiEntropySend& install : run.installs()) {
    if (sockets[install.replica].send(zmq::buffer(wire::encode_request(install.request)), zmq::send_flags::dontwait)) {
      ++waiting;
    }
  }
  std::vector<zmq::pollitem_t> items;
  for (auto& s : sockets) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
  const auto deadline = Clock::now() + options.timeout;
  while (waiting > 0 && Clock::now() < deadline) {
    zmq::poll(items, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    for (size_t r = 0; r < sockets.size(); ++r) {
      zmq::message_t msg;
      while (sockets[r].recv(msg, zmq::recv_flags::dontwait)) {
        auto reply = wire::decode_reply({static_cast<const char*>(msg.data()), msg.size()}, wire::Limits{});
        if (reply.is_ok() && reply.value().id >= client::AntiEntropyRun::kFirstInstallId) --waiting;
      }
    }
  }
}

}  // namespace

Result<AntiEntropyReport> run_anti_entropy(const AntiEntropyOptions& options) {
  const int n = options.cluster_size > 0 ? options.cluster_size : static_cast<int>(options.replicas.size());
  const int w = options.write_quorum > 0 ? options.write_quorum : n / 2 + 1;
  if (Status s = validate(options, n, w); !s.is_ok()) return s;
  std::optional<RepairSeal> seal;
  if (!options.key_file.empty()) {
    auto key = ClusterKey::load(options.key_file);
    if (!key.is_ok()) return key.status();
    seal.emplace(key.value(), options.group);
  }
  SystemClock wall;
  client::AntiEntropyConfig config;
  config.replicas = static_cast<int>(options.replicas.size());
  config.cluster_size = n;
  config.write_quorum = w;
  if (options.gc_grace) config.gc_grace_ms = static_cast<uint64_t>(options.gc_grace->count());
  config.now_wall_ms = wall.now_ms();
  config.dry_run = options.dry_run;
  config.cluster_id = cluster_id_from_hex(options.cluster_id).value_or("");
  config.config = options.config;
  config.targets = static_cast<int>(options.targets.size());
  config.target_config = options.target_config;
  config.paused = options.paused;
  std::vector<std::string> endpoints = options.replicas;  // then the targets: the core's indexes
  endpoints.insert(endpoints.end(), options.targets.begin(), options.targets.end());
  client::AntiEntropyRun run({.core = config,
                              .endpoints = endpoints,
                              .timeout_ms = static_cast<uint64_t>(options.timeout.count()),
                              .config_certificate = options.config_certificate});

  zmq::context_t ctx(1);
  std::vector<zmq::socket_t> sockets;
  // Requests wait for the connection; a replica that never comes up times out.
  transport::SocketOptions socket_options{.queue_until_connected = true};
  for (const auto& endpoint : endpoints) {
    sockets.push_back(transport::make_dealer(ctx, endpoint,
                                             transport::dealer_options(socket_options, options.credentials, endpoint)));
  }
  std::vector<zmq::pollitem_t> items;
  for (auto& s : sockets) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});

  // The bytes of a request: copies and commits sealed, when the run is a repairer's.
  auto encode = [&](const client::AntiEntropySend& send) {
    std::string bytes = wire::encode_request(send.request);
    return seal && client::changes_versions(send.request.body) ? seal->seal(bytes, wall.now_ms()) : bytes;
  };
  auto last_progress = Clock::now();
  for (;;) {
    for (auto& send : run.take_sends()) {
      const std::string bytes = encode(send);
      if (sockets[send.replica].send(zmq::buffer(bytes), zmq::send_flags::dontwait)) {
        run.sent(send, bytes.size(), steady_ms());
      } else {
        run.unsent(send);
      }
    }
    if (run.done()) break;
    const uint64_t now = steady_ms();
    const uint64_t due = run.next_deadline_ms().value_or(now + 100);
    zmq::poll(items, std::chrono::milliseconds(std::min<uint64_t>(100, due > now ? due - now : 0)));
    for (size_t r = 0; r < sockets.size(); ++r) {
      zmq::message_t msg;
      while (sockets[r].recv(msg, zmq::recv_flags::dontwait)) {
        run.on_frame(static_cast<int>(r), {static_cast<const char*>(msg.data()), msg.size()});
      }
    }
    for (auto& send : run.expire(steady_ms())) {
      const std::string bytes = encode(send);
      if (sockets[send.replica].send(zmq::buffer(bytes), zmq::send_flags::dontwait)) run.resent(bytes.size());
    }
    if (options.progress && Clock::now() - last_progress >= std::chrono::milliseconds(100)) {
      last_progress = Clock::now();
      options.progress(run.report());
    }
  }
  Result<AntiEntropyReport> result = run.finish();
  if (!run.installs().empty()) {
    install_everywhere(sockets, options, run);
    if (!run.newer_config().empty() && options.newer_config) options.newer_config(run.newer_config());
  }
  if (options.progress) options.progress(run.report());
  return result;
}

}  // namespace palisade
