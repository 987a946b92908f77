#include "replica/handler.h"

#include <variant>

namespace palisade::replica {
namespace {

using wire::ReplicaReply;
using wire::Version;
using wire::VersionState;

ReplicaReply reply_with(Status status) { return wire::error_reply(0, std::move(status)); }

ReplicaReply bad_request(std::string message) { return reply_with(Status(Code::kBadRequest, std::move(message))); }

bool same_content(const Version& a, const Version& b) {
  return a.lock == b.lock && a.tombstone == b.tombstone && a.value == b.value;
}

// Whether `stored` wins over `incoming`: the newer timestamp, and on equal
// timestamps the larger content hash, so every replica picks the same winner.
bool stored_wins(const Version& stored, const Version& incoming) {
  if (stored.ts != incoming.ts) return stored.ts > incoming.ts;
  return wire::content_hash(stored) >= wire::content_hash(incoming);
}

}  // namespace

std::vector<ReplicaReply> ReplicaHandler::handle_batch(std::span<const wire::ReplicaRequest> batch) {
  std::vector<ReplicaReply> replies;
  replies.reserve(batch.size());
  bool changed = false;
  for (const wire::ReplicaRequest& request : batch) {
    replies.push_back(apply(request, changed));
    replies.back().id = request.id;
  }
  Status committed = changed ? store_.commit() : Status::ok();
  if (!changed) store_.abort();
  if (!committed.is_ok()) {
    // Every reply may rest on the batch that failed, reads included.
    failure_ = Status(Code::kStorageError, "commit failed, replica refuses writes until restarted: " +
                                               committed.message());
    for (ReplicaReply& r : replies) r = wire::error_reply(r.id, committed);
  }
  for (ReplicaReply& r : replies) r.clock = clock_.now();
  return replies;
}

ReplicaReply ReplicaHandler::apply(const wire::ReplicaRequest& request, bool& changed) {
  const auto& body = request.body;
  if (std::holds_alternative<wire::PingRequest>(body)) return {};
  if (const auto* r = std::get_if<wire::ReadRequest>(&body)) return read(*r);
  if (!failure_.is_ok()) return reply_with(failure_);
  if (const auto* w = std::get_if<wire::WriteRequest>(&body)) return write(*w, changed);
  if (const auto* f = std::get_if<wire::FenceRequest>(&body)) return fence(*f, changed);
  if (const auto* c = std::get_if<wire::CommitRequest>(&body)) return commit(*c, changed);
  return purge(std::get<wire::PurgeRequest>(body), changed);
}

ReplicaReply ReplicaHandler::apply_change(const Change& change, bool& changed, ReplicaReply ok_reply) {
  Status s = store_.apply(change);
  if (!s.is_ok()) return reply_with(s);
  changed = true;
  return ok_reply;
}

ReplicaReply ReplicaHandler::write(const wire::WriteRequest& w, bool& changed) {
  if (w.key.empty()) return bad_request("key must not be empty");
  if ((w.ts.token == 0) != w.lock.empty()) {
    return bad_request("a write names a lock exactly when its token is non-zero");
  }
  if (auto observed = clock_.observe(w.ts.hlc); !observed.is_ok()) return reply_with(observed.status());

  uint64_t floor = 0;
  if (!w.lock.empty()) {
    auto f = store_.fence_floor(w.lock);
    if (!f.is_ok()) return reply_with(f.status());
    floor = f.value();
    // A committed write copies a version already acknowledged under its fence
    // (read repair, anti-entropy): a floor raised since then does not undo it.
    if (w.ts.token < floor && !w.committed) {
      ReplicaReply r = reply_with(Status(Code::kFenced, "token " + std::to_string(w.ts.token) +
                                                            " is below the fence floor " + std::to_string(floor) +
                                                            " of lock '" + w.lock + "'"));
      r.floor = floor;
      return r;
    }
  }

  Version incoming{w.ts, w.lock, w.committed ? VersionState::kCommitted : VersionState::kPending, w.tombstone,
                   w.value};
  auto stored = store_.get(w.key);
  if (stored.is_ok() && stored.value()) {
    const Version& s = *stored.value();
    if (s.ts == incoming.ts && same_content(s, incoming)) {  // a retry or a repair: idempotent
      if (s.state == VersionState::kCommitted || !w.committed) return {};
      return apply_change(Change{.key = w.key, .put = &incoming}, changed, {});
    }
    if (stored_wins(s, incoming)) {
      ReplicaReply r = reply_with(Status(Code::kStale, "a newer version " + s.ts.to_string() + " is stored"));
      r.stored_ts = s.ts;
      return r;
    }
  } else if (!stored.is_ok() && stored.code() != Code::kCorrupt) {
    return reply_with(stored.status());
  }
  // A corrupt stored version is overwritten: that is how it gets repaired.
  Change c{.key = w.key, .put = &incoming, .lock = w.lock, .floor = w.ts.token > floor ? w.ts.token : 0};
  return apply_change(c, changed, {});
}

ReplicaReply ReplicaHandler::fence(const wire::FenceRequest& f, bool& changed) {
  if (f.lock.empty() || f.token == 0) return bad_request("a fence needs a lock name and a non-zero token");
  auto floor = store_.fence_floor(f.lock);
  if (!floor.is_ok()) return reply_with(floor.status());
  ReplicaReply ok;
  ok.floor = std::max(floor.value(), f.token);
  if (f.token <= floor.value()) return ok;
  return apply_change(Change{.lock = f.lock, .floor = f.token}, changed, ok);
}

ReplicaReply ReplicaHandler::commit(const wire::CommitRequest& c, bool& changed) {
  auto stored = store_.get(c.key);
  if (!stored.is_ok()) return reply_with(stored.status());
  if (!stored.value() || stored.value()->ts != c.ts || stored.value()->state == VersionState::kCommitted) return {};
  Version v = *stored.value();
  v.state = VersionState::kCommitted;
  ReplicaReply ok;
  ok.applied = true;
  return apply_change(Change{.key = c.key, .put = &v}, changed, ok);
}

ReplicaReply ReplicaHandler::purge(const wire::PurgeRequest& p, bool& changed) {
  auto stored = store_.get(p.key);
  if (!stored.is_ok() && stored.code() != Code::kCorrupt) return reply_with(stored.status());
  // Only the pending version named is dropped; a committed one is never purged.
  if (!stored.is_ok() || !stored.value() || stored.value()->ts != p.ts ||
      stored.value()->state != VersionState::kPending) {
    return {};
  }
  ReplicaReply ok;
  ok.applied = true;
  return apply_change(Change{.key = p.key, .erase = true}, changed, ok);
}

ReplicaReply ReplicaHandler::read(const wire::ReadRequest& r) {
  auto stored = store_.get(r.key);
  if (!stored.is_ok()) return reply_with(stored.status());
  ReplicaReply reply;
  reply.version = std::move(stored.value());
  std::string_view lock = r.floor_of;
  if (lock.empty() && reply.version) lock = reply.version->lock;
  if (!lock.empty()) {
    auto floor = store_.fence_floor(lock);
    if (!floor.is_ok()) return reply_with(floor.status());
    reply.floor = floor.value();
  }
  return reply;
}

}  // namespace palisade::replica
