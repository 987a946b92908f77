#include "replica/replica_driver.h"

#include <type_traits>
#include <utility>
#include <variant>

#include "base/cluster_id.h"

namespace palisade::replica {

ReplicaDriver::ReplicaDriver(ReplicaHandler& handler, HybridClock& clock, ReplicaHost& host,
                             ReplicaDriverOptions options)
    : handler_(handler), clock_(clock), host_(host), options_(std::move(options)) {}

bool ReplicaDriver::full() const {
  return frames_.size() >= options_.max_batch || batch_bytes_ >= options_.max_batch_bytes;
}

void ReplicaDriver::refuse(uint64_t id, size_t bytes, Status why, std::string_view type) {
  host_.refused(id, bytes, why, type);
  wire::ReplicaReply reply = wire::error_reply(id, std::move(why));
  reply.clock = clock_.now();
  frames_.emplace_back(std::move(reply));
}

namespace {

// Ok, or permission_denied naming what `identity` may not do.
Status check_permission(const Permissions& permissions, std::string_view identity,
                        const wire::ReplicaRequest& request) {
  auto denied = [&](const std::string& what) {
    return Status(Code::kPermissionDenied, "identity '" + std::string(identity) + "' may not " + what);
  };
  // A sealed request (a repair's copies and commits) and a tombstone drop,
  // which forgets a deletion, come from repairers only; they may do the rest.
  if (permissions.may_repair(identity)) return Status::ok();
  if (request.from_repairer || std::holds_alternative<wire::DropTombstoneRequest>(request.body) ||
      std::holds_alternative<wire::CopyManyRequest>(request.body)) {
    return denied("repair: repairs and tombstone drops come from a replica or admin identity");
  }
  if (!permissions.configured()) return Status::ok();
  auto key_check = [&](bool allowed, std::string_view verb, const std::string& key) {
    return allowed ? Status::ok() : denied(std::string(verb) + " key '" + key + "'");
  };
  auto fence_denied = [&](const std::string& lock) {
    return denied("fence lock '" + lock + "', which it may not acquire");
  };
  return std::visit(
      [&](const auto& body) -> Status {
        using T = std::decay_t<decltype(body)>;
        // A config certificate proves itself (the lock group signed it):
        // anyone may relay one.
        if constexpr (std::is_same_v<T, wire::PingRequest> || std::is_same_v<T, wire::InstallConfigRequest>) {
          return Status::ok();
        } else if constexpr (std::is_same_v<T, wire::ReadRequest>) {
          if (body.fence && !permissions.may_acquire(identity, body.fence->lock, LockMode::kShared)) {
            return fence_denied(body.fence->lock);
          }
          return key_check(permissions.may_read(identity, body.key), "read", body.key);
        } else if constexpr (std::is_same_v<T, wire::ScanRequest> || std::is_same_v<T, wire::ChangesRequest>) {
          return permissions.may_read_prefix(identity, body.prefix)
                     ? Status::ok()
                     : denied("read every key under prefix '" + body.prefix +
                              "': a prefix read or a change feed needs a read pattern that covers the prefix, such "
                              "as '" +
                              body.prefix + "*'");
        } else if constexpr (std::is_same_v<T, wire::WriteRequest>) {
          // The commits a write carries settle other keys: each needs its own.
          for (const wire::CommitRequest& c : body.commits) {
            if (!permissions.may_write(identity, c.key)) return key_check(false, "write", c.key);
          }
          return body.tombstone ? key_check(permissions.may_delete(identity, body.key), "delete", body.key)
                                : key_check(permissions.may_write(identity, body.key), "write", body.key);
        } else if constexpr (std::is_same_v<T, wire::CommitRequest> || std::is_same_v<T, wire::PurgeRequest>) {
          // Settling a version is part of writing the key (a reader's repair
          // without write permission is refused; anti-entropy spreads it).
          return key_check(permissions.may_write(identity, body.key), "write", body.key);
        } else if constexpr (std::is_same_v<T, wire::FenceRequest>) {
          return permissions.may_acquire(identity, body.lock, LockMode::kShared) ? Status::ok()
                                                                                 : fence_denied(body.lock);
        } else {  // tree, leaf, read_many, stats: comparing replicas, the whole of their state
          return permissions.may_inspect(identity) ? Status::ok()
                                                   : denied("inspect replicas: that takes the admin role");
        }
      },
      request.body);
}

}  // namespace

TakeResult ReplicaDriver::take(uint64_t route, std::span<const std::string_view> frames, bool too_many_frames,
                               std::string_view sender) {
  TakeResult result;
  if (frames.empty()) return result;
  if (too_many_frames || frames.size() > wire::kMaxRequestsPerMessage) {
    refuse(0, 0,
           Status(Code::kMalformed, "a message holds at most " + std::to_string(wire::kMaxRequestsPerMessage) +
                                        " requests, one per ZeroMQ frame"));
    messages_.push_back({route, 1});  // one reply for the whole message
    result.refused = 1;
    return result;
  }
  for (std::string_view bytes : frames) {
    uint64_t id = 0;
    auto decoded = handler_.decode(bytes, options_.limits, &id);
    const std::string_view type = decoded.is_ok() ? wire::request_type(decoded.value().body) : std::string_view();
    if (decoded.is_ok()) {
      if (Status s = check_cluster_id(options_.cluster_id, decoded.value().cluster); !s.is_ok()) decoded = s;
    }
    if (decoded.is_ok() && options_.permissions) {
      if (Status s = check_permission(*options_.permissions, sender, decoded.value()); !s.is_ok()) decoded = s;
    }
    if (decoded.is_ok()) {
      if (options_.broken_trust_everyone) decoded.value().from_repairer = true;
      requests_.push_back(std::move(decoded).value());
      frames_.emplace_back();
      ++result.requests;
    } else {
      refuse(id, bytes.size(), decoded.status(), type);
      ++result.refused;
    }
    batch_bytes_ += bytes.size();
  }
  messages_.push_back({route, frames.size()});
  return result;
}

bool ReplicaDriver::acked_unstored(const wire::ReplicaRequest& request) const {
  const auto* write = std::get_if<wire::WriteRequest>(&request.body);
  return options_.broken_ack_writes_without_storing && write != nullptr && !write->committed;
}

void ReplicaDriver::falsify(const wire::ReplicaRequest& request, wire::ReplicaReply& reply) const {
  if (options_.broken_forget_dropped) reply.dropped.reset();
  if (!std::holds_alternative<wire::ReadRequest>(request.body) || !reply.status.is_ok()) return;
  if (options_.broken_hide_pending) {
    std::erase_if(reply.versions, [](const wire::Version& v) { return v.state == wire::VersionState::kPending; });
  }
  if (options_.broken_pending_as_committed) {
    for (wire::Version& v : reply.versions) v.state = wire::VersionState::kCommitted;
  }
}

size_t ReplicaDriver::flush() {
  // The batch leaves the driver before it is applied: when the handler throws,
  // none of it stays to be applied or answered with the next batch.
  std::vector<Message> messages = std::exchange(messages_, {});
  std::vector<wire::ReplicaRequest> requests = std::exchange(requests_, {});
  std::vector<std::optional<wire::ReplicaReply>> frames = std::exchange(frames_, {});
  batch_bytes_ = 0;

  std::vector<wire::ReplicaRequest> applied;
  const bool skip_some = options_.broken_ack_writes_without_storing;
  if (skip_some) {
    for (const wire::ReplicaRequest& r : requests) {
      if (!acked_unstored(r)) applied.push_back(r);
    }
  }
  const std::vector<wire::ReplicaRequest>& batch = skip_some ? applied : requests;
  std::vector<wire::ReplicaReply> replies;
  if (!batch.empty()) {
    replies = handler_.handle_batch(batch);
    for (const ReplicaHandler::FloorRaise& raise : handler_.floors_raised())
      host_.floor_raised(raise.lock, raise.floor);
  }

  size_t frame = 0, request = 0, next = 0;
  for (const Message& m : messages) {
    std::vector<std::string> encoded;
    encoded.reserve(m.frames);
    for (size_t i = 0; i < m.frames; ++i, ++frame) {
      wire::ReplicaReply reply;
      if (frames[frame]) {
        reply = std::move(*frames[frame]);
      } else {
        const wire::ReplicaRequest& req = requests[request++];
        if (acked_unstored(req)) {
          reply.id = req.id;
          reply.clock = clock_.now();
        } else {
          reply = std::move(replies[next++]);
        }
        falsify(req, reply);
        host_.amend(req, reply);
        const auto* write = std::get_if<wire::WriteRequest>(&req.body);
        if (write != nullptr && reply.status.code() == Code::kFenced) host_.fenced(*write, reply.floor);
        host_.answered(req, reply);
      }
      Code code = reply.status.code();
      if (code == Code::kCorrupt || code == Code::kStorageError || code == Code::kInternal) {
        host_.failed(reply.id, reply.status);
      }
      encoded.push_back(wire::encode_reply(reply));
    }
    host_.reply(m.route, std::move(encoded));
  }
  served_ += frame;
  return frame;
}

size_t ReplicaDriver::drop() {
  const size_t dropped = requests_.size();
  messages_.clear();
  requests_.clear();
  frames_.clear();
  batch_bytes_ = 0;
  return dropped;
}

}  // namespace palisade::replica
