#include "replica/handler.h"

#include <algorithm>
#include <variant>

#include "auth/sequencer_signer.h"
#include "base/check.h"

namespace palisade::replica {
namespace {

using wire::ReplicaReply;
using wire::Version;
using wire::VersionState;

ReplicaReply reply_with(Status status) { return wire::error_reply(0, std::move(status)); }

ReplicaReply bad_request(std::string message) { return reply_with(Status(Code::kBadRequest, std::move(message))); }

// A key's versions are kept newest first (wire::newer): the pending versions,
// then at most one committed version, which is the oldest. Committing a version
// drops every older one; a write older than the committed version is stale.
const Version* committed_of(const Versions& versions) {
  if (versions.empty() || versions.back().state != VersionState::kCommitted) return nullptr;
  return &versions.back();
}

size_t pending_count(const Versions& versions) {
  return versions.size() - (committed_of(versions) != nullptr ? 1 : 0);
}

// A refusal tells what the replica dropped, when that may have been this very
// write: the writer must not count it as final (docs/design-changes.md 16).
ReplicaReply with_dropped(ReplicaReply r, const Versions& versions, const FencedTimestamp& ts) {
  if (FencedTimestamp d = versions.dropped_up_to(ts.token); ts <= d) r.dropped = d;
  return r;
}

// The version a write stores.
Version version_of(const wire::WriteRequest& w) {
  return {w.ts, w.lock, w.committed ? VersionState::kCommitted : VersionState::kPending, w.tombstone, w.value,
          w.sequencer};
}

void insert(Versions& versions, const Version& v) {
  auto at = std::find_if(versions.begin(), versions.end(), [&](const Version& x) { return wire::newer(v, x); });
  if (v.state == VersionState::kCommitted) {
    versions.drop_from(at);
    at = versions.end();
  }
  versions.insert(at, v);
}

}  // namespace

namespace {

// Requests that store, commit or drop versions.
bool takes_versions(const wire::ReplicaRequestBody& body) {
  return std::holds_alternative<wire::WriteRequest>(body) || std::holds_alternative<wire::CommitRequest>(body) ||
         std::holds_alternative<wire::PurgeRequest>(body) || std::holds_alternative<wire::CopyManyRequest>(body) ||
         std::holds_alternative<wire::DropTombstoneRequest>(body);
}

std::optional<SequencerVerifier> verifier_of(const std::optional<ReplicaAuth>& auth) {
  if (!auth) return std::nullopt;
  return auth->sequencers ? *auth->sequencers : SequencerSigner(auth->replica_key, auth->group).verifier();
}

}  // namespace

ReplicaHandler::ReplicaHandler(ReplicaStore& store, HybridClock& clock, std::optional<ReplicaAuth> auth,
                               FeedOptions feed)
    : store_(store),
      clock_(clock),
      auth_(std::move(auth)),
      verifier_(verifier_of(auth_)),
      config_(store, verifier_, auth_ ? auth_->replica_id : 0),
      feed_(feed) {
  // The receipts a commit needs are never fewer than one (Receipts::proves).
  PALISADE_CHECK(!auth_ || auth_->write_quorum >= 1);
  if (auth_) {
    receipts_.emplace(auth_->replica_key, auth_->group, auth_->replica_id);
    seal_.emplace(auth_->replica_key, auth_->group);
  }
}

ReplicaReply ReplicaHandler::install_config(const wire::InstallConfigRequest& c) {
  ReplicaReply reply;
  reply.status = config_.install(c.certificate);
  reply.config = config_.certificate();
  return reply;
}

Result<wire::ReplicaRequest> ReplicaHandler::decode(std::string_view frame, const wire::Limits& limits,
                                                    uint64_t* id_out) {
  if (!RepairSeal::is_sealed(frame)) return wire::decode_request(frame, limits, id_out);
  if (frame.size() <= RepairSeal::kHeaderBytes) return Status(Code::kMalformed, "a sealed frame holds no request");
  std::optional<std::string_view> request;
  if (seal_) {
    request = seal_->open(frame, clock_.physical_ms());
    if (!request) {
      (void)wire::decode_request(frame.substr(RepairSeal::kHeaderBytes), limits, id_out);  // the id, for the reply
      return Status(Code::kBadRequest, "the repairer's seal does not verify: another cluster key or group, or made "
                                       "more than " + std::to_string(kSealLifetimeMs / 1000) +
                                       " s from this replica's clock");
    }
  } else {
    request = frame.substr(RepairSeal::kHeaderBytes);
  }
  auto decoded = wire::decode_request(*request, limits, id_out);
  if (decoded.is_ok()) decoded.value().from_repairer = seal_.has_value();
  return decoded;
}

std::vector<ReplicaReply> ReplicaHandler::handle_batch(std::span<const wire::ReplicaRequest> batch) {
  std::vector<ReplicaReply> replies;
  replies.reserve(batch.size());
  floors_raised_.clear();
  staged_.clear();
  bool changed = false;
  try {
    for (const wire::ReplicaRequest& request : batch) {
      replies.push_back(apply(request, changed));
      replies.back().id = request.id;
    }
  } catch (...) {
    // Out of memory, say: none of the batch is answered, so none of it stays
    // to be committed with the next one.
    store_.abort();
    floors_raised_.clear();
    staged_.clear();
    throw;
  }
  Status committed = changed ? store_.commit() : Status::ok();
  if (!changed) store_.abort();
  if (!committed.is_ok()) {
    // Every reply may rest on the batch that failed, reads included.
    failure_ = Status(Code::kStorageError, "commit failed, replica refuses writes until restarted: " +
                                               committed.message());
    for (ReplicaReply& r : replies) r = wire::error_reply(r.id, committed);
    floors_raised_.clear();
  } else {
    for (const wire::FeedChange& c : staged_) feed_.append(c.key, c.version);
  }
  staged_.clear();
  for (ReplicaReply& r : replies) r.clock = clock_.now();
  return replies;
}

ReplicaReply ReplicaHandler::apply(const wire::ReplicaRequest& request, bool& changed) {
  const auto& body = request.body;
  if (auto refused = config_.refusal(request)) return *refused;
  if (auth_ && auth_->spare && config_.version() == 0 && !request.from_repairer && takes_versions(body)) {
    return reply_with(Status(Code::kUnavailable, "this replica is a spare: it takes versions only from a fill until "
                                                 "a replica set lists it (palisade member add|replace --replica)"));
  }
  if (const auto* c = std::get_if<wire::InstallConfigRequest>(&body)) return install_config(*c);
  if (std::holds_alternative<wire::PingRequest>(body)) return {};
  if (const auto* r = std::get_if<wire::ReadRequest>(&body); r != nullptr && !r->fence) return read(*r);
  if (const auto* t = std::get_if<wire::TreeRequest>(&body)) return tree(*t);
  if (const auto* l = std::get_if<wire::LeafRequest>(&body)) return leaf(*l);
  if (const auto* s = std::get_if<wire::StatsRequest>(&body)) return stats(*s);
  if (const auto* m = std::get_if<wire::ReadManyRequest>(&body)) return read_many(*m);
  if (const auto* s = std::get_if<wire::ScanRequest>(&body)) return scan(*s);
  if (const auto* c = std::get_if<wire::ChangesRequest>(&body)) return feed_.read(*c);
  if (!failure_.is_ok()) return reply_with(failure_);
  if (const auto* d = std::get_if<wire::DropTombstoneRequest>(&body)) return drop_tombstone(*d, changed);
  const bool repairer = request.from_repairer;
  if (const auto* c = std::get_if<wire::CopyManyRequest>(&body)) return copy_many(*c, changed, repairer);
  if (const auto* w = std::get_if<wire::WriteRequest>(&body)) {
    // Carried commits stand alone: the write's answer says nothing about them.
    for (const wire::CommitRequest& c : w->commits) (void)commit(c, changed, repairer);
    ReplicaReply reply = write(*w, changed, repairer);
    if (receipts_ && reply.status.is_ok()) {
      reply.receipts = {receipts_->issue(w->key, w->ts, wire::content_hash(version_of(*w)))};
    }
    return reply;
  }
  if (const auto* f = std::get_if<wire::FenceRequest>(&body)) return fence(*f, changed);
  if (const auto* r = std::get_if<wire::ReadRequest>(&body)) return fenced_read(*r, changed);
  if (const auto* c = std::get_if<wire::CommitRequest>(&body)) return commit(*c, changed, repairer);
  return purge(std::get<wire::PurgeRequest>(body), changed);
}

Result<Sequencer> ReplicaHandler::verify(std::string_view text) {
  if (auto it = verified_.find(text); it != verified_.end()) return it->second;
  ++sequencer_checks_;
  auto verified = verifier_->verify(text);
  if (verified.is_ok()) {
    if (verified_.size() >= kVerifiedKept) verified_.clear();
    verified_.emplace(text, verified.value());
  }
  return verified;
}

Status ReplicaHandler::check_sequencer(std::string_view sequencer, std::string_view lock, uint64_t token,
                                       std::string_view what) {
  if (!auth_) return Status::ok();
  auto bad = [](std::string message) { return Status(Code::kBadSequencer, std::move(message)); };
  // Built only for a refusal: the path every write takes stays cheap.
  auto subject = [&] {
    return std::string(what) + " of lock '" + std::string(lock) + "' at token " + std::to_string(token);
  };
  if (sequencer.empty()) {
    return bad("a " + subject() + " needs the sequencer of its grant: this replica checks them");
  }
  auto verified = verify(sequencer);
  if (!verified.is_ok()) return bad(verified.status().message() + " (" + subject() + ")");
  const Sequencer& s = verified.value();
  const bool lock_matches = s.lock == lock || auth_->broken_ignore_sequencer_lock;
  if (!lock_matches || s.token != token) {
    return bad("the sequencer grants lock '" + s.lock + "' at token " + std::to_string(s.token) + ", not the " +
               subject());
  }
  if (s.mode != LockMode::kExclusive) {
    return bad("the sequencer grants lock '" + s.lock + "' in shared mode: replicas accept fenced writes only "
               "under exclusive locks");
  }
  return Status::ok();
}

Status ReplicaHandler::check_proof(std::string_view key, const Version& v, const wire::Certificate& certificate,
                                   bool repairer, std::string_view what) const {
  if (!receipts_ || v.ts.token == 0 || repairer) return Status::ok();
  // W is the kept set's when it has one: an addition raises it (W never falls).
  const size_t needed = std::max<size_t>(static_cast<size_t>(auth_->write_quorum), config_.write_quorum());
  if (receipts_->proves(certificate, key, v.ts, wire::content_hash(v), needed)) return Status::ok();
  return Status(Code::kBadRequest,
                "a " + std::string(what) + " of a version under lock '" + v.lock + "' needs proof that " +
                    std::to_string(needed) +
                    " replicas acknowledged it (a certificate of their receipts), or a repairer's seal");
}

ReplicaReply ReplicaHandler::apply_change(const Change& change, bool& changed, ReplicaReply ok_reply) {
  // What goes to the store keeps its invariants: versions in order, floors only rising.
  if (change.put != nullptr) PALISADE_DCHECK_INVARIANTS(check_versions(*change.put));
#ifndef NDEBUG
  if (change.floor != 0) {
    auto floor = store_.fence_floor(change.lock);
    PALISADE_DCHECK_INVARIANTS(
        floor.is_ok() && floor.value() >= change.floor ? "a fence floor change that does not raise it" : "");
  }
#endif
  Status s = store_.apply(change);
  if (!s.is_ok()) return reply_with(s);
  changed = true;
  if (change.floor != 0) floors_raised_.push_back({std::string(change.lock), change.floor});
  return ok_reply;
}

ReplicaReply ReplicaHandler::unreadable(std::string_view key, Status status) {
  if (status.code() != Code::kCorrupt) return reply_with(std::move(status));
  auto digest = store_.key_digest(key);
  if (!digest.is_ok()) return reply_with(digest.status());
  ReplicaReply r = reply_with(std::move(status));
  r.digest = digest.value();
  return r;
}

ReplicaReply ReplicaHandler::write(const wire::WriteRequest& w, bool& changed, bool repairer, bool copy) {
  if (w.key.empty()) return bad_request("key must not be empty");
  if ((w.ts.token == 0) != w.lock.empty()) {
    return bad_request("a write names a lock exactly when its token is non-zero");
  }
  if (w.replaces && !w.committed) return bad_request("only a committed write (a repair) names a record it replaces");
  // Repair copies (committed) carry the sequencer of the version they copy, so
  // a forged committed write cannot plant a huge token either.
  if (w.ts.token != 0) {
    if (Status s = check_sequencer(w.sequencer, w.lock, w.ts.token, "fenced write"); !s.is_ok()) return reply_with(s);
  }
  Version incoming = version_of(w);
  if (w.committed) {
    if (Status s = check_proof(w.key, incoming, w.certificate, repairer, "committed write"); !s.is_ok()) {
      return reply_with(s);
    }
  }
  if (auto observed = clock_.observe(w.ts.hlc); !observed.is_ok()) return reply_with(observed.status());

  auto stored = store_.get(w.key);
  // A corrupt record may have held a committed version newer than any the
  // writer knows, which a write here would wrongly replace. Only a repair
  // decided against this very damage replaces it: a committed write that names
  // the record's digest, learnt from a `corrupt` answer or a leaf listing. A
  // plain write, or a repair decided before the damage (from answers that
  // predate it), gets a transient `corrupt` with the digest, and nothing changes.
  if (stored.code() == Code::kCorrupt) {
    ReplicaReply refused = unreadable(w.key, stored.status());
    if (!w.committed || !w.replaces || refused.digest != w.replaces) return refused;
  } else if (!stored.is_ok()) {
    return reply_with(stored.status());
  }
  // Asked before the move: a moved-from Result is not asked anything.
  const bool damaged = !stored.is_ok();
  Versions versions = damaged ? Versions() : std::move(stored).value();
  // What the damaged record held is unknown, so any write may be one it held,
  // unfenced ones (which the bound on fenced tokens does not cover) included.
  if (damaged) {
    versions.dropped = {{0, UINT64_MAX}};
    versions.dropped_older = {UINT64_MAX, UINT64_MAX};
  }
  // Already stored (a retry, a duplicate, a repair): the answer is ok, even if a
  // floor rose since, for a refusal would claim it is not stored.
  for (const Version& v : versions) {
    if (!wire::same_write(v, incoming)) continue;
    if (v.state == VersionState::kCommitted || !w.committed) return {};  // a retry or a repair: idempotent
    return commit_version(w.key, versions, incoming.ts, wire::content_hash(incoming), changed);
  }
  uint64_t floor = 0;
  if (!w.lock.empty()) {
    auto f = store_.fence_floor(w.lock);
    if (!f.is_ok()) return reply_with(f.status());
    floor = f.value();
    // A committed write copies a version already acknowledged under its fence
    // (read repair, anti-entropy), and a pending copy one that may have been:
    // a floor raised since then does not undo it. With the cluster key, only
    // a repairer's does: a certificate does not expire, so a superseded holder
    // could otherwise store its acknowledged version again after the new
    // holder deleted the key and the tombstone was collected.
    const bool past_floor = (w.committed || copy) && (repairer || !auth_);
    if (w.ts.token < floor && !past_floor) {
      ReplicaReply r = reply_with(Status(Code::kFenced, "token " + std::to_string(w.ts.token) +
                                                            " is below the fence floor " + std::to_string(floor) +
                                                            " of lock '" + w.lock + "'"));
      r.floor = floor;
      return with_dropped(std::move(r), versions, w.ts);
    }
  }

  const Version* committed = committed_of(versions);
  if (committed != nullptr && !wire::newer(incoming, *committed)) {
    ReplicaReply r = reply_with(Status(Code::kStale, "a newer version " + committed->ts.to_string() + " is committed"));
    r.stored_ts = committed->ts;
    return with_dropped(std::move(r), versions, w.ts);
  }
  if (!w.committed && pending_count(versions) + 1 >= wire::Limits::kMaxVersionsPerKey) {
    return reply_with(Status(Code::kUnavailable, "key has " + std::to_string(pending_count(versions)) +
                                                     " unresolved writes; retry after they are committed or purged"));
  }
  insert(versions, incoming);
  Change c{.key = w.key,
           .put = &versions,
           .lock = w.lock,
           .floor = w.ts.token > floor ? w.ts.token : 0,
           .floor_sequencer = w.sequencer};
  ReplicaReply reply = apply_change(c, changed, {});
  // A pending copy is not a client's write: the feed tells it once committed.
  if (reply.status.is_ok() && (w.committed || !copy)) staged_.push_back({0, w.key, incoming});
  return reply;
}

ReplicaReply ReplicaHandler::commit_version(std::string_view key, Versions versions, const FencedTimestamp& ts,
                                            std::optional<uint64_t> hash, bool& changed) {
  auto it = std::find_if(versions.begin(), versions.end(), [&](const Version& v) { return wire::names(v, ts, hash); });
  if (it == versions.end() || it->state == VersionState::kCommitted) return {};
  it->state = VersionState::kCommitted;
  versions.drop_from(it + 1);  // an acknowledged version makes older ones moot
  ReplicaReply ok;
  ok.applied = true;
  ReplicaReply reply = apply_change(Change{.key = key, .put = &versions}, changed, ok);
  if (reply.status.is_ok()) staged_.push_back({0, std::string(key), *it});
  return reply;
}

ReplicaReply ReplicaHandler::fence(const wire::FenceRequest& f, bool& changed) {
  if (f.lock.empty() || f.token == 0) return bad_request("a fence needs a lock name and a non-zero token");
  if (Status s = check_sequencer(f.sequencer, f.lock, f.token, "fence"); !s.is_ok()) return reply_with(s);
  auto floor = store_.fence_floor(f.lock);
  if (!floor.is_ok()) return reply_with(floor.status());
  ReplicaReply ok;
  ok.floor = std::max(floor.value(), f.token);
  if (f.token <= floor.value()) return ok;
  return apply_change(Change{.lock = f.lock, .floor = f.token, .floor_sequencer = f.sequencer}, changed, ok);
}

ReplicaReply ReplicaHandler::commit(const wire::CommitRequest& c, bool& changed, bool repairer) {
  auto stored = store_.get(c.key);
  if (!stored.is_ok()) return unreadable(c.key, stored.status());
  const Versions& versions = stored.value();
  auto named = std::find_if(versions.begin(), versions.end(), [&](const Version& v) { return wire::names(v, c.ts, c.hash); });
  if (named != versions.end() && named->state == VersionState::kPending) {
    if (Status s = check_proof(c.key, *named, c.certificate, repairer, "commit"); !s.is_ok()) return reply_with(s);
  }
  return commit_version(c.key, std::move(stored).value(), c.ts, c.hash, changed);
}

ReplicaReply ReplicaHandler::purge(const wire::PurgeRequest& p, bool& changed) {
  auto stored = store_.get(p.key);
  if (!stored.is_ok()) return unreadable(p.key, stored.status());
  Versions versions = std::move(stored).value();
  // Only the pending version named is dropped; a committed one is never purged.
  auto it = std::find_if(versions.begin(), versions.end(),
                         [&](const Version& v) { return wire::names(v, p.ts, p.hash) && v.state == VersionState::kPending; });
  if (it == versions.end()) return {};
  versions.erase(it);
  ReplicaReply ok;
  ok.applied = true;
  return apply_change(Change{.key = p.key, .put = &versions}, changed, ok);
}

bool ReplicaHandler::add_floors_and_receipts(std::string_view key, const std::vector<Version>& versions,
                                             ReplicaReply& reply) {
  if (receipts_) {
    for (const Version& v : versions) reply.receipts.push_back(receipts_->issue(key, v.ts, wire::content_hash(v)));
  }
  for (const Version& v : versions) {
    if (v.lock.empty() || reply.floors.count(v.lock) != 0) continue;
    auto floor = store_.fence_floor(v.lock);
    if (!floor.is_ok()) return reply = reply_with(floor.status()), false;
    reply.floors[v.lock] = floor.value();
  }
  return true;
}

ReplicaReply ReplicaHandler::read(const wire::ReadRequest& r) {
  auto stored = store_.get(r.key);
  if (!stored.is_ok()) return unreadable(r.key, stored.status());
  ReplicaReply reply;
  reply.versions = std::move(stored).value();
  if (!add_floors_and_receipts(r.key, reply.versions, reply)) return reply;
  if (!r.floor_of.empty() && reply.floors.count(r.floor_of) == 0) {
    auto floor = store_.fence_floor(r.floor_of);
    if (!floor.is_ok()) return reply_with(floor.status());
    reply.floors[r.floor_of] = floor.value();
  }
  return reply;
}

// The fence, then the read, in one batch: from this answer on, the replica
// takes no write under an older token of the lock, so the versions of the
// key under older tokens that it will ever hold are those in the answer
// (docs/protocol.md "read").
ReplicaReply ReplicaHandler::fenced_read(const wire::ReadRequest& r, bool& changed) {
  ReplicaReply fenced = fence(*r.fence, changed);
  if (!fenced.status.is_ok()) return fenced;
  ReplicaReply reply = read(r);
  if (!reply.status.is_ok()) return reply;
  reply.floor = fenced.floor;
  reply.floors[r.fence->lock] = fenced.floor;
  return reply;
}

// Versions and floors of the page come from one moment (one batch), as a
// read's do: a reader may decide from them together.
ReplicaReply ReplicaHandler::scan(const wire::ScanRequest& s) {
  auto keys = store_.keys_in(s.prefix, s.after, size_t{s.limit} + 1);
  if (!keys.is_ok()) return reply_with(keys.status());
  ReplicaReply reply;
  size_t bytes = 0;
  for (std::string& key : keys.value()) {
    // Whole keys while they fit the budget (the first always); the asker
    // asks again from the last key listed.
    if (reply.scanned.size() == s.limit) {
      reply.more = true;
      break;
    }
    auto stored = store_.get(key);
    wire::ScannedKey scanned{std::move(key), {}};
    if (stored.code() == Code::kCorrupt) {
      scanned.record.corrupt = true;  // a read of the key names the damage, for its repair
    } else if (!stored.is_ok()) {
      return reply_with(stored.status());
    } else {
      scanned.record.versions = std::move(stored).value();
    }
    // What the key adds to the reply: its record, a receipt per version, and
    // the floors of locks not listed yet.
    size_t size = 4 + scanned.key.size();
    for (const Version& v : scanned.record.versions) {
      size += 31 + v.lock.size() + v.value.size() + v.sequencer.size() + wire::kReceiptBytes;
      if (!v.lock.empty() && reply.floors.count(v.lock) == 0) size += 12 + v.lock.size();
    }
    if (!reply.scanned.empty() && bytes + size > wire::kScanReplyBudgetBytes) {
      reply.more = true;
      break;
    }
    bytes += size;
    if (!add_floors_and_receipts(scanned.key, scanned.record.versions, reply)) return reply;
    reply.scanned.push_back(std::move(scanned));
  }
  return reply;
}

ReplicaReply ReplicaHandler::tree(const wire::TreeRequest& t) {
  ReplicaReply reply;
  for (uint64_t index : t.nodes) {
    auto node = store_.tree_node(t.level, index);
    if (!node.is_ok()) return reply_with(node.status());
    reply.nodes.push_back(node.value());
  }
  return reply;
}

ReplicaReply ReplicaHandler::leaf(const wire::LeafRequest& l) {
  ReplicaReply reply;
  size_t bytes = 0;
  // Whole leaves only, until the reply is big enough; the asker asks again for the rest.
  for (uint64_t index : l.leaves) {
    if (bytes >= wire::kLeafReplyBudgetBytes) break;
    size_t before = reply.entries.size();
    if (Status s = store_.list_leaf(index, reply.entries); !s.is_ok()) return reply_with(s);
    for (size_t i = before; i < reply.entries.size(); ++i) {
      const wire::LeafEntry& e = reply.entries[i];
      bytes += 32 + e.name.size() + e.sequencer.size() + e.heads.size() * 48;
    }
    ++reply.leaves_done;
  }
  return reply;
}

ReplicaReply ReplicaHandler::stats(const wire::StatsRequest& s) {
  auto got = store_.stats(s.max_floors);
  if (!got.is_ok()) return reply_with(got.status());
  ReplicaReply reply;
  reply.stats = std::move(got).value();
  reply.stats->insecure = !auth_;
  reply.stats->config_version = config_.version();
  reply.stats->config_paused = config_.paused();
  reply.stats->receipt_id = auth_ ? auth_->replica_id : 0;
  return reply;
}

ReplicaReply ReplicaHandler::read_many(const wire::ReadManyRequest& r) {
  ReplicaReply reply;
  size_t bytes = 0;
  // Whole keys only, while they fit the budget (the first always: one key's
  // versions fit any reply, as for `read`); the asker asks again for the rest.
  for (const std::string& key : r.keys) {
    auto stored = store_.get(key);
    wire::KeyRecord record;
    if (stored.code() == Code::kCorrupt) {
      record.corrupt = true;
    } else if (!stored.is_ok()) {
      return reply_with(stored.status());
    } else {
      record.versions = std::move(stored).value();
    }
    size_t size = 2;
    for (const Version& v : record.versions) size += 31 + v.lock.size() + v.value.size() + v.sequencer.size();
    if (!reply.records.empty() && bytes + size > wire::kReadManyReplyBudgetBytes) break;
    bytes += size;
    reply.records.push_back(std::move(record));
    ++reply.keys_done;
  }
  return reply;
}

ReplicaReply ReplicaHandler::copy_many(const wire::CopyManyRequest& c, bool& changed, bool repairer) {
  ReplicaReply reply;
  // Each copy is a committed write (or, marked pending, a pending one that the
  // floor does not refuse either), by the same rules; a refused one stops no other.
  for (const wire::Copy& copy : c.copies) {
    const Version& v = copy.version;
    const wire::WriteRequest w{copy.key, v.value, v.tombstone, v.ts, v.lock, !copy.pending, v.sequencer, copy.replaces};
    ReplicaReply one = write(w, changed, repairer, true);
    if (one.status.is_ok()) continue;
    if (reply.refused++ == 0) reply.first_refusal = "key '" + copy.key + "': " + one.status.to_string();
  }
  return reply;
}

ReplicaReply ReplicaHandler::drop_tombstone(const wire::DropTombstoneRequest& d, bool& changed) {
  auto stored = store_.get(d.key);
  if (!stored.is_ok()) return unreadable(d.key, stored.status());
  const Versions& versions = stored.value();
  // Only a key whose one version is this committed tombstone: anything newer
  // written since keeps the key.
  if (versions.size() != 1 || !versions[0].tombstone || versions[0].state != VersionState::kCommitted ||
      !wire::names(versions[0], d.ts, d.hash)) {
    return {};
  }
  const Versions none;
  ReplicaReply ok;
  ok.applied = true;
  return apply_change(Change{.key = d.key, .put = &none}, changed, ok);
}

}  // namespace palisade::replica
