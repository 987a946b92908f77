// run_anti_entropy: the I/O side of the anti-entropy session. One DEALER socket
// per replica; the core decides what to send, this loop sends it, hands back
// replies, times requests out, and counts the traffic.
#include "antientropy/anti_entropy.h"

#include <chrono>
#include <map>
#include <optional>
#include <set>

#include <zmq.hpp>

#include "antientropy/anti_entropy_core.h"
#include "base/cluster_id.h"
#include "base/physical_clock.h"
#include "auth/repair_seal.h"
#include "transport/transport.h"

namespace palisade {
namespace {

using Clock = std::chrono::steady_clock;

struct InFlight {
  int replica;
  Clock::time_point deadline;
  bool tree;  // a tree or leaf request: its traffic is the tree's
};

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

// Gives every replica compared (not the targets) `certificate`
// (install_config) and waits, at most options.timeout, for their answers: a
// replica keeps it only when it is newer than its own, and the certificate
// proves itself.
void install_everywhere(std::vector<zmq::socket_t>& sockets, const AntiEntropyOptions& options,
                        const std::string& certificate) {
  constexpr uint64_t kFirstId = uint64_t{1} << 62;  // far from the core's ids
  const std::string cluster = cluster_id_from_hex(options.cluster_id).value_or("");
  size_t waiting = 0;
  for (size_t r = 0; r < options.replicas.size(); ++r) {
    wire::ReplicaRequest install{kFirstId + r, wire::InstallConfigRequest{certificate}, cluster, options.config};
    if (sockets[r].send(zmq::buffer(wire::encode_request(install)), zmq::send_flags::dontwait)) ++waiting;
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
        if (reply.is_ok() && reply.value().id >= kFirstId) --waiting;
      }
    }
  }
}

// Repairs that change what replicas hold go sealed: copies and commits.
bool changes_versions(const wire::ReplicaRequestBody& body) {
  return std::holds_alternative<wire::CopyManyRequest>(body) || std::holds_alternative<wire::CommitRequest>(body) ||
         std::holds_alternative<wire::WriteRequest>(body);
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
  client::AntiEntropyCore core(config);
  AntiEntropyReport& report = core.report();

  zmq::context_t ctx(1);
  std::vector<zmq::socket_t> sockets;
  // Requests wait for the connection; a replica that never comes up times out.
  transport::SocketOptions socket_options{.queue_until_connected = true};
  std::vector<std::string> endpoints = options.replicas;  // then the targets: the core's indexes
  endpoints.insert(endpoints.end(), options.targets.begin(), options.targets.end());
  for (const auto& endpoint : endpoints) {
    sockets.push_back(transport::make_dealer(ctx, endpoint,
                                             transport::dealer_options(socket_options, options.credentials, endpoint)));
  }
  std::vector<zmq::pollitem_t> items;
  for (auto& s : sockets) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});

  const wire::Limits limits;
  std::map<uint64_t, InFlight> in_flight;
  auto last_progress = Clock::now();
  for (;;) {
    for (auto& send : core.take_sends()) {
      std::string bytes = wire::encode_request(send.request);
      if (seal && changes_versions(send.request.body)) bytes = seal->seal(bytes, wall.now_ms());
      const bool tree = std::holds_alternative<wire::TreeRequest>(send.request.body) ||
                        std::holds_alternative<wire::LeafRequest>(send.request.body);
      in_flight[send.request.id] = {send.replica, Clock::now() + options.timeout, tree};
      ++report.messages;
      report.bytes_sent += bytes.size();
      if (tree) report.tree_bytes += bytes.size();
      if (!sockets[send.replica].send(zmq::buffer(bytes), zmq::send_flags::dontwait)) {
        core.on_unreachable(send.replica, send.request.id);
      }
    }
    if (core.done()) break;
    auto now = Clock::now();
    auto wait = std::chrono::milliseconds(100);
    for (const auto& [id, f] : in_flight) {
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(f.deadline - now));
    }
    zmq::poll(items, std::max(wait, std::chrono::milliseconds(0)));
    for (size_t r = 0; r < sockets.size(); ++r) {
      zmq::message_t msg;
      while (sockets[r].recv(msg, zmq::recv_flags::dontwait)) {
        report.bytes_received += msg.size();
        auto reply = wire::decode_reply({static_cast<const char*>(msg.data()), msg.size()}, limits);
        if (!reply.is_ok()) continue;  // undecodable: that request times out
        if (reply.value().status.code() == Code::kWrongCluster) {  // the replica list is wrong: nothing to compare
          return Status(Code::kWrongCluster,
                        endpoints[r] + " is not a replica of this cluster: " + reply.value().status.message());
        }
        const Code code = reply.value().status.code();
        if (r >= options.replicas.size() && (code == Code::kStaleConfig || code == Code::kUnknownConfig)) {
          return Status(code, "the target " + endpoints[r] + " does not take replica set version " +
                                  std::to_string(options.target_config) + ": " + reply.value().status.message());
        }
        // Another replica set than the run's: comparing would count copies
        // over the wrong replicas. The newest certificate goes to those that
        // lack it, so that the next run, over the set it names, gets through.
        if (reply.value().status.code() == Code::kStaleConfig && !reply.value().config.empty()) {
          install_everywhere(sockets, options, reply.value().config);
          if (options.newer_config) options.newer_config(reply.value().config);
          return Status(Code::kStaleConfig, options.replicas[r] + " keeps a newer replica set than version " +
                                                std::to_string(options.config) + ": " + reply.value().status.message());
        }
        if (reply.value().status.code() == Code::kUnknownConfig) {
          if (!options.config_certificate.empty()) install_everywhere(sockets, options, options.config_certificate);
          return Status(Code::kUnknownConfig, options.replicas[r] + " did not keep replica set version " +
                                                  std::to_string(options.config) +
                                                  " yet: " + reply.value().status.message());
        }
        auto it = in_flight.find(reply.value().id);
        if (it == in_flight.end() || it->second.replica != static_cast<int>(r)) continue;
        if (it->second.tree) report.tree_bytes += msg.size();
        in_flight.erase(it);
        core.on_reply(static_cast<int>(r), reply.value());
      }
    }
    now = Clock::now();
    for (auto it = in_flight.begin(); it != in_flight.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      core.on_unreachable(it->second.replica, it->first);
      it = in_flight.erase(it);
    }
    if (options.progress && now - last_progress >= std::chrono::milliseconds(100)) {
      last_progress = now;
      options.progress(report);
    }
  }
  int reachable = 0;
  for (size_t r = 0; r < endpoints.size(); ++r) {
    if (core.reachable(static_cast<int>(r))) {
      reachable += r < options.replicas.size() ? 1 : 0;
    } else {
      report.unreachable.push_back(endpoints[r]);
    }
  }
  if (options.progress) options.progress(report);
  if (reachable < 2) {
    std::string which;
    for (const auto& e : report.unreachable) which += (which.empty() ? "" : ", ") + e;
    return Status(Code::kUnavailable, "fewer than two replicas answered (no answer from " + which + ")" +
                                          (report.first_refusal.empty() ? "" : ": " + report.first_refusal));
  }
  return report;
}

}  // namespace palisade
