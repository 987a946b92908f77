// Where the simulated operator (replacer.h) keeps the replica set's record
// (docs/design.md "The replica set"), as `palisade member` keeps it in the
// lock group: SignedRecord, the quorum simulation's, which signs the record
// itself; LockGroupRecord (lock_group_record.h), the lock simulation's, which
// asks the real lock group over the simulated network.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "auth/sequencer_signer.h"
#include "palisade/status.h"
#include "wire/replica_set.h"

namespace palisade::sim {

class ReplicaRecord {
 public:
  // A record's config certificate ("" while none is recorded), or why not.
  using Done = std::function<void(const Result<std::string>&)>;
  virtual ~ReplicaRecord() = default;

  // The record now.
  virtual void get(Done done) = 0;
  // Records `next` (its version ignored) as the version after `replaces`;
  // kStale when the record is past `replaces` (another change came first).
  virtual void set(uint64_t replaces, const wire::ReplicaSet& next, Done done) = 0;
  // Whether the record can change without the replacer (the lock group's
  // master ends a pause that lasts too long): the replacer then watches it.
  virtual bool shared() const = 0;
};

// The record the quorum simulation's replacer keeps and signs itself; it
// answers at once.
class SignedRecord final : public ReplicaRecord {
 public:
  SignedRecord();
  void get(Done done) override { done(certificate_); }
  void set(uint64_t replaces, const wire::ReplicaSet& next, Done done) override;
  bool shared() const override { return false; }

 private:
  SequencerSigner signer_;
  uint64_t version_ = 0;
  std::string certificate_;
};

// The version `certificate` records; 0 when it holds none.
uint64_t version_of(const std::string& certificate);

}  // namespace palisade::sim
