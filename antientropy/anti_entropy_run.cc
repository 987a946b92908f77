#include "antientropy/anti_entropy_run.h"

#include <algorithm>
#include <variant>

namespace palisade::client {

AntiEntropyRun::AntiEntropyRun(AntiEntropyRunSetup setup) : setup_(std::move(setup)), core_(setup_.core) {}

void AntiEntropyRun::sent(const AntiEntropySend& send, size_t bytes, uint64_t now_ms) {
  const bool tree = std::holds_alternative<wire::TreeRequest>(send.request.body) ||
                    std::holds_alternative<wire::LeafRequest>(send.request.body);
  in_flight_[send.request.id] = {send, now_ms + resend_after(), now_ms + setup_.timeout_ms, tree};
  resent(bytes);
  if (tree) core_.report().tree_bytes += bytes;
}

void AntiEntropyRun::resent(size_t bytes) {
  AntiEntropyReport& r = core_.report();
  ++r.messages;
  r.bytes_sent += bytes;
}

void AntiEntropyRun::end(Status why, std::string install) {
  if (!ended_.is_ok()) return;
  ended_ = std::move(why);
  install_ = std::move(install);
}

void AntiEntropyRun::on_frame(int replica, std::string_view frame) {
  AntiEntropyReport& report = core_.report();
  report.bytes_received += frame.size();
  if (!ended_.is_ok()) return;
  auto decoded = wire::decode_reply(frame, wire::Limits{});
  if (!decoded.is_ok()) return;  // undecodable: that request times out
  const wire::ReplicaReply& reply = decoded.value();
  const Code code = reply.status.code();
  const std::string& endpoint = setup_.endpoints[static_cast<size_t>(replica)];
  if (code == Code::kWrongCluster) {  // the replica list is wrong: nothing to compare
    return end(Status(code, endpoint + " is not a replica of this cluster: " + reply.status.message()), "");
  }
  const bool target = replica >= setup_.core.replicas;
  if (target && (code == Code::kStaleConfig || code == Code::kUnknownConfig)) {
    return end(Status(code, "the target " + endpoint + " does not take replica set version " +
                                std::to_string(setup_.core.target_config) + ": " + reply.status.message()),
               "");
  }
  // Another replica set than the run's: comparing would count copies over the
  // wrong replicas. The newest certificate goes to those that lack it, so that
  // the next run, over the set it names, gets through.
  if (code == Code::kStaleConfig && !reply.config.empty()) {
    newer_config_ = reply.config;
    return end(Status(code, endpoint + " keeps a newer replica set than version " + std::to_string(setup_.core.config) +
                                ": " + reply.status.message()),
               reply.config);
  }
  if (code == Code::kUnknownConfig) {
    return end(Status(code, endpoint + " did not keep replica set version " + std::to_string(setup_.core.config) +
                                " yet: " + reply.status.message()),
               setup_.config_certificate);
  }
  auto it = in_flight_.find(reply.id);
  if (it == in_flight_.end() || it->second.send.replica != replica) return;
  if (it->second.tree) report.tree_bytes += frame.size();
  in_flight_.erase(it);
  core_.on_reply(replica, reply);
}

std::vector<AntiEntropySend> AntiEntropyRun::expire(uint64_t now_ms) {
  std::vector<AntiEntropySend> again;
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    InFlight& f = it->second;
    if (f.deadline_ms <= now_ms) {
      core_.on_unreachable(f.send.replica, it->first);
      it = in_flight_.erase(it);
      continue;
    }
    if (f.resend_ms <= now_ms) {
      again.push_back(f.send);
      f.resend_ms = std::min(f.deadline_ms, now_ms + resend_after());
    }
    ++it;
  }
  return again;
}

std::optional<uint64_t> AntiEntropyRun::next_deadline_ms() const {
  std::optional<uint64_t> next;
  for (const auto& [id, f] : in_flight_) {
    const uint64_t due = std::min(f.resend_ms, f.deadline_ms);
    next = std::min(next.value_or(due), due);
  }
  return next;
}

std::vector<AntiEntropySend> AntiEntropyRun::installs() const {
  std::vector<AntiEntropySend> out;
  if (install_.empty()) return out;
  for (int r = 0; r < setup_.core.replicas; ++r) {
    out.push_back({r,
                   {kFirstInstallId + static_cast<uint64_t>(r), wire::InstallConfigRequest{install_},
                    setup_.core.cluster_id, setup_.core.config}});
  }
  return out;
}

Result<AntiEntropyReport> AntiEntropyRun::finish() {
  if (!ended_.is_ok()) return ended_;
  AntiEntropyReport& report = core_.report();
  int reachable = 0;
  for (int r = 0; r < static_cast<int>(setup_.endpoints.size()); ++r) {
    if (core_.reachable(r)) {
      reachable += r < setup_.core.replicas ? 1 : 0;
    } else {
      report.unreachable.push_back(setup_.endpoints[static_cast<size_t>(r)]);
    }
    if (core_.refusing(r)) report.refusing.push_back(setup_.endpoints[static_cast<size_t>(r)]);
  }
  if (reachable < 2) {
    std::string which;
    for (const auto& e : report.unreachable) which += (which.empty() ? "" : ", ") + e;
    return Status(Code::kUnavailable, "fewer than two replicas answered (no answer from " + which + ")" +
                                          (report.first_refusal.empty() ? "" : ": " + report.first_refusal));
  }
  return report;
}

bool changes_versions(const wire::ReplicaRequestBody& body) {
  return std::holds_alternative<wire::CopyManyRequest>(body) || std::holds_alternative<wire::CommitRequest>(body) ||
         std::holds_alternative<wire::WriteRequest>(body);
}

}  // namespace palisade::client
