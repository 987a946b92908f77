// ConditionalStore: put-if-absent and compare-and-set on the quorum store
// (docs/consistency.md, "Conditional writes"; docs/recipes.md).
//
// Quorums alone cannot compare and set: two writers that read the same
// version would both write. So each conditional write of a key takes a lock
// of its own for the key (kLockPrefix + the key) from the lock group; then
// it reads the key with the grant's fence (QuorumStore::get under the
// lease: each replica that answers raises the lock's floor first), compares,
// and writes under that grant, and releases. Conditional writes of one key
// are so one at a time, and one that stalls past its lease (a pause) finds
// its write refused (fenced) once the next has read: they are linearizable
// (docs/consistency.md "Conditional writes"). Every writer of such a key
// must write through here.
//
// Thread safety: as the LockClient and QuorumStore it uses.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "palisade/status.h"
#include "palisade/timestamp.h"

namespace palisade {

// What a conditional write expects to find.
struct Expect {
  // nullopt: no value (never written, or deleted); else the version a read
  // returned (ReadResult::ts, KeyValue::ts), exactly.
  std::optional<FencedTimestamp> version;

  static Expect absent() { return {}; }
  static Expect at(FencedTimestamp ts) { return {ts}; }
};

struct ConditionalResult {
  // ok: written (ts). stale: the key is not as expected (current says what
  // it is); nothing was written. busy / timeout: the key's lock was not
  // granted within the wait (another conditional write holds it, or its
  // holder died and its session has yet to expire). Otherwise the errors of
  // acquire, get and put: fenced (this write stalled past its lease and a
  // later one superseded it: not written, and never will be), unavailable /
  // timeout (the write's outcome may be unknown), no_session,
  // permission_denied, bad_request.
  Status status;
  FencedTimestamp ts;  // the write's, when ok
  ReadResult current;  // what the key held when compared (stale, and ok)
};

struct ConditionalOptions {
  // How long to wait for the key's lock behind other conditional writes.
  std::chrono::milliseconds wait{10000};
};

class ConditionalStore {
 public:
  // The locks conditional writes take start with this (docs/recipes.md).
  static constexpr std::string_view kLockPrefix = "palisade.cas/";

  // `client` and `store` must outlive it, and name one cluster.
  ConditionalStore(LockClient& client, QuorumStore& store, ConditionalOptions options = {});

  // Writes `value` if the key is as expected.
  ConditionalResult put(std::string_view key, std::string_view value, const Expect& expect);
  // Deletes the key if it is as expected.
  ConditionalResult del(std::string_view key, const Expect& expect);

  // The lock a conditional write of `key` takes: kLockPrefix + the key, or,
  // for a key too long for a lock name, + a hash of it (two keys that share
  // a lock only wait for each other).
  static std::string lock_for(std::string_view key);

 private:
  ConditionalResult write(std::string_view key, std::optional<std::string_view> value, const Expect& expect);

  LockClient& client_;
  QuorumStore& store_;
  ConditionalOptions options_;
};

}  // namespace palisade
