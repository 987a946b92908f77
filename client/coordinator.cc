#include "client/coordinator.h"

#include <algorithm>
#include <set>

#include "base/check.h"
#include "client/coordinator_ops.h"

namespace palisade::client {

Status validate(const CoordinatorOptions& o) {
  auto bad = [&](const std::string& why) {
    return Status(Code::kBadRequest, "N=" + std::to_string(o.n) + " R=" + std::to_string(o.r) +
                                         " W=" + std::to_string(o.w) + ": " + why);
  };
  if (o.n < 1) return bad("no replicas");
  if (o.r < 1 || o.w < 1 || o.r > o.n || o.w > o.n) return bad("quorums must be between 1 and N");
  if (o.r + o.w <= o.n) return bad("R + W must exceed N, or reads may miss acknowledged writes");
  if (2 * o.w <= o.n) return bad("W must exceed N / 2, or two writers' quorums may not meet");
  if (o.timeout_ms == 0) return bad("timeout must be positive");
  return Status::ok();
}

Coordinator::Coordinator(CoordinatorOptions options, HybridClock& clock)
    : options_(options), clock_(clock), carries_(options.n, true), installed_ms_(options.n) {}
Coordinator::~Coordinator() = default;

uint64_t Coordinator::send(OpId op, int replica, wire::ReplicaRequestBody body, bool repair) {
  uint64_t id = next_request_id_++;
  pending_[id] = {op, replica, repair};
  requests_of_[op].push_back(id);
  sends_.push_back({replica, {id, std::move(body), options_.cluster_id, options_.config}});
  return id;
}

void Coordinator::send_untracked(int replica, wire::ReplicaRequestBody body) {
  if (lazy_sends_.empty()) lazy_due_ms_ = now_ms_ + options_.lazy_send_ms;
  lazy_sends_.push_back({replica, {next_request_id_++, std::move(body), options_.cluster_id, options_.config}});
}

void Coordinator::install_config(int replica) {
  auto& last = installed_ms_[replica];
  if (options_.config_certificate.empty() || (last && now_ms_ < *last + options_.hedge_ms)) return;
  last = now_ms_;
  // Not tracked: its reply is ignored, and the refused request goes again.
  sends_.push_back({replica,
                    {next_request_id_++, wire::InstallConfigRequest{options_.config_certificate}, options_.cluster_id,
                     options_.config}});
}

void Coordinator::drop_pending(OpId op) {
  auto it = requests_of_.find(op);
  if (it == requests_of_.end()) return;
  for (uint64_t id : it->second) pending_.erase(id);
  requests_of_.erase(it);
}

// Moves held-back commits into the first write going to the same replica:
// they travel without a message, and a reply, of their own.
void Coordinator::carry_commits() {
  std::vector<wire::WriteRequest*> carrier(options_.n, nullptr);
  std::vector<size_t> room(options_.n, wire::Limits::kMaxCarriedCommitBytes);
  std::vector<uint64_t> carrier_id(options_.n, 0);
  for (Send& s : sends_) {
    auto* write = std::get_if<wire::WriteRequest>(&s.request.body);
    if (write != nullptr && carrier[s.replica] == nullptr && carries_[s.replica]) {
      carrier[s.replica] = write;
      carrier_id[s.replica] = s.request.id;
    }
  }
  std::vector<Send> left;
  for (Send& lazy : lazy_sends_) {
    auto* commit = std::get_if<wire::CommitRequest>(&lazy.request.body);
    wire::WriteRequest* write = commit != nullptr && commit->hash ? carrier[lazy.replica] : nullptr;
    if (write == nullptr || wire::carried_commit_bytes(*commit) > room[lazy.replica]) {
      left.push_back(std::move(lazy));
      continue;
    }
    room[lazy.replica] -= wire::carried_commit_bytes(*commit);
    write->commits.push_back(std::move(*commit));
  }
  lazy_sends_ = std::move(left);
  for (int i = 0; i < options_.n; ++i) {
    if (carrier[i] == nullptr || carrier[i]->commits.empty()) continue;
    if (auto p = pending_.find(carrier_id[i]); p != pending_.end()) p->second.carried = carrier[i]->commits;
  }
}

std::vector<Send> Coordinator::take_sends() {
  if (lazy_sends_.empty() || (sends_.empty() && now_ms_ < lazy_due_ms_)) return std::exchange(sends_, {});
  carry_commits();
  std::vector<Send> out = std::exchange(lazy_sends_, {});
  out.insert(out.end(), std::make_move_iterator(sends_.begin()), std::make_move_iterator(sends_.end()));
  sends_.clear();
  return out;
}
std::vector<Completion> Coordinator::take_completions() { return std::exchange(completions_, {}); }
size_t Coordinator::in_flight() const {
  return writes_.size() + reads_.size() + scans_.size() + feeds_.size() + (lazy_sends_.empty() ? 0 : 1);
}

// ---- writes and fences ----

OpId Coordinator::start_write(std::string key, std::string value, bool tombstone, const Fence& fence,
                              uint64_t now_ms) {
  note_time(now_ms);
  OpId id = next_op_++;
  if (key.empty() || (fence.token == 0) != fence.lock.empty()) {
    completions_.push_back({id, WriteResult{Status(Code::kBadRequest, key.empty() ? "empty key"
                                                                                   : "a fence needs both a lock and a token"),
                                            {}, 0}});
    return id;
  }
  WriteOp& op = writes_[id];
  op.ts = {fence.token, clock_.now()};
  op.write = wire::WriteRequest{std::move(key), std::move(value), tombstone, op.ts, fence.lock};
  op.write.sequencer = fence.sequencer;
  op.request = op.write;
  op.deadline_ms = now_ms + options_.timeout_ms;
  for (int i = 0; i < options_.n; ++i) send(id, i, op.request);
  return id;
}

OpId Coordinator::start_fence(const Fence& fence, uint64_t now_ms) {
  note_time(now_ms);
  OpId id = next_op_++;
  if (fence.lock.empty() || fence.token == 0) {
    completions_.push_back({id, WriteResult{Status(Code::kBadRequest, "a fence needs both a lock and a token"), {}, 0}});
    return id;
  }
  WriteOp& op = writes_[id];
  op.is_fence = true;
  op.ts = {fence.token, 0};
  op.request = wire::FenceRequest{fence.lock, fence.token, fence.sequencer};
  op.deadline_ms = now_ms + options_.timeout_ms;
  for (int i = 0; i < options_.n; ++i) send(id, i, op.request);
  return id;
}

void Coordinator::on_write_reply(WriteOp& op, const wire::ReplicaReply& reply) {
  ++op.answered;
  if (reply.clock != 0) (void)clock_.observe(reply.clock);
  Code code = reply.status.code();
  if (code == Code::kOk) {
    ++op.acks;
    op.floor = std::max(op.floor, reply.floor);
    for (const wire::Receipt& r : reply.receipts) {
      auto same = [&](const wire::Receipt& x) { return x.replica == r.replica; };
      if (op.receipts.size() < wire::kMaxCertificateReceipts && std::none_of(op.receipts.begin(), op.receipts.end(), same)) {
        op.receipts.push_back(r);
      }
    }
    return;
  }
  // Refusals that hold for good count as replicas that never store it: fence
  // floors and committed versions only rise, bad requests and sequencers stay
  // bad (a replica's key does not change while it runs), and so do
  // permission denials (for this request: a reload may change them). Any other
  // error (a full disk, clock skew, a busy key) may pass, and a duplicate of the
  // request could still be stored later. A fenced or stale refusal from a
  // replica that has dropped a version as new as this write is not final
  // either: it may have stored this write before (docs/design-changes.md 16).
  const bool maybe_stored_before = reply.dropped && op.ts <= *reply.dropped;
  if ((code == Code::kFenced || code == Code::kStale) && maybe_stored_before) {
    if (code == Code::kFenced) op.floor = std::max(op.floor, reply.floor);  // a newer token exists all the same
    if (code == Code::kStale && reply.stored_ts && reply.stored_ts->token > op.ts.token) {
      op.floor = std::max(op.floor, reply.stored_ts->token);
    }
    op.maybe_stored = reply.status;
    return;
  }
  if (code == Code::kWrongCluster) {
    op.wrong_cluster = reply.status;  // it refused before looking: never stored
  } else if (code == Code::kFenced) {
    op.fenced = true;
    op.floor = std::max(op.floor, reply.floor);
  } else if (code == Code::kStale && reply.stored_ts && reply.stored_ts->token > op.ts.token) {
    op.fenced = true;  // a newer holder's write of this key is committed
    op.floor = std::max(op.floor, reply.stored_ts->token);
  } else if (code == Code::kStale) {
    op.stale = true;
  } else if (code == Code::kBadSequencer) {
    op.bad_sequencer = reply.status;
  } else if (code != Code::kBadRequest && code != Code::kTooLarge && code != Code::kPermissionDenied) {
    op.error = reply.status;
    return;
  } else {
    op.error = reply.status;
  }
  ++op.nonstores;
}

void Coordinator::decide_write(OpId id, WriteOp& op, uint64_t now_ms) {
  const int n = options_.n, w = options_.w;
  if (op.acks >= w) {
    if (!op.is_fence) {
      uint64_t hash = wire::content_hash(
          wire::Version{op.ts, op.write.lock, wire::VersionState::kPending, op.write.tombstone, op.write.value});
      for (int i = 0; i < n; ++i) send_untracked(i, wire::CommitRequest{op.write.key, op.ts, hash, op.receipts});
    }
    return finish_write(id, op, Status::ok());
  }
  if (n - op.nonstores < w) {  // W copies are impossible: it never becomes visible
    // A replica of another cluster: the cluster file (or the network) is
    // wrong, which no answer of the others can make right.
    if (!op.wrong_cluster.is_ok()) return finish_write(id, op, op.wrong_cluster);
    // A refused sequencer first: whatever else replicas say, this holder's
    // writes cannot succeed until it presents a valid one.
    if (!op.bad_sequencer.is_ok()) {
      return finish_write(id, op, Status(Code::kBadSequencer, "replicas refused the sequencer: " +
                                                                  op.bad_sequencer.message()));
    }
    if (op.fenced) {
      return finish_write(id, op, Status(Code::kFenced, "token " + std::to_string(op.ts.token) +
                                                            " was superseded (replicas report " +
                                                            std::to_string(op.floor) + ")"));
    }
    if (op.stale) return finish_write(id, op, Status(Code::kStale, "a newer write of the key won"));
    return finish_write(id, op, Status(op.error.code() == Code::kOk ? Code::kUnavailable : op.error.code(),
                                       "too few replicas stored it: " + op.error.to_string()));
  }
  if (!op.unsent.empty() && now_ms >= op.resend_at_ms && now_ms < op.deadline_ms) {
    for (int i : std::exchange(op.unsent, {})) send(id, i, op.request);
  }
  // Every replica answered and nothing more will come: no reason to wait.
  if (now_ms >= op.deadline_ms || op.answered == n) {
    std::string what = std::to_string(op.acks) + " of " + std::to_string(w) + " acknowledgements, " +
                       std::to_string(op.answered) + " of " + std::to_string(n) +
                       " replicas answered; the write may or may not take effect";
    if (op.fenced || (!op.maybe_stored.is_ok() && op.floor > op.ts.token)) {
      what += "; a replica reports a newer token " + std::to_string(op.floor);
    }
    if (!op.maybe_stored.is_ok()) {
      what += "; a replica that may have stored it before refused it: " + op.maybe_stored.to_string();
    }
    if (!op.bad_sequencer.is_ok()) what += "; a replica refused the sequencer: " + op.bad_sequencer.message();
    if (!op.wrong_cluster.is_ok()) what += "; " + op.wrong_cluster.message();
    if (!op.error.is_ok()) what += "; last refusal: " + op.error.to_string();
    if (options_.paused) {
      what += "; replica set version " + std::to_string(options_.config) +
              " is paused, its replicas take no writes: a replacement is under way";
    }
    Code code = op.answered == n ? Code::kUnavailable : op.answered < w ? Code::kUnavailable : Code::kTimeout;
    finish_write(id, op, Status(code, what));
  }
}

void Coordinator::finish_write(OpId id, WriteOp& op, Status status) {
  completions_.push_back({id, WriteResult{std::move(status), op.ts, op.floor}});
  drop_pending(id);
  writes_.erase(id);
}

// ---- reads ----

OpId Coordinator::start_read(std::string key, uint64_t now_ms, const Fence& fence) {
  note_time(now_ms);
  OpId id = next_op_++;
  if ((fence.token == 0) != fence.lock.empty()) {
    completions_.push_back(
        {id, ReadResult{Status(Code::kBadRequest, "a fence needs both a lock and a token"), false, {}, {}, {}}});
    return id;
  }
  ReadOp& op = reads_[id];
  op.key = std::move(key);
  if (fence.token != 0) op.fence = wire::FenceRequest{fence.lock, fence.token, fence.sequencer};
  op.deadline_ms = now_ms + options_.timeout_ms;
  op.retry_at_ms = now_ms + options_.hedge_ms;
  op.replicas.resize(options_.n);
  // Start at a different replica each time to spread the load.
  for (int k = 0; k < options_.r; ++k) ask(id, op, static_cast<int>((id + k) % options_.n), "");
  return id;
}

void Coordinator::ask(OpId id, ReadOp& op, int replica, std::string floor_of) {
  auto& rep = op.replicas[replica];
  if (rep.outstanding || rep.failed || rep.refuses) return;
  rep.asked = rep.outstanding = true;
  rep.floor_of = floor_of;
  send(id, replica, wire::ReadRequest{op.key, std::move(floor_of), op.fence});
}

void Coordinator::on_read_reply(OpId id, ReadOp& op, int replica, const wire::ReplicaReply* reply, bool repair) {
  if (reply != nullptr && reply->clock != 0) (void)clock_.observe(reply->clock);
  if (repair) {
    --op.repairs_outstanding;
    return;
  }
  auto& rep = op.replicas[replica];
  rep.outstanding = false;
  Code code = reply == nullptr ? Code::kUnavailable : reply->status.code();
  // Another cluster's replica, one that does not let this identity read
  // the key, or one that refuses a fenced read's sequencer: asking again
  // changes nothing.
  if (code == Code::kWrongCluster || code == Code::kPermissionDenied || code == Code::kBadSequencer) {
    rep.refuses = true;
    op.refusal = reply->status;
    return;
  }
  // A corrupt copy may have held anything: it counts as not heard from.
  rep.corrupt |= code == Code::kCorrupt;
  if (code == Code::kCorrupt && reply->digest && reply->digest != rep.corrupt_digest && !op.chosen) {
    // Damage not seen before. The record may have held a version newer than
    // what the others answered before it was reported (written after their
    // answers, then damaged): those answers no longer count, so that its
    // repair, which names this digest, is decided from answers taken after it.
    rep.corrupt_digest = reply->digest;
    op.fresh_from = next_request_id_;
    for (int i = 0; i < options_.n; ++i) {
      auto& other = op.replicas[i];
      if (!other.answered || other.answered_request >= op.fresh_from) continue;
      other.answered = false;
      ask(id, op, i, other.floor_of);
    }
  }
  rep.failed = code != Code::kOk;  // asked again at the next retry time
  if (rep.failed) return;
  if (reply->id < op.fresh_from && !op.chosen) {  // taken before the damage was reported
    ask(id, op, replica, rep.floor_of);
    return;
  }
  rep.answered = true;
  rep.answered_request = reply->id;
  // Versions and floors from one answer: "no copy, and a floor above its
  // token" says the replica refuses a version for good only when both are
  // of one moment. A floor from a later answer (the copy landed in between,
  // then the floor rose) beside the versions of an earlier one, which
  // replies that cross on the network give, would call an acknowledged
  // write failed, and the read would purge it.
  rep.versions = reply->versions;
  rep.floors = reply->floors;
  rep.receipts = reply->receipts.size() == reply->versions.size() ? reply->receipts : std::vector<wire::Receipt>{};
}

namespace {

bool holds(const std::vector<wire::Version>& versions, const wire::Version& c) {
  return std::any_of(versions.begin(), versions.end(), [&](const wire::Version& v) { return wire::same_write(v, c); });
}

const wire::Version* committed_of(const std::vector<wire::Version>& versions) {
  if (versions.empty() || versions.back().state != wire::VersionState::kCommitted) return nullptr;
  return &versions.back();
}

}  // namespace

bool Coordinator::decide_read(OpId id, ReadOp& op) {
  const int n = options_.n, w = options_.w;
  std::vector<const wire::Version*> candidates;
  for (const auto& rep : op.replicas) {
    if (!rep.answered) continue;
    for (const wire::Version& v : rep.versions) {
      if (std::none_of(candidates.begin(), candidates.end(), [&](auto* c) { return wire::same_write(*c, v); })) {
        candidates.push_back(&v);
      }
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](auto* a, auto* b) { return wire::newer(*a, *b); });

  // Replicas drop a copy only when a newer version is committed (found first, as
  // a newer candidate) or when it is purged as dead: so copies seen plus replicas
  // not heard from bound how many copies a version ever had.
  for (const wire::Version* c : candidates) {
    int copies = 0, unanswered = 0, could_accept = 0;
    bool committed = false;
    std::vector<int> floor_unknown;
    for (int i = 0; i < n; ++i) {
      const auto& rep = op.replicas[i];
      if (!rep.answered) {
        ++unanswered;
        continue;
      }
      auto copy = std::find_if(rep.versions.begin(), rep.versions.end(),
                               [&](const wire::Version& v) { return wire::same_write(v, *c); });
      if (copy != rep.versions.end()) {
        ++copies;
        committed |= copy->state == wire::VersionState::kCommitted;
        continue;
      }
      // Refuses c for good: a committed version at least as new, or a floor above c's token.
      const wire::Version* base = committed_of(rep.versions);
      if (base != nullptr && !wire::newer(*c, *base)) continue;
      auto floor = rep.floors.find(c->lock);
      if (!c->lock.empty() && floor != rep.floors.end() && floor->second > c->ts.token) continue;
      if (!c->lock.empty() && floor == rep.floors.end()) floor_unknown.push_back(i);
      ++could_accept;
    }
    // Committed means W replicas acknowledged it; W copies mean it may have been returned.
    if (committed || copies >= w) {
      choose(id, op, *c);
      return true;
    }
    if (copies + unanswered >= w) {  // undecided: it may have W copies; hear from the others
      for (int i = 0; i < n; ++i) {
        if (!op.replicas[i].answered) ask(id, op, i, c->lock);
      }
      return false;
    }
    // Never acknowledged so far: the read skips it. If it can never be (a
    // superseded or failed write), its copies are purged; to know, learn the
    // floors that could decide.
    int certain = copies + unanswered + could_accept - static_cast<int>(floor_unknown.size());
    if (certain < w && !floor_unknown.empty()) {
      for (int i : floor_unknown) ask(id, op, i, c->lock);
      return false;
    }
    if (copies + unanswered + could_accept < w) {
      for (int i = 0; i < n; ++i) {
        if (op.replicas[i].answered && holds(op.replicas[i].versions, *c)) {
          send_untracked(i, wire::PurgeRequest{op.key, c->ts, wire::content_hash(*c)});
        }
      }
    }
  }
  choose(id, op, std::nullopt);
  return true;
}

void Coordinator::advance_read(OpId id, ReadOp& op, uint64_t now_ms) {
  const auto refusing =
      std::count_if(op.replicas.begin(), op.replicas.end(), [](const auto& rep) { return rep.refuses; });
  if (!op.chosen && options_.n - refusing < options_.r) return finish_read(id, op, op.refusal);
  if (!op.chosen) {
    const bool retry = now_ms >= op.retry_at_ms;
    const AskRound round = AskRound::count(op.replicas, retry, options_.paused);
    if (round.answered >= options_.r && !options_.paused) {
      decide_read(id, op);
    } else {
      for (int i = 0; i < options_.n; ++i) {
        if (round.asks(op.replicas[i], retry)) ask(id, op, i, "");
      }
    }
    if (!op.chosen && op.retry_at_ms <= now_ms) op.retry_at_ms = now_ms + options_.hedge_ms;
  }
  if (op.chosen && op.repairs_outstanding == 0) return finish_read(id, op, Status::ok());
  if (now_ms >= op.deadline_ms) {
    if (op.chosen) return finish_read(id, op, Status::ok());  // repair is best effort
    std::string why = "could not learn the newest acknowledged version in time";
    if (options_.paused) {
      why += "; replica set version " + std::to_string(options_.config) +
             " is paused, reads wait for the next set: a replacement is under way";
    }
    finish_read(id, op, Status(Code::kUnavailable, why));
  }
}

// The receipts of `v` from the replicas that answered holding it; nullopt when
// none answered with receipts (replicas that do not check sequencers ask no proof).
std::optional<wire::Certificate> Coordinator::certificate_of(const ReadOp& op, const wire::Version& v) const {
  wire::Certificate certificate;
  bool receipts_seen = false;
  for (const auto& rep : op.replicas) {
    if (!rep.answered || rep.receipts.empty()) continue;
    receipts_seen = true;
    for (size_t j = 0; j < rep.versions.size(); ++j) {
      if (wire::same_write(rep.versions[j], v) && certificate.size() < wire::kMaxCertificateReceipts) {
        certificate.push_back(rep.receipts[j]);
      }
    }
  }
  if (!receipts_seen) return std::nullopt;
  return certificate;
}

void Coordinator::choose(OpId id, ReadOp& op, const std::optional<wire::Version>& v) {
  op.chosen = true;
  op.result = v;
  if (!v) return;
  // Under a lock, replicas commit it only with receipts of W replicas: a read
  // that saw fewer copies (it returns a version committed on one replica)
  // leaves the spreading to anti-entropy.
  wire::Certificate certificate;
  if (v->ts.token != 0) {
    if (auto seen = certificate_of(op, *v)) {
      if (seen->size() < static_cast<size_t>(options_.w)) return;
      certificate = std::move(*seen);
    }
  }
  if (options_.broken_skip_read_repair) return;
  // Blocking read repair: replicas that answered without it get it, committed
  // since it is known acknowledged; holders of a pending copy commit theirs.
  // A replica whose record is corrupt gets it only with the digest of the
  // damage it reported (the answers the read decided from were all taken
  // after that report): the replica replaces only that very record, so a
  // repair that lands after a newer version was stored and damaged there does
  // not install an older one. Without a digest (an older replica, or a
  // damaged floor rather than record) it is left to anti-entropy.
  for (int i = 0; i < options_.n; ++i) {
    const auto& rep = op.replicas[i];
    if (!rep.answered && (!rep.corrupt || !rep.corrupt_digest)) continue;
    const wire::Version* base = committed_of(rep.versions);
    if (base != nullptr && !wire::newer(*v, *base)) continue;  // it has this or newer, committed
    if (holds(rep.versions, *v)) {
      send_untracked(i, wire::CommitRequest{op.key, v->ts, wire::content_hash(*v), certificate});
      continue;
    }
    wire::WriteRequest repair{op.key, v->value, v->tombstone, v->ts, v->lock, /*committed=*/true, v->sequencer};
    if (!rep.answered) repair.replaces = rep.corrupt_digest;
    repair.certificate = certificate;
    send(id, i, std::move(repair), true);
    ++op.repairs_outstanding;
  }
}

void Coordinator::finish_read(OpId id, ReadOp& op, Status status) {
  ReadResult result;
  result.status = std::move(status);
  if (result.status.is_ok() && op.result && !op.result->tombstone) {
    result.found = true;
    result.value = op.result->value;
    result.ts = op.result->ts;
    result.lock = op.result->lock;
  } else if (result.status.is_ok() && op.result) {
    result.ts = op.result->ts;
  }
  drop_pending(id);
  const OpId scan = op.scan;
  const std::string key = scan != 0 ? std::move(op.key) : std::string();
  reads_.erase(id);
  if (scan != 0) return on_key_read(scan, key, std::move(result), now_ms_);
  completions_.push_back({id, std::move(result)});
}

// ---- events ----

void Coordinator::on_reply(int replica, const wire::ReplicaReply& reply, uint64_t now_ms) {
  note_time(now_ms);
  const Code code = reply.status.code();
  if (code == Code::kStaleConfig && !reply.config.empty() &&
      std::find(newer_configs_.begin(), newer_configs_.end(), reply.config) == newer_configs_.end()) {
    newer_configs_.push_back(reply.config);  // a commit's refusal counts too
  }
  auto it = pending_.find(reply.id);
  if (it == pending_.end() || it->second.replica != replica) {
    if (reply.clock != 0) (void)clock_.observe(reply.clock);
    return;  // late, duplicate or untracked (commit, purge)
  }
  if (!it->second.carried.empty() && reply.status.code() == Code::kBadRequest &&
      reply.status.message().find("'commits'") != std::string::npos) {
    // A replica older than carried commits: it gets them alone from now on,
    // and the request again without them, as if it had not been sent.
    carries_[replica] = false;
    for (wire::CommitRequest& c : it->second.carried) send_untracked(replica, std::move(c));
    it->second.carried.clear();
    return on_unreachable(replica, reply.id, now_ms);
  }
  if (options_.paused && code == Code::kUnavailable && writes_.count(it->second.op) != 0) {
    return on_unreachable(replica, reply.id, now_ms);  // paused: not stored; again shortly (CoordinatorOptions::paused)
  }
  if (code == Code::kUnknownConfig && !options_.config_certificate.empty()) {
    // The replica has not installed this set yet: it gets the certificate,
    // then the request again, as if it had not been sent.
    install_config(replica);
    return on_unreachable(replica, reply.id, now_ms);
  }
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (auto w = writes_.find(p.op); w != writes_.end()) {
    on_write_reply(w->second, reply);
    decide_write(p.op, w->second, now_ms);
  } else if (auto r = reads_.find(p.op); r != reads_.end()) {
    on_read_reply(p.op, r->second, replica, &reply, p.repair);
    advance_read(p.op, r->second, now_ms);
  } else if (auto s = scans_.find(p.op); s != scans_.end()) {
    on_scan_reply(s->second, replica, &reply);
    advance_scan(p.op, s->second, now_ms);
  } else if (auto f = feeds_.find(p.op); f != feeds_.end()) {
    on_feed_reply(f->second, replica, &reply);
    advance_feed(p.op, f->second, now_ms);
  }
  PALISADE_DCHECK_INVARIANTS(check_invariants());
}

void Coordinator::on_unreachable(int replica, uint64_t request_id, uint64_t now_ms) {
  note_time(now_ms);
  auto it = pending_.find(request_id);
  if (it == pending_.end() || it->second.replica != replica) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (auto w = writes_.find(p.op); w != writes_.end()) {
    // Not sent, so not stored: try again shortly, until the deadline.
    w->second.unsent.push_back(replica);
    w->second.resend_at_ms = now_ms + options_.hedge_ms;
  } else if (auto r = reads_.find(p.op); r != reads_.end()) {
    on_read_reply(p.op, r->second, replica, nullptr, p.repair);
    advance_read(p.op, r->second, now_ms);
  } else if (auto s = scans_.find(p.op); s != scans_.end()) {
    on_scan_reply(s->second, replica, nullptr);
    advance_scan(p.op, s->second, now_ms);
  } else if (auto f = feeds_.find(p.op); f != feeds_.end()) {
    on_feed_reply(f->second, replica, nullptr);
    advance_feed(p.op, f->second, now_ms);
  }
  PALISADE_DCHECK_INVARIANTS(check_invariants());
}

void Coordinator::on_tick(uint64_t now_ms) {
  note_time(now_ms);
  std::vector<OpId> ids;
  for (const auto& [id, op] : writes_) ids.push_back(id);
  for (OpId id : ids) {
    if (auto it = writes_.find(id); it != writes_.end()) decide_write(id, it->second, now_ms);
  }
  ids.clear();
  for (const auto& [id, op] : reads_) ids.push_back(id);
  for (OpId id : ids) {
    if (auto it = reads_.find(id); it != reads_.end()) advance_read(id, it->second, now_ms);
  }
  ids.clear();
  for (const auto& [id, op] : scans_) ids.push_back(id);
  for (OpId id : ids) {
    if (auto it = scans_.find(id); it != scans_.end()) advance_scan(id, it->second, now_ms);
  }
  ids.clear();
  for (const auto& [id, op] : feeds_) ids.push_back(id);
  for (OpId id : ids) {
    if (auto it = feeds_.find(id); it != feeds_.end()) advance_feed(id, it->second, now_ms);
  }
  PALISADE_DCHECK_INVARIANTS(check_invariants());
}

std::optional<uint64_t> Coordinator::next_deadline_ms() const {
  std::optional<uint64_t> next;
  auto consider = [&](uint64_t t) { next = next ? std::min(*next, t) : t; };
  if (!lazy_sends_.empty()) consider(lazy_due_ms_);
  for (const auto& [id, op] : writes_) {
    consider(op.deadline_ms);
    if (!op.unsent.empty()) consider(op.resend_at_ms);
  }
  for (const auto& [id, op] : reads_) {
    consider(op.deadline_ms);
    if (!op.chosen) consider(op.retry_at_ms);
  }
  for (const auto& [id, op] : scans_) {
    if (!op.reads.empty()) continue;  // its reads wait on time
    consider(op.deadline_ms);
    consider(op.retry_at_ms);
  }
  for (const auto& [id, op] : feeds_) {
    consider(op.deadline_ms);
    consider(op.retry_at_ms);
  }
  return next;
}

std::string Coordinator::check_invariants() const {
  const int n = options_.n;
  auto live = [&](OpId op) {
    return writes_.count(op) != 0 || reads_.count(op) != 0 || scans_.count(op) != 0 || feeds_.count(op) != 0;
  };
  if (carries_.size() != static_cast<size_t>(n)) return "carries_ does not have one flag per replica";
  if (installed_ms_.size() != static_cast<size_t>(n)) return "installed_ms_ does not have one time per replica";
  std::map<OpId, int> repairs;  // pending repairs, by read
  std::set<std::pair<OpId, int>> reads_pending;  // (read, replica) with a read request pending
  for (const auto& [id, p] : pending_) {
    const std::string what = "pending request " + std::to_string(id);
    if (id >= next_request_id_) return what + " has an id not handed out yet";
    if (p.replica < 0 || p.replica >= n) return what + " goes to no replica";
    if (!live(p.op)) return what + " belongs to no unfinished operation";
    auto listed = requests_of_.find(p.op);
    if (listed == requests_of_.end() ||
        std::find(listed->second.begin(), listed->second.end(), id) == listed->second.end()) {
      return what + " is not among its operation's requests";
    }
    if (p.repair && reads_.count(p.op) == 0) return what + " is a repair of no read";
    if (p.repair) ++repairs[p.op];
    if (!p.repair && reads_.count(p.op) != 0) reads_pending.insert({p.op, p.replica});
  }
  for (const auto& [op, ids] : requests_of_) {
    if (!live(op)) return "requests are listed for finished operation " + std::to_string(op);
  }
  for (const auto& [id, op] : writes_) {
    const std::string what = "write " + std::to_string(id);
    if (id >= next_op_ || reads_.count(id) != 0 || scans_.count(id) != 0) return what + " has an id not its own";
    if (op.acks < 0 || op.nonstores < 0 || op.acks + op.nonstores > op.answered) {
      return what + " counts more acknowledgements and refusals than answers";
    }
    if (op.acks >= options_.w) return what + " has W acknowledgements and is not finished";
    if (n - op.nonstores < options_.w) return what + " can no longer get W copies and is not finished";
    for (int replica : op.unsent) {
      if (replica < 0 || replica >= n) return what + " waits to send to no replica";
    }
  }
  for (const auto& [id, op] : reads_) {
    const std::string what = "read " + std::to_string(id);
    if (id >= next_op_) return what + " has an id not handed out yet";
    if (op.replicas.size() != static_cast<size_t>(n)) return what + " does not track every replica";
    for (int i = 0; i < n; ++i) {
      const ReadOp::Replica& rep = op.replicas[static_cast<size_t>(i)];
      if (rep.outstanding && !rep.asked) return what + " waits on replica " + std::to_string(i) + " it never asked";
      if (rep.outstanding && reads_pending.count({id, i}) == 0) {
        return what + " waits on replica " + std::to_string(i) + " with no request pending";
      }
    }
    auto counted = repairs.find(id);
    if (op.repairs_outstanding != (counted == repairs.end() ? 0 : counted->second)) {
      return what + " counts " + std::to_string(op.repairs_outstanding) + " repairs outstanding, not its pending ones";
    }
    if (!op.chosen && op.repairs_outstanding != 0) return what + " repairs before it chose a version";
  }
  if (std::string scans = check_scans(); !scans.empty()) return scans;
  if (std::string feeds = check_feeds(); !feeds.empty()) return feeds;
  for (const Completion& c : completions_) {
    if (live(c.op)) return "operation " + std::to_string(c.op) + " completed and is not finished";
  }
  for (const Send& s : lazy_sends_) {
    if (s.replica < 0 || s.replica >= n) return "a held-back request goes to no replica";
  }
  return "";
}

}  // namespace palisade::client
