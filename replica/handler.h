// The replica's request handler (docs/design.md "Replicas"): sans-I/O. It applies decoded
// requests to a ReplicaStore by the fenced last-writer-wins rules and returns the
// replies; it never touches sockets, files or threads, and reads time only through
// the HybridClock it is given.
//
// Thread safety: none; one thread (the server loop or the simulator) owns it.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/hybrid_clock.h"
#include "auth/repair_seal.h"
#include "wire/replica_protocol.h"
#include "auth/cluster_key.h"
#include "palisade/sequencer.h"
#include "replica/change_feed.h"
#include "replica/receipts.h"
#include "replica/replica_config.h"
#include "replica/store.h"

namespace palisade::replica {

// What a replica checks sequencers against: the lock group's public key; what
// it makes and checks receipts and seals with: the replicas' key and its lock
// group's id (cluster file "group"); and what its receipts say: its id, and how
// many replicas' receipts prove a version acknowledged (W).
struct ReplicaAuth {
  // The replicas' key (the cluster file's replica_key_file, else its cluster
  // key): this replica's receipts, and the repairers' seals it opens.
  ClusterKey replica_key;
  std::string group;
  int write_quorum = 0;  // W, at least 1; the kept replica set's W when larger
  uint64_t replica_id = 0;
  // Negative control for the simulator: a sequencer is checked against the
  // request's token but not its lock, so one lock's grant passes for another.
  bool broken_ignore_sequencer_lock = false;
  // The lock group's public key; nullopt: the one derived from `replica_key`
  // (which is then the cluster key).
  std::optional<SequencerVerifier> sequencers = std::nullopt;
  // A spare (the cluster file's `spare = true`): until it keeps a replica
  // set, it takes versions only from a repairer (a fill), so that it joins a
  // set holding nothing a client put there behind the set's back.
  bool spare = false;
};

class ReplicaHandler {
 public:
  // `store` and `clock` must outlive the handler. With `auth`, every fence and
  // every fenced write (token > 0), repair copies included, must carry a sequencer
  // that verifies under auth (signature, group) and names the request's lock and token
  // under an exclusive lock; otherwise it is refused with bad_sequencer and
  // changes nothing. A version under a lock becomes committed only on proof:
  // a commit or committed write carries a certificate (W replicas' receipts),
  // or comes from a repairer (ReplicaRequest::from_repairer); otherwise it is
  // refused with bad_request. Accepted writes and read versions get this
  // replica's receipt. Without `auth`, sequencers are ignored and no proof is
  // asked: any token is accepted, which the daemon allows only with
  // --insecure (stats say so).
  // `feed`: the change feed's id and bounds (ChangeFeed).
  ReplicaHandler(ReplicaStore& store, HybridClock& clock, std::optional<ReplicaAuth> auth = std::nullopt,
                 FeedOptions feed = {});

  // Told of the replica set the replica keeps (ReplicaConfig::observe).
  void observe_config(ReplicaConfig::Observer observer) { config_.observe(std::move(observer)); }

  // Decodes a request frame: plain, or sealed by a repairer (auth/repair_seal.h),
  // whose request gets from_repairer when the seal verifies under auth and was
  // made within kSealLifetimeMs of this replica's clock. A seal that does not
  // verify is bad_request. Without auth a seal is not checked, and means nothing.
  Result<wire::ReplicaRequest> decode(std::string_view frame, const wire::Limits& limits, uint64_t* id_out);

  // Applies `batch` in order and commits it with one durable commit. Returns one
  // reply per request, in order. Replies may be sent only after this returns.
  // First, every request but ping, stats and install_config meets the replica
  // set this replica keeps (ReplicaConfig::refusal). Codes: write: ok, fenced
  // (floor), stale (stored_ts), clock_skew, bad_request,
  // unavailable (too many pending versions), bad_sequencer, corrupt; fence: ok
  // (floor), bad_request, bad_sequencer; commit, purge, drop_tombstone:
  // ok (applied) or corrupt; read: ok (versions, floors) or corrupt, and a
  // fenced read the fence's codes first (then its floor as well); tree: ok
  // (nodes); leaf: ok (entries, leaves_done); stats: ok (stats), or corrupt when
  // a floor record listed is; read_many: ok (records, keys_done); copy_many: ok
  // (refused, first_refusal); changes: ok (feed, changes, more);
  // install_config: ok (config), bad_request,
  // storage_error; every request: storage_error when the disk failed.
  // A `corrupt` about the key's record carries the record's digest; only a
  // committed write (or copy) that names it in `replaces` replaces the record.
  std::vector<wire::ReplicaReply> handle_batch(std::span<const wire::ReplicaRequest> batch);

  // The fence floors the last handle_batch raised, in order: the lock and its
  // new floor, a lock raised twice listed twice. A fence, a write under a
  // higher token and a repair's copy raise them. Empty when the batch's
  // commit failed (nothing of it is durable) or it threw.
  struct FloorRaise {
    std::string lock;
    uint64_t floor = 0;
    friend bool operator==(const FloorRaise&, const FloorRaise&) = default;
  };
  const std::vector<FloorRaise>& floors_raised() const { return floors_raised_; }

  // After a failed commit the replica cannot know what reached the disk: it
  // refuses every change until restarted, and keeps serving reads.
  bool writes_refused() const { return !failure_.is_ok(); }
  // The replica set version it keeps (0: none), and whether that set is paused.
  uint64_t config_version() const { return config_.version(); }
  bool config_paused() const { return config_.paused(); }
  // Whether fenced writes and fences must carry a valid sequencer.
  bool verifies_sequencers() const { return auth_.has_value(); }
  // What the change feed holds: every version a committed batch stored by a
  // client's write or committed, in order.
  const ChangeFeed& feed() const { return feed_; }
  // How many sequencer signatures were checked: a text that verified once is
  // not checked again while it is remembered (up to kVerifiedKept of them).
  uint64_t sequencer_checks() const { return sequencer_checks_; }

 private:
  // Applies one request to the open batch. `changed` is set when the store changed.
  wire::ReplicaReply apply(const wire::ReplicaRequest& request, bool& changed);
  // `repairer`: the request came from a repairer (a sealed frame).
  // `copy`: one of a copy_many's copies; a pending one passes the fence floor
  // as a committed write does (it copies a version written under its fence).
  wire::ReplicaReply write(const wire::WriteRequest& w, bool& changed, bool repairer, bool copy = false);
  wire::ReplicaReply fence(const wire::FenceRequest& f, bool& changed);
  wire::ReplicaReply commit(const wire::CommitRequest& c, bool& changed, bool repairer);
  wire::ReplicaReply purge(const wire::PurgeRequest& p, bool& changed);
  wire::ReplicaReply read(const wire::ReadRequest& r);
  wire::ReplicaReply fenced_read(const wire::ReadRequest& r, bool& changed);
  wire::ReplicaReply scan(const wire::ScanRequest& s);
  // Adds to `reply` the floors of the locks `versions` name, and this
  // replica's receipts of them; false (reply holds the error) when a floor
  // cannot be read.
  bool add_floors_and_receipts(std::string_view key, const std::vector<wire::Version>& versions,
                               wire::ReplicaReply& reply);
  // Anti-entropy (docs/anti-entropy.md).
  wire::ReplicaReply tree(const wire::TreeRequest& t);
  wire::ReplicaReply leaf(const wire::LeafRequest& l);
  wire::ReplicaReply drop_tombstone(const wire::DropTombstoneRequest& d, bool& changed);
  wire::ReplicaReply stats(const wire::StatsRequest& s);
  wire::ReplicaReply read_many(const wire::ReadManyRequest& r);
  wire::ReplicaReply copy_many(const wire::CopyManyRequest& c, bool& changed, bool repairer);
  // ok with the certificate kept after it (docs/protocol.md "install_config").
  wire::ReplicaReply install_config(const wire::InstallConfigRequest& c);
  // With auth_: ok when making `v` committed is proven (by a repairer, or a
  // certificate of W receipts) or needs no proof (no lock); else bad_request.
  Status check_proof(std::string_view key, const wire::Version& v, const wire::Certificate& certificate,
                     bool repairer, std::string_view what) const;
  // With auth_: ok when `sequencer` verifies and grants `lock` at `token`
  // exclusively; else bad_sequencer. `what` names the request in messages.
  Status check_sequencer(std::string_view sequencer, std::string_view lock, uint64_t token,
                         std::string_view what);
  // The sequencer that `text` verifies to under auth_, or why it does not.
  Result<Sequencer> verify(std::string_view text);
  wire::ReplicaReply apply_change(const Change& change, bool& changed, wire::ReplicaReply ok_reply);
  // The reply when the key's record could not be read (`status`): a `corrupt`
  // one carries the record's digest, which a repair must name to replace it.
  wire::ReplicaReply unreadable(std::string_view key, Status status);
  // Marks the version with `ts` committed and drops the older ones.
  wire::ReplicaReply commit_version(std::string_view key, Versions versions, const FencedTimestamp& ts,
                                    std::optional<uint64_t> hash, bool& changed);

  ReplicaStore& store_;
  HybridClock& clock_;
  std::optional<ReplicaAuth> auth_;
  std::optional<SequencerVerifier> verifier_;  // with auth_
  ReplicaConfig config_;  // after verifier_, which it copies
  std::optional<Receipts> receipts_;  // with auth_
  std::optional<RepairSeal> seal_;    // with auth_
  // Sequencer texts that verified under auth_ (which never changes): a holder
  // sends the same one with every write, and a MAC check costs more than the
  // rest of a write's handling. Emptied when it holds kVerifiedKept.
  static constexpr size_t kVerifiedKept = 1024;
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  std::unordered_map<std::string, Sequencer, TextHash, std::equal_to<>> verified_;
  uint64_t sequencer_checks_ = 0;
  Status failure_;
  ChangeFeed feed_;
  std::vector<wire::FeedChange> staged_;  // for the feed, once the batch is committed
  std::vector<FloorRaise> floors_raised_;  // by the batch being handled, or the last one
};

}  // namespace palisade::replica
