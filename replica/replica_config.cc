#include "replica/replica_config.h"

#include <algorithm>
#include <variant>

#include "auth/config_certificate.h"

namespace palisade::replica {
namespace {

wire::ReplicaReply refused(Code code, std::string message) {
  wire::ReplicaReply reply;
  reply.status = Status(code, std::move(message));
  return reply;
}

}  // namespace

ReplicaConfig::ReplicaConfig(ReplicaStore& store, std::optional<SequencerVerifier> verifier, uint64_t receipt_id)
    : store_(store), verifier_(std::move(verifier)), receipt_id_(receipt_id) {
  auto kept = store_.config_certificate();
  if (!kept.is_ok()) {
    unreadable_ = Status(Code::kStorageError, "the kept config certificate cannot be read (" + kept.status().message() +
                                                  "): install a valid one (install_config)");
    return;
  }
  if (kept.value().empty()) return;
  auto set = check(kept.value());
  if (!set.is_ok()) {
    unreadable_ = Status(Code::kStorageError, "the kept config certificate is damaged (" + set.status().message() +
                                                  "): install a valid one (install_config)");
    return;
  }
  certificate_ = std::move(kept).value();
  set_ = std::move(set).value();
}

Result<wire::ReplicaSet> ReplicaConfig::check(std::string_view text) const {
  return read_config_certificate(verifier_, text);  // --insecure: unchecked
}

Status ReplicaConfig::install(std::string_view text) {
  auto set = check(text);
  if (!set.is_ok()) return set.status();
  // Version 0 is a cluster file's list, which the lock group serves signed
  // before it records a set: nothing to keep, and no cure for an unreadable one.
  if (set.value().version == 0) return Status::ok();
  if (set.value().version <= set_.version && unreadable_.is_ok()) return Status::ok();
  if (Status saved = store_.save_config_certificate(text); !saved.is_ok()) return saved;
  certificate_ = std::string(text);
  set_ = std::move(set).value();
  unreadable_ = Status::ok();
  if (observer_) observer_(set_, certificate_);
  return Status::ok();
}

bool ReplicaConfig::listed() const {
  if (set_.version == 0 || receipt_id_ == 0) return true;
  return std::any_of(set_.replicas.begin(), set_.replicas.end(), [&](const wire::ReplicaInfo& r) {
    return r.receipt_id == receipt_id_ || r.receipt_id == 0;  // 0: the record cannot say it is another
  });
}

void ReplicaConfig::observe(Observer observer) {
  observer_ = std::move(observer);
  if (observer_ && set_.version != 0 && unreadable_.is_ok()) observer_(set_, certificate_);
}

std::optional<wire::ReplicaReply> ReplicaConfig::refusal(const wire::ReplicaRequest& request) const {
  const auto& body = request.body;
  if (std::holds_alternative<wire::PingRequest>(body) || std::holds_alternative<wire::StatsRequest>(body) ||
      std::holds_alternative<wire::InstallConfigRequest>(body)) {
    return std::nullopt;
  }
  if (!unreadable_.is_ok()) return refused(unreadable_.code(), unreadable_.message());
  // The messages are built only for a refusal: every request passes here.
  auto versions = [&](std::string_view kept_as) {
    return "the request names replica set version " + std::to_string(request.config) + ", this replica has " +
           std::string(kept_as);
  };
  if (request.config < set_.version) {
    auto reply = refused(Code::kStaleConfig, versions("version " + std::to_string(set_.version) + " (in `config`)"));
    reply.config = certificate_;
    return reply;
  }
  if (request.config > set_.version) {
    return refused(Code::kUnknownConfig,
                   versions(set_.version == 0 ? "none" : "version " + std::to_string(set_.version)) +
                       ": send it the certificate (install_config)");
  }
  if (!listed()) {
    // Removed: whoever still sends here uses an older set, or a wrong list.
    auto reply = refused(Code::kStaleConfig, "this replica is not in replica set version " +
                                                 std::to_string(set_.version) + " (in `config`): it was removed");
    reply.config = certificate_;
    return reply;
  }
  // A paused fill's copies (copy_many, a repairer's message) are what the
  // pause waits for; writes and fences (fenced reads too) wait for the next set.
  const auto* read = std::get_if<wire::ReadRequest>(&body);
  const bool changes = std::holds_alternative<wire::WriteRequest>(body) ||
                       std::holds_alternative<wire::FenceRequest>(body) || (read != nullptr && read->fence);
  if (paused() && changes) {
    return refused(Code::kUnavailable, "writes and fences are paused while replica set version " +
                                           std::to_string(set_.version) + " replaces a replica");
  }
  return std::nullopt;
}

}  // namespace palisade::replica
