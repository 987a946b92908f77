// The replica set as one replica knows it (docs/design.md "The replica set"):
// the newest config certificate it was given, kept on its store, and what that
// means for each request it gets. Sans-I/O; the handler owns one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "palisade/sequencer.h"
#include "palisade/status.h"
#include "replica/store.h"
#include "wire/replica_protocol.h"
#include "wire/replica_set.h"

namespace palisade::replica {

class ReplicaConfig {
 public:
  // `verifier`: the lock group's key, which signs certificates; nullopt on a
  // replica that checks nothing (--insecure), which takes them unchecked.
  // Loads the certificate `store` keeps; when it cannot be read or does not
  // verify, every request but ping, stats and install_config is refused
  // (storage_error) until a valid one is installed. `receipt_id`: the id in
  // this replica's receipts, by which a set names it (0: it makes none, and
  // cannot tell whether a set lists it).
  ReplicaConfig(ReplicaStore& store, std::optional<SequencerVerifier> verifier, uint64_t receipt_id = 0);

  // Keeps `text` when it verifies and is newer than the one kept (saved on
  // the store first); an older or equal one, or one of version 0 (a file's
  // list), changes nothing. BadRequest when
  // it does not verify, StorageError when it could not be saved.
  Status install(std::string_view text);

  // Why the replica refuses `request`, or nullopt when it may go on:
  // - stale_config, with the certificate, when the request names an older
  //   version than the kept one (0, the cluster file's list, is older than any);
  // - unknown_config when it names a newer one: the sender installs its
  //   certificate first;
  // - stale_config, with the certificate, for every request once the kept set
  //   does not list this replica (it was removed);
  // - unavailable for a write or fence while the set is paused (copy_many,
  //   a paused fill's, passes).
  // Ping, stats and install_config are never refused.
  std::optional<wire::ReplicaReply> refusal(const wire::ReplicaRequest& request) const;

  // Told of the set it keeps: at once when it keeps one, then after each
  // install that changes it, on the installing thread.
  using Observer = std::function<void(const wire::ReplicaSet& set, const std::string& certificate)>;
  void observe(Observer observer);

  uint64_t version() const { return set_.version; }
  // The kept set's W; 0 with none kept.
  uint32_t write_quorum() const { return set_.write_quorum; }
  bool paused() const { return set_.phase == wire::ReplicaPhase::kPaused; }
  // The kept set lists this replica, or cannot tell (a replica without a
  // receipt id known to it): true with no set kept.
  bool listed() const;
  // The kept certificate's text; empty when none.
  const std::string& certificate() const { return certificate_; }

 private:
  Result<wire::ReplicaSet> check(std::string_view text) const;

  ReplicaStore& store_;
  std::optional<SequencerVerifier> verifier_;
  uint64_t receipt_id_;
  std::string certificate_;
  wire::ReplicaSet set_;  // version 0: none kept
  Status unreadable_;  // why the kept certificate could not be taken
  Observer observer_;
};

}  // namespace palisade::replica
