#include "cli/replica_set_change.h"

#include <algorithm>
#include <map>
#include <optional>

#include <zmq.hpp>

#include "base/cluster_id.h"
#include "cli/member_change.h"
#include "client/replica_connection.h"
#include "config/cluster_keys.h"

namespace palisade::cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

class Change {
 public:
  Change(const ClusterAccess& access, const ReplicaSetChange& r)
      : access_(access), r_(r), cluster_(access.config.cluster_id) {}

  Result<ChangeReport> run() {
    const auto start = Clock::now();
    // The lock group takes set_replicas from admins only: said before a fill starts.
    if (const auto& credentials = access_.credentials;
        credentials && !access_.config.permissions().is_admin(credentials->identity)) {
      return Status(Code::kPermissionDenied, "identity '" + credentials->identity +
                                                 "' may not change the replica set: admin only (give --key the key "
                                                 "file of an identity with the admin role)");
    }
    auto current = read_replica_record(access_.config, access_.credentials, r_.timeout);
    if (!current.is_ok()) return current.status();
    const wire::ReplicaSet old = current.value().set;
    if (old.phase == wire::ReplicaPhase::kPaused) {
      return Status(Code::kBusy, "replica set version " + std::to_string(old.version) +
                                     " is paused: a change is under way (the lock group ends a pause that "
                                     "lasts a minute)");
    }
    auto next = planned(old);
    if (!next.is_ok()) return next.status();
    ChangeReport report;
    if (joining()) {  // a removal has no replica to fill while the set serves
      say("filling " + r_.new_endpoint + " from replica set version " + std::to_string(old.version) + " as it serves");
      auto filled = fill(old, current.value().certificate, false);
      if (!filled.is_ok()) return filled.status();
      report.fill = filled.value();
    }

    // The pause: no write can reach W copies once max(R, W) replicas keep it.
    wire::ReplicaSet paused = old;
    paused.replicas = members_;
    paused.phase = wire::ReplicaPhase::kPaused;
    auto pause = set_replicas(old.version, paused);
    if (!pause.is_ok()) return pause.status();
    const auto paused_at = Clock::now();
    const uint64_t paused_version = old.version + 1;
    const size_t kept = install(answering_, pause.value(), paused_version);
    const size_t needed = std::max(old.write_quorum, old.read_quorum);
    say("paused writes: replica set version " + std::to_string(paused_version) + ", kept by " + std::to_string(kept) +
        " of " + std::to_string(members_.size()) + " replicas");
    Status done = Status::ok();
    if (kept < needed) {
      done = Status(Code::kUnavailable, "only " + std::to_string(kept) + " replicas took the pause, " +
                                            std::to_string(needed) + " (the larger quorum) must");
    }
    if (done.is_ok()) {
      auto last = fill(paused, pause.value(), true);
      if (last.is_ok()) report.paused_fill = last.value();
      done = last.status();
    }
    wire::ReplicaSet serving = next.value();
    if (!done.is_ok()) serving = old;  // the old set again
    auto committed = set_replicas(paused_version, serving);
    if (!committed.is_ok()) {
      return Status(committed.code(), (done.is_ok() ? "" : done.message() + "; then ") +
                                          "ending the pause failed: " + committed.status().message());
    }
    report.paused_for = duration_cast<milliseconds>(Clock::now() - paused_at);
    std::vector<std::string> told = answering_;  // the old one too: it learns it was removed
    if (done.is_ok() && joining()) told.push_back(r_.new_endpoint);
    install(told, committed.value(), paused_version + 1);
    if (!done.is_ok()) return Status(done.code(), done.message() + "; the old set serves again");
    report.record = ReplicaRecord{.set = serving,
                                  .certificate = committed.value(),
                                  .checked = !access_.config.sequencer_public_key.empty()};
    report.record.set.version = paused_version + 1;
    report.took = duration_cast<milliseconds>(Clock::now() - start);
    return report;
  }

 private:
  void say(const std::string& line) const {
    if (r_.progress) r_.progress(line);
  }

  bool joining() const { return r_.kind != ReplicaChangeKind::kRemove; }
  bool leaving() const { return r_.kind != ReplicaChangeKind::kAdd; }

  static std::vector<std::string> endpoints_of(const std::vector<wire::ReplicaInfo>& replicas) {
    std::vector<std::string> out;
    for (const auto& r : replicas) out.push_back(r.address);
    return out;
  }

  Result<wire::ReplicaReply> call(const std::string& endpoint, wire::ReplicaRequestBody body) {
    try {
      client::ReplicaConnection conn(ctx_, endpoint, access_.credentials);
      return conn.call({.id = 0, .body = std::move(body), .cluster = cluster_}, static_cast<int>(r_.timeout.count()));
    } catch (const std::exception& e) {  // credentials without its key
      return Status(Code::kBadRequest, endpoint + ": " + e.what());
    }
  }

  // The set after the change, the members with their receipt ids; BadRequest
  // when the change does not fit.
  Result<wire::ReplicaSet> planned(const wire::ReplicaSet& old) {
    const ClusterConfig& config = access_.config;
    auto leaving_one = std::find_if(old.replicas.begin(), old.replicas.end(),
                                    [&](const wire::ReplicaInfo& r) { return r.id == r_.old_id; });
    if (leaving() && leaving_one == old.replicas.end()) {
      return Status(Code::kBadRequest, "replica " + std::to_string(r_.old_id) + " is not in replica set version " +
                                           std::to_string(old.version) + " (see `palisade member list`)");
    }
    auto quorums = quorums_after(r_.kind, old, r_.quorums);
    if (!quorums.is_ok()) return quorums.status();
    if (!joining()) return members(old, quorums.value(), std::nullopt);
    for (const auto& r : old.replicas) {
      if (r.address == r_.new_endpoint) {
        return Status(Code::kBadRequest,
                      r_.new_endpoint + " is replica " + std::to_string(r.id) + " of the set already");
      }
    }
    const bool known = std::count(config.spare_replicas.begin(), config.spare_replicas.end(), r_.new_endpoint) +
                           std::count(config.replicas.begin(), config.replicas.end(), r_.new_endpoint) >
                       0;
    if (!known) {
      return Status(Code::kBadRequest, r_.new_endpoint + " is not a [[replica]] of " + config.path +
                                           ": add it, with spare = true (and its identity on a secure cluster)");
    }
    const std::map<std::string, std::string> keys = server_keys(config);
    auto key = keys.find(r_.new_endpoint);
    if (access_.credentials && key == keys.end()) {
      return Status(Code::kBadRequest, config.path + " names no identity for " + r_.new_endpoint);
    }
    // Every replica's receipt id, so that a set can say who is not in it.
    auto joining = call(r_.new_endpoint, wire::StatsRequest{.max_floors = 0});
    if (!joining.is_ok() || !joining.value().stats) {
      return Status(Code::kUnavailable, "the new replica " + r_.new_endpoint + " does not answer: " +
                                            (joining.is_ok() ? joining.value().status : joining.status()).to_string());
    }
    if (joining.value().stats->config_version != 0) {
      return Status(Code::kBadRequest, "the new replica " + r_.new_endpoint + " keeps replica set version " +
                                           std::to_string(joining.value().stats->config_version) +
                                           ": start it on an empty data directory");
    }
    return members(old, quorums.value(),
                   wire::ReplicaInfo{.id = 0,
                                     .address = r_.new_endpoint,
                                     .key = key == keys.end() ? "" : key->second,
                                     .receipt_id = joining.value().stats->receipt_id});
  }

  // The new set: the members that answer learnt (with their receipt ids), the
  // one leaving out, the one joining in.
  Result<wire::ReplicaSet> members(const wire::ReplicaSet& old, Quorums quorums,
                                   std::optional<wire::ReplicaInfo> joining) {
    for (const auto& r : old.replicas) {
      wire::ReplicaInfo info = r;
      auto stats = call(r.address, wire::StatsRequest{.max_floors = 0});
      if (stats.is_ok() && stats.value().stats) {
        answering_.push_back(r.address);
        if (info.receipt_id == 0) info.receipt_id = stats.value().stats->receipt_id;
      }
      members_.push_back(info);
    }
    if (answering_.size() < 2) {
      return Status(Code::kUnavailable, std::to_string(answering_.size()) + " of the set's " +
                                            std::to_string(old.replicas.size()) + " replicas answer");
    }
    wire::ReplicaSet next = old;
    next.phase = wire::ReplicaPhase::kServing;
    next.write_quorum = quorums.write;
    next.read_quorum = quorums.read;
    next.replicas.clear();
    for (const auto& r : members_) {
      if (leaving() && r.id == r_.old_id) continue;
      next.replicas.push_back(r);
      staying_.push_back(r.address);
      const bool answers = std::count(answering_.begin(), answering_.end(), r.address) > 0;
      if (r_.kind == ReplicaChangeKind::kRemove && !answers) {
        return Status(Code::kUnavailable, "replica " + std::to_string(r.id) + " (" + r.address +
                                              "), which stays, does not answer: a removal needs every replica "
                                              "that stays, for they get the copies the one leaving holds");
      }
    }
    if (joining) {
      joining->id = members_.back().id + 1;
      if (joining->id > wire::kMaxReplicaId) {
        return Status(Code::kBadRequest, "replica ids are used up to " + std::to_string(wire::kMaxReplicaId));
      }
      next.replicas.push_back(*joining);
    }
    return next;
  }

  // Anti-entropy over `set` with the new replica as its target: ok only when
  // it got every floor and settled version, and (paused) nothing is undecided.
  Result<AntiEntropyReport> fill(const wire::ReplicaSet& set, const std::string& certificate, bool paused) {
    const ClusterConfig& config = access_.config;
    AntiEntropyOptions o;
    // Those that answered: the others count as not heard from, without a wait for each.
    o.replicas = answering_;
    o.cluster_size = static_cast<int>(set.replicas.size());
    o.write_quorum = static_cast<int>(set.write_quorum);
    if (!config.cluster_id.empty()) o.cluster_id = cluster_id_hex(config.cluster_id);
    o.key_file = config.replicas_key_file();
    if (!o.key_file.empty()) o.group = config.group;
    o.credentials = access_.credentials;
    o.timeout = r_.timeout;
    o.config = paused ? set.version + 1 : set.version;  // `set` is the record the pause replaced
    o.config_certificate = certificate;
    if (joining()) o.targets = {r_.new_endpoint};
    o.paused = paused;
    Result<AntiEntropyReport> report = Status(Code::kUnavailable, "not run");
    // A replica that had not kept the run's set is given it, and the run goes again.
    for (int tries = 0; tries < 3; ++tries) {
      report = run_anti_entropy(o);
      if (report.is_ok() || report.code() != Code::kUnknownConfig) break;
    }
    if (!report.is_ok()) return report.status();
    const AntiEntropyReport& r = report.value();
    say(std::string(paused ? "paused fill" : "fill") + ": " + std::to_string(r.versions_sent) + " versions and " +
        std::to_string(r.floors_raised) + " floors sent, " + std::to_string(r.bytes_moved()) + " bytes" +
        (r.completed > 0 ? ", " + std::to_string(r.completed) + " pending versions completed" : "") +
        (r.unreachable.empty() ? "" : ", no answer from " + std::to_string(r.unreachable.size()) + " replicas"));
    if (std::string why = fill_shortfall(r_.kind, report, paused, joining() ? r_.new_endpoint : "", staying_);
        !why.empty()) {
      return Status(Code::kUnavailable,
                    why + (paused && r.undecided > 0 ? ". Bring that replica back (`palisade repair` mends a corrupt "
                                                       "record), or write those keys again, then change the set"
                                                     : ""));
    }
    return report;
  }

  // set_replicas to the master, naming `replaces`; the certificate it made.
  Result<std::string> set_replicas(uint64_t replaces, const wire::ReplicaSet& set) {
    auto reply = call_master(access_,
                             wire::SetReplicasRequest{.version = replaces,
                                                      .replicas = set.replicas,
                                                      .write_quorum = set.write_quorum,
                                                      .read_quorum = set.read_quorum,
                                                      .phase = set.phase},
                             r_.timeout * 4);
    if (!reply.is_ok()) return reply.status();
    if (!reply.value().status.is_ok()) {
      return Status(reply.value().status.code(), "the lock group refused replica set version " +
                                                     std::to_string(replaces + 1) + ": " +
                                                     reply.value().status.message());
    }
    return reply.value().config;
  }

  // Gives each replica `certificate`; how many keep `version` (or newer) after.
  size_t install(const std::vector<std::string>& endpoints, const std::string& certificate, uint64_t version) {
    size_t kept = 0;
    for (const std::string& e : endpoints) {
      auto reply = call(e, wire::InstallConfigRequest{certificate});
      if (!reply.is_ok() || !reply.value().status.is_ok()) continue;
      auto stats = call(e, wire::StatsRequest{.max_floors = 0});
      if (stats.is_ok() && stats.value().stats && stats.value().stats->config_version >= version) ++kept;
    }
    return kept;
  }

  const ClusterAccess& access_;
  const ReplicaSetChange& r_;
  const std::string cluster_;
  zmq::context_t ctx_{1};
  std::vector<wire::ReplicaInfo> members_;  // the set's, with their receipt ids
  std::vector<std::string> answering_;  // the members that answered before the change began
  std::vector<std::string> staying_;  // the members in the new set too
};

}  // namespace

Result<ChangeReport> change_replica_set(const ClusterAccess& access, const ReplicaSetChange& change) {
  return Change(access, change).run();
}

}  // namespace palisade::cli
