// Messages between clients and palisade-replica (docs/protocol.md, "Replica").
// One request, one reply, matched by id.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "wire/envelope.h"
#include "palisade/status.h"
#include "palisade/timestamp.h"

namespace palisade::wire {

// A ZeroMQ message to a replica holds one request per frame, at most this many;
// the reply is one message with a reply per frame, in order. A message with
// more frames is refused whole (docs/protocol.md, "Transport").
constexpr size_t kMaxRequestsPerMessage = 64;

enum class VersionState : uint8_t { kPending, kCommitted };
std::string_view state_name(VersionState state);

// One version of a key. A replica keeps, per key, its newest committed version
// and the pending versions newer than it (docs/storage.md).
struct Version {
  FencedTimestamp ts;
  std::string lock;  // empty: written without a lock (token 0)
  VersionState state = VersionState::kPending;
  bool tombstone = false;
  std::string value;  // empty for a tombstone
  // The sequencer the version was written under (empty without a lock): repair
  // copies carry it, so that replicas can check them too.
  std::string sequencer{};

  friend bool operator==(const Version&, const Version&) = default;
};

// Hash of what a write carries besides its timestamp: orders equal timestamps
// with different content the same way on every replica.
uint64_t content_hash(const Version& v);
// The order of versions everywhere: timestamp, then content hash.
bool newer(const Version& a, const Version& b);
// The same write: equal timestamp and content.
bool same_write(const Version& a, const Version& b);

// A replica's receipt for a version it stores: its id (random, made with its
// data directory) and a MAC of id, key, timestamp and content hash under a key
// only replicas derive (replica/receipts.h). W receipts of distinct replicas
// are a certificate: proof that W replicas acknowledged the version, which a
// replica that checks sequencers asks of a commit of a version under a lock.
struct Receipt {
  uint64_t replica = 0;
  std::array<uint8_t, 16> mac{};
  friend bool operator==(const Receipt&, const Receipt&) = default;
};
using Certificate = std::vector<Receipt>;
constexpr size_t kReceiptBytes = 24;
constexpr size_t kMaxCertificateReceipts = 15;

struct PingRequest {
  friend bool operator==(const PingRequest&, const PingRequest&) = default;
};
struct CommitRequest {
  std::string key;
  FencedTimestamp ts;
  std::optional<uint64_t> hash{};
  // Receipts of the version from W replicas (needed under a lock, unless sealed).
  Certificate certificate{};
  friend bool operator==(const CommitRequest&, const CommitRequest&) = default;
};
// The bytes a commit takes inside a write (WriteRequest::commits), at most
// Limits::kMaxCarriedCommitBytes of them per write.
size_t carried_commit_bytes(const CommitRequest& c);
struct WriteRequest {  // a put, or a delete when tombstone is set
  std::string key;
  std::string value;
  bool tombstone = false;
  FencedTimestamp ts;
  std::string lock;
  // Store it as committed: only for versions known to be acknowledged (read
  // repair and anti-entropy copying them). The fence floor does not refuse it,
  // so under a lock it needs a certificate, or a repairer's seal.
  bool committed = false;
  // The sequencer text of the lock grant (wire/sequencer.h), at most
  // kMaxSequencerBytes; empty when none. A replica that holds the cluster key
  // requires a valid one on every fenced write, repair copies included.
  std::string sequencer{};
  // Only with `committed`: the digest of the corrupt record this repair was
  // decided against (ReplicaReply::digest of its `corrupt` answer). A corrupt
  // record is replaced only by a repair that names its current digest; over a
  // healthy record the field changes nothing.
  std::optional<uint64_t> replaces{};
  // Commits of earlier writes to this replica, carried here rather than sent
  // alone: the replica applies them before the write, whatever the write's own
  // answer, and nothing answers them. Only commits with a hash are carried
  // (the encoder leaves out the others).
  std::vector<CommitRequest> commits{};
  // Only with `committed`: the version's receipts from W replicas.
  Certificate certificate{};
  friend bool operator==(const WriteRequest&, const WriteRequest&) = default;
};
struct FenceRequest {
  std::string lock;
  uint64_t token = 0;
  // As for WriteRequest: required by a replica that holds the cluster key.
  std::string sequencer{};
  friend bool operator==(const FenceRequest&, const FenceRequest&) = default;
};
// Commit and purge name a version by timestamp and, since two writes can share
// a timestamp, by content_hash() when `hash` is set.
struct PurgeRequest {  // drop a pending version found superseded (docs/design.md "Fence safety" 3)
  std::string key;
  FencedTimestamp ts;
  std::optional<uint64_t> hash{};
  friend bool operator==(const PurgeRequest&, const PurgeRequest&) = default;
};
// Whether `v` is the version a commit or purge names.
bool names(const Version& v, const FencedTimestamp& ts, const std::optional<uint64_t>& hash);
// Anti-entropy (docs/anti-entropy.md). Each replica keeps a Merkle tree over
// the 64-bit positions of its entries (keys and fence floors): a node at
// `level` covers the positions whose top 4 * level bits are its index; the
// leaves are at kTreeLeafLevel. A node's digest is the XOR of its entries'
// digests, so equal digests mean (but for a 2^-64 chance) equal contents.
constexpr uint32_t kTreeFanoutBits = 4;
constexpr uint32_t kTreeLeafLevel = 5;
// Most nodes a tree request names, and leaves a leaf request names.
constexpr size_t kMaxTreeNodesPerRequest = 4096;
constexpr size_t kMaxLeavesPerRequest = 4096;
// A leaf reply stops listing once its entries pass this size (after at least one
// leaf), well within a reply's limit; the client asks again for the rest.
constexpr size_t kLeafReplyBudgetBytes = size_t{256} << 10;
// Nodes at a level: 16^level.
constexpr uint64_t tree_width(uint32_t level) { return uint64_t{1} << (kTreeFanoutBits * level); }
// The node at `level` that covers `position`.
constexpr uint64_t tree_node_of(uint64_t position, uint32_t level) {
  return level == 0 ? 0 : position >> (64 - kTreeFanoutBits * level);
}

struct TreeNode {
  uint64_t digest = 0;
  // Keys under the node whose only version is a committed tombstone: where
  // tombstone collection must look even when replicas agree.
  uint32_t tombstones = 0;
  friend bool operator==(const TreeNode&, const TreeNode&) = default;
};

// What a version is, without its value: enough to decide which replicas lack it.
struct VersionHead {
  FencedTimestamp ts;
  uint64_t hash = 0;  // content_hash()
  VersionState state = VersionState::kPending;
  bool tombstone = false;
  std::string lock;
  friend bool operator==(const VersionHead&, const VersionHead&) = default;
};
VersionHead head_of(const Version& v);

// One entry of a leaf: a key with the heads of its versions, or a lock's fence floor.
struct LeafEntry {
  enum class Kind : uint8_t { kKey = 1, kFloor = 2 };
  Kind kind = Kind::kKey;
  std::string name;  // the key, or the lock
  uint64_t digest = 0;
  bool corrupt = false;            // key: its record failed its checksum (no heads)
  std::vector<VersionHead> heads;  // key: newest first
  uint64_t floor = 0;              // floor
  std::string sequencer{};         // floor: the sequencer that raised it, when kept
  friend bool operator==(const LeafEntry&, const LeafEntry&) = default;
};

struct TreeRequest {  // digests of nodes at one level
  uint32_t level = 0;
  std::vector<uint64_t> nodes;
  friend bool operator==(const TreeRequest&, const TreeRequest&) = default;
};
struct LeafRequest {  // the entries of leaves
  std::vector<uint64_t> leaves;
  friend bool operator==(const LeafRequest&, const LeafRequest&) = default;
};
// Forgets a key whose only version is the committed tombstone named (the
// anti-entropy driver sends it once every replica holds it and gc_grace passed).
struct DropTombstoneRequest {
  std::string key;
  FencedTimestamp ts;
  std::optional<uint64_t> hash{};
  friend bool operator==(const DropTombstoneRequest&, const DropTombstoneRequest&) = default;
};

// What a replica holds, for `palisade status`: counts, and the fence floors
// in lock-name order, at most max_floors of them (kMaxStatsFloors at most).
constexpr size_t kMaxStatsFloors = 1000;
struct StatsRequest {
  uint32_t max_floors = kMaxStatsFloors;
  friend bool operator==(const StatsRequest&, const StatsRequest&) = default;
};
struct ReplicaStats {
  uint64_t keys = 0;         // keys stored, tombstones included
  uint64_t floor_count = 0;  // locks with a fence floor; `floors` was cut when it lists fewer
  std::vector<std::pair<std::string, uint64_t>> floors;  // lock -> floor, by lock name
  uint64_t data_bytes = 0;   // bytes of the data file in use (0: not on disk)
  uint32_t format = 0;       // storage format of the data directory (0: not on disk)
  bool insecure = false;     // started with --insecure: accepts any fencing token, unchecked
  uint64_t config_version = 0;  // the replica set version it keeps (0: none, the cluster file's)
  bool config_paused = false;  // that set is paused for a replacement
  uint64_t receipt_id = 0;  // the id in its receipts (Receipt::replica); 0: it makes none
  friend bool operator==(const ReplicaStats&, const ReplicaStats&) = default;
};

// Batches for anti-entropy's reads and repair copies: one request for many
// keys, in a compact binary encoding (docs/protocol.md "read_many", "copy_many").
constexpr size_t kMaxKeysPerReadMany = 1024;
constexpr size_t kMaxCopiesPerRequest = 1024;
// A read_many reply stops before the key that would bring it past this size
// (it always holds one key); the client asks again for the rest.
constexpr size_t kReadManyReplyBudgetBytes = Limits::kListReplyBytes;
struct ReadManyRequest {
  std::vector<std::string> keys;
  friend bool operator==(const ReadManyRequest&, const ReadManyRequest&) = default;
};
// What read_many answers for one key: its versions, or that its record is corrupt.
struct KeyRecord {
  bool corrupt = false;
  std::vector<Version> versions;  // newest first
  friend bool operator==(const KeyRecord&, const KeyRecord&) = default;
};
// A committed copy of `version` (its state is ignored), as a `write` with
// `committed: true` (and `replaces`) would store it.
struct Copy {
  std::string key;
  Version version;
  std::optional<uint64_t> replaces{};  // as WriteRequest::replaces
  // Stored pending, not committed: a paused fill completing a version that
  // may have been acknowledged (docs/anti-entropy.md). Never with `replaces`.
  bool pending = false;
  friend bool operator==(const Copy&, const Copy&) = default;
};
struct CopyManyRequest {
  std::vector<Copy> copies;
  friend bool operator==(const CopyManyRequest&, const CopyManyRequest&) = default;
};

// A prefix read (docs/protocol.md "scan"): the keys that start with
// `prefix` and sort after `after` (byte order), at most `limit` of them, each
// with every version the replica holds, as `read` gives them.
constexpr size_t kMaxScanKeys = 1000;
// A scan reply stops before the key that would bring it past this size (it
// always holds one key); the asker asks again from the last key listed.
constexpr size_t kScanReplyBudgetBytes = Limits::kListReplyBytes;
struct ScanRequest {
  std::string prefix;
  std::string after{};  // empty: from the first key of the prefix
  uint32_t limit = kMaxScanKeys;  // 1 to kMaxScanKeys
  friend bool operator==(const ScanRequest&, const ScanRequest&) = default;
};
// A replica's change feed (docs/protocol.md "changes"): the versions it
// stored by a client's write and the versions it committed, in the order it
// did, numbered from 1. It lives in memory: `log` is made anew when the
// replica starts, and the oldest changes are forgotten past a bound.
constexpr size_t kMaxChangesPerReply = 1000;
// A changes reply stops before the change that would bring it past this size
// (it always holds one change).
constexpr size_t kChangesReplyBudgetBytes = Limits::kListReplyBytes;
struct ChangesRequest {
  std::string prefix{};  // only changes of keys that start with it
  uint64_t after = 0;  // the changes numbered after it; 0: from the oldest kept
  uint32_t limit = kMaxChangesPerReply;  // 1 to kMaxChangesPerReply
  friend bool operator==(const ChangesRequest&, const ChangesRequest&) = default;
};
struct FeedChange {
  uint64_t seq = 0;
  std::string key;
  Version version;  // committed, or pending as a write stored it
  friend bool operator==(const FeedChange&, const FeedChange&) = default;
};
// Where a changes reply stands in the feed.
struct FeedPosition {
  uint64_t log = 0;  // the feed's id, made when the replica started (never 0)
  uint64_t first = 0;  // the oldest change kept (0: none yet); older ones are forgotten
  uint64_t next = 0;  // ask `after` this next: the last change the reply looked at
  friend bool operator==(const FeedPosition&, const FeedPosition&) = default;
};

// One key a scan listed: its versions, or that its record is corrupt.
struct ScannedKey {
  std::string key;
  KeyRecord record;
  friend bool operator==(const ScannedKey&, const ScannedKey&) = default;
};

struct ReadRequest {
  std::string key;
  // When set, the reply's floors include this lock's, also when no version of
  // the key names it (readers deciding about another replica's version).
  std::string floor_of{};
  // A fenced read: the replica takes this fence first, as a `fence` request
  // would, then reads, in one step. So a write under an older token that the
  // answer does not hold is refused by this replica from then on: a
  // read-modify-write under the lock (ConditionalStore) learns every older
  // write that can still be acknowledged (docs/consistency.md).
  std::optional<FenceRequest> fence{};
  friend bool operator==(const ReadRequest&, const ReadRequest&) = default;
};

// Gives the replica the lock group's certificate of a replica set
// (wire/config_certificate.h), which it keeps when it is newer than its own.
struct InstallConfigRequest {
  std::string certificate;
  friend bool operator==(const InstallConfigRequest&, const InstallConfigRequest&) = default;
};

using ReplicaRequestBody =
    std::variant<PingRequest, WriteRequest, FenceRequest, CommitRequest, ReadRequest, PurgeRequest, TreeRequest,
                 LeafRequest, DropTombstoneRequest, StatsRequest, ReadManyRequest, CopyManyRequest,
                 InstallConfigRequest, ScanRequest, ChangesRequest>;

// The wire type of a request ("write", ...), for metrics and logs.
std::string_view request_type(const ReplicaRequestBody& body);

struct ReplicaRequest {
  uint64_t id = 0;
  ReplicaRequestBody body;
  // The id of the cluster the sender means (base/cluster_id.h), on the wire
  // as "cluster"; empty: any. A replica of another cluster answers wrong_cluster.
  std::string cluster{};
  // The version of the replica set the sender uses (its config certificate's),
  // on the wire as "config" when not 0; 0: none, the cluster file's list.
  uint64_t config = 0;
  // Set by the receiving replica, never encoded: the frame carried a valid
  // repairer's seal (auth/repair_seal.h).
  bool from_repairer = false;
  friend bool operator==(const ReplicaRequest&, const ReplicaRequest&) = default;
};

// One reply shape for every request; which fields are set depends on the request
// and the code (docs/protocol.md).
struct ReplicaReply {
  uint64_t id = 0;
  Status status;
  uint64_t clock = 0;                        // the replica's HLC when it answered
  uint64_t floor = 0;                        // fence: floor after; fenced: the floor
  std::optional<FencedTimestamp> stored_ts;  // stale: the newer committed timestamp
  // fenced, stale: the newest version of the key the replica dropped for a
  // committed one; a refused write no newer may have been stored there before.
  std::optional<FencedTimestamp> dropped;
  std::optional<uint64_t> digest;            // corrupt (the key's record): the digest of its raw bytes
  std::vector<Version> versions;             // read: newest first; empty when the key has none
  std::map<std::string, uint64_t> floors;  // read, scan: fence floor of each lock named by versions (or floor_of)
  // From a replica that checks sequencers: write ok: its receipt of the
  // version; read: one per version, in the order of `versions`; scan: one per
  // version of the keys listed, in order.
  std::vector<Receipt> receipts;

  const Version* newest() const { return versions.empty() ? nullptr : &versions.front(); }
  bool applied = false;                      // commit, purge, drop_tombstone: whether it changed anything
  std::vector<TreeNode> nodes;               // tree: one per node asked, in order
  std::vector<LeafEntry> entries;            // leaf: the entries of the leaves listed, by position
  uint64_t leaves_done = 0;                  // leaf: how many of the leaves asked are listed (a prefix)
  std::optional<ReplicaStats> stats;         // stats
  std::vector<KeyRecord> records;            // read_many: one per key listed, in the order asked
  uint64_t keys_done = 0;                    // read_many: how many of the keys asked are listed (a prefix)
  std::vector<ScannedKey> scanned;  // scan: the keys listed, in byte order
  bool more = false;  // scan: keys of the prefix may follow the last one listed; changes: changes may follow
  std::optional<FeedPosition> feed{};  // changes
  std::vector<FeedChange> changes{};  // changes: in the order of the feed
  uint64_t refused = 0;                      // copy_many: copies not stored
  std::string first_refusal{};               // copy_many: why the first of them was refused
  // stale_config, install_config: the config certificate the replica holds.
  std::string config{};
};

std::string encode_request(const ReplicaRequest& request);
std::string encode_reply(const ReplicaReply& reply);

// On failure *id_out holds the request's id when it could be read, else 0.
Result<ReplicaRequest> decode_request(std::string_view bytes, const Limits& limits, uint64_t* id_out = nullptr);
Result<ReplicaReply> decode_reply(std::string_view bytes, const Limits& limits);

// The reply a node sends for a request it could not decode.
ReplicaReply error_reply(uint64_t id, Status status);

}  // namespace palisade::wire
