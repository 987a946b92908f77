// palisade-fuzz-corpus DIR: writes the seeds of every fuzz harness
// (tests/fuzz/*_fuzz.cc) to DIR/<harness>/seed-<name>, each made by the real
// encoder: messages of every type with their optional fields, stored records,
// journal files, signed sequencers, cluster files; and docs/protocol.md's
// examples, which protocol_doc_test checks byte for byte. ./dev fuzz runs it
// before the harnesses; a seed of the same name is overwritten, and what the
// fuzzer added to DIR stays.
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "auth/cluster_key.h"
#include "auth/config_certificate.h"
#include "auth/repair_seal.h"
#include "auth/sequencer_signer.h"
#include "base/big_endian.h"
#include "base/temp_dir.h"
#include "config/cluster_config.h"
#include "lockgroup/lock_table.h"
#include "lockgroup/paxos_messages.h"
#include "lockgroup/peer_auth.h"
#include "replica/record.h"
#include "storage/journal.h"
#include "tests/fuzz/fuzz_support.h"
#include "transport/curve_keys.h"
#include "wire/lock_protocol.h"
#include "wire/replica_protocol.h"
#include "wire/sequencer.h"

namespace palisade {
namespace {

class Corpus {
 public:
  explicit Corpus(std::filesystem::path dir) : dir_(std::move(dir)) {}

  void add(const std::string& harness, const std::string& name, std::string_view bytes) {
    const std::filesystem::path dir = dir_ / harness;
    std::filesystem::create_directories(dir);
    std::ofstream out(dir / ("seed-" + name), std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + (dir / name).string());
    ++counts_[harness];
  }
  const std::map<std::string, int>& counts() const { return counts_; }

 private:
  std::filesystem::path dir_;
  std::map<std::string, int> counts_;
};

const ClusterKey& cluster_key() {
  static const ClusterKey key = ClusterKey::from_hex(fuzz::kClusterKeyHex).value();
  return key;
}

std::string sequencer(std::string lock, uint64_t token, LockMode mode = LockMode::kExclusive,
                      std::string identity = "") {
  return SequencerSigner(cluster_key(), fuzz::kGroup)
      .sign({std::string(fuzz::kGroup), std::move(lock), mode, token, std::move(identity)});
}

// Three replicas, one with a CURVE key and a receipt id, at version 3.
wire::ReplicaSet replica_set() {
  return {.version = 3,
          .phase = wire::ReplicaPhase::kServing,
          .replicas = {{1, "tcp://10.0.1.1:7200", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7", 77},
                       {2, "tcp://10.0.1.2:7200"},
                       {3, "tcp://10.0.1.3:7200"}},
          .write_quorum = 2,
          .read_quorum = 2};
}

const std::string kCluster(16, '\x5a');
const FencedTimestamp kTs{7, (uint64_t{1'700'000'000'000} << 16) | 3};
const FencedTimestamp kOlderTs{6, uint64_t{1'699'000'000'000} << 16};

wire::Certificate certificate(size_t n) {
  wire::Certificate c;
  for (size_t i = 0; i < n; ++i) {
    wire::Receipt r;
    r.replica = 100 + i;
    r.mac.fill(static_cast<uint8_t>(0x10 + i));
    c.push_back(r);
  }
  return c;
}

wire::Version version(std::string value, FencedTimestamp ts, std::string lock = "", bool committed = false) {
  wire::Version v;
  v.ts = ts;
  v.lock = std::move(lock);
  v.state = committed ? wire::VersionState::kCommitted : wire::VersionState::kPending;
  v.tombstone = value.empty();
  v.value = std::move(value);
  if (!v.lock.empty()) v.sequencer = sequencer(v.lock, ts.token);
  return v;
}

// The messages of the replica protocol; each one also seeds the envelope.
void replica_seeds(Corpus& corpus) {
  using namespace wire;
  auto request = [&](const std::string& name, ReplicaRequestBody body, bool with_cluster = false) {
    ReplicaRequest r{17, std::move(body), with_cluster ? kCluster : ""};
    const std::string bytes = encode_request(r);
    corpus.add("replica_protocol", "request-" + name, bytes);
    corpus.add("envelope", "replica-request-" + name, bytes);
    return bytes;
  };
  request("ping", PingRequest{});
  request("ping-cluster", PingRequest{}, true);
  request("write", WriteRequest{"key", "value", false, kTs, ""});
  request("delete", WriteRequest{"key", "", true, kTs, ""});
  WriteRequest fenced{"key", "value", false, kTs, "lock"};
  fenced.sequencer = sequencer("lock", kTs.token);
  fenced.commits = {CommitRequest{"earlier", kOlderTs, 42, certificate(2)}, CommitRequest{"other", kOlderTs, 43, {}}};
  request("write-fenced", fenced, true);
  WriteRequest repair{"key", "value", false, kTs, "lock"};
  repair.committed = true;
  repair.sequencer = sequencer("lock", kTs.token);
  repair.replaces = 0xfeed;
  repair.certificate = certificate(3);
  const std::string repair_bytes = request("write-repair", repair);
  request("fence", FenceRequest{"lock", 9});
  request("fence-sequencer", FenceRequest{"lock", 9, sequencer("lock", 9)});
  request("commit", CommitRequest{"key", kTs, 1234, certificate(2)});
  request("commit-no-hash", CommitRequest{"key", kTs});
  request("purge", PurgeRequest{"key", kTs, 99});
  request("drop-tombstone", DropTombstoneRequest{"key", kTs, 5});
  request("read", ReadRequest{"key"});
  request("read-floor-of", ReadRequest{"key", "lock"});
  request("read-fenced", ReadRequest{"key", "other", FenceRequest{"lock", 7, "ps2.a.b"}});
  request("tree", TreeRequest{2, {0, 17, 255}});
  request("leaf", LeafRequest{{1, 2, 0xfffff}});
  request("stats", StatsRequest{10});
  request("read-many", ReadManyRequest{{"a", "bb", "ccc"}});
  request("scan", ScanRequest{"jobs/", "jobs/1", 10});
  request("changes", ChangesRequest{"jobs/", 41, 10});
  request("copy-many",
          CopyManyRequest{{Copy{"a", version("one", kTs, "lock", true)}, Copy{"b", version("", kOlderTs), 77}}});
  // A paused fill's completions: copies stored pending (the `pending` field).
  request("copy-many-pending", CopyManyRequest{{Copy{"a", version("one", kTs, "lock"), std::nullopt, true},
                                                Copy{"b", version("two", kOlderTs)},
                                                Copy{"c", version("three", kTs, "lock"), std::nullopt, true}}});
  const std::string config = sign_config_certificate(SequencerSigner(cluster_key(), fuzz::kGroup), replica_set());
  request("install-config", InstallConfigRequest{config});
  ReplicaRequest named{17, ReadRequest{"key"}, kCluster, 3};
  corpus.add("replica_protocol", "request-read-naming-config", encode_request(named));
  // A repairer's seal over a request (the harness opens it at this time).
  corpus.add("replica_protocol", "sealed-write-repair",
             RepairSeal(cluster_key(), fuzz::kGroup).seal(repair_bytes, fuzz::kSealTimeMs));

  auto reply = [&](const std::string& name, const ReplicaReply& r) {
    const std::string bytes = encode_reply(r);
    corpus.add("replica_protocol", "reply-" + name, bytes);
    corpus.add("envelope", "replica-reply-" + name, bytes);
  };
  ReplicaReply ok = error_reply(17, Status::ok());
  ok.clock = kTs.hlc;
  reply("ok", ok);
  ReplicaReply written = ok;
  written.receipts = certificate(1);
  reply("write-receipt", written);
  ReplicaReply fenced_reply = error_reply(17, Status(Code::kFenced, "token 7 is below the floor 9"));
  fenced_reply.floor = 9;
  fenced_reply.dropped = kOlderTs;
  reply("fenced", fenced_reply);
  ReplicaReply stale = error_reply(17, Status(Code::kStale, "newer"));
  stale.stored_ts = kTs;
  reply("stale", stale);
  ReplicaReply corrupt = error_reply(17, Status(Code::kCorrupt, "checksum"));
  corrupt.digest = 0xabcdef;
  reply("corrupt", corrupt);
  ReplicaReply read = ok;
  read.versions = {version("new", kTs, "lock"), version("old", kOlderTs, "", true)};
  read.floors = {{"lock", 7}, {"other", 3}};
  read.receipts = certificate(2);
  reply("read", read);
  ReplicaReply applied = ok;
  applied.applied = true;
  reply("applied", applied);
  ReplicaReply stale_config = error_reply(17, Status(Code::kStaleConfig, "this replica has version 3"));
  stale_config.config = config;
  reply("stale-config", stale_config);
  ReplicaReply tree = ok;
  tree.nodes = {TreeNode{1, 0}, TreeNode{0xffffffffffffffff, 3}};
  reply("tree", tree);
  ReplicaReply leaf = ok;
  LeafEntry key_entry{LeafEntry::Kind::kKey, "key", 11, false, {head_of(version("v", kTs, "lock"))}};
  LeafEntry corrupt_entry{LeafEntry::Kind::kKey, "bad", 12, true, {}};
  LeafEntry floor_entry{LeafEntry::Kind::kFloor, "lock", 13, false, {}, 9, sequencer("lock", 9)};
  leaf.entries = {key_entry, corrupt_entry, floor_entry};
  leaf.leaves_done = 2;
  reply("leaf", leaf);
  ReplicaReply stats = ok;
  stats.stats = ReplicaStats{5, 2, {{"a", 1}, {"b", 2}}, 4096, 2, true};
  reply("stats", stats);
  ReplicaReply read_many = ok;
  read_many.records = {KeyRecord{false, {version("x", kTs)}}, KeyRecord{true, {}}};
  read_many.keys_done = 2;
  reply("read-many", read_many);
  ReplicaReply scan = ok;
  scan.scanned = {ScannedKey{"a/1", KeyRecord{false, {version("x", kTs, "lock")}}},
                  ScannedKey{"a/2", KeyRecord{true, {}}}};
  scan.floors = {{"lock", 3}};
  scan.more = true;
  reply("scan", scan);
  ReplicaReply changes = ok;
  changes.feed = FeedPosition{0x5eed, 40, 43};
  changes.changes = {FeedChange{42, "jobs/1", version("x", kTs, "lock")},
                     FeedChange{43, "jobs/2", version("", kOlderTs)}};
  changes.more = true;
  reply("changes", changes);
  ReplicaReply copy_many = ok;
  copy_many.refused = 1;
  copy_many.first_refusal = "stale: newer";
  reply("copy-many", copy_many);
}

void lock_seeds(Corpus& corpus) {
  using namespace wire;
  auto request = [&](const std::string& name, LockRequestBody body, bool with_cluster = false) {
    const std::string bytes = encode_lock_request(LockRequest{23, std::move(body), with_cluster ? kCluster : ""});
    corpus.add("lock_protocol", "request-" + name, bytes);
    corpus.add("envelope", "lock-request-" + name, bytes);
  };
  request("find-master", FindMasterRequest{});
  request("open-session", OpenSessionRequest{4, 0}, true);
  request("open-session-lease", OpenSessionRequest{4, 30'000});
  request("keep-alive", KeepAliveRequest{4, 8});
  request("close-session", CloseSessionRequest{4, 8});
  request("acquire", AcquireRequest{4, 8, "lock", LockMode::kExclusive, 1000, 0, 1});
  request("acquire-shared", AcquireRequest{4, 8, "lock", LockMode::kShared, 0, 5000, 2}, true);
  request("release", ReleaseRequest{4, 8, "lock", 3});
  request("check-sequencer", CheckSequencerRequest{sequencer("lock", 9)});
  request("lock-status", LockStatusRequest{});
  request("lock-status-after", LockStatusRequest{"lock"});
  request("set-replicas", SetReplicasRequest{2, replica_set().replicas, 2, 2});
  request("set-replicas-paused", SetReplicasRequest{3, replica_set().replicas, 2, 2, ReplicaPhase::kPaused});
  request("get-replicas", GetReplicasRequest{});
  request("current-grant", CurrentGrantRequest{"lock"});

  auto reply = [&](const std::string& name, const LockReply& r) {
    const std::string bytes = encode_lock_reply(r);
    corpus.add("lock_protocol", "reply-" + name, bytes);
    corpus.add("envelope", "lock-reply-" + name, bytes);
  };
  LockReply ok;
  ok.id = 23;
  ok.epoch = (uint64_t{5} << 8) | 1;
  ok.master = 1;
  ok.master_endpoint = "tcp://127.0.0.1:7100";
  LockReply session = ok;
  session.session = 8;
  session.lease_ms = 12'000;
  reply("open-session", session);
  LockReply granted = session;
  granted.token = 9;
  granted.sequencer = sequencer("lock", 9);
  reply("acquire", granted);
  granted.sequencer = sequencer("lock", 9, LockMode::kExclusive, "worker");
  reply("acquire-identity", granted);
  LockReply shared = session;
  shared.mode = LockMode::kShared;
  reply("acquire-shared-busy", shared);
  LockReply not_master = ok;
  not_master.status = Status(Code::kNotMaster, "ask node 1");
  reply("not-master", not_master);
  LockReply current = ok;
  current.current = true;
  reply("check-sequencer", current);
  LockReply released = ok;
  released.released = true;
  reply("release", released);
  LockReply status = ok;
  status.node = 2;
  status.role = "follower";
  status.applied_slot = 44;
  status.sessions = 3;
  status.locks = {LockInfo{"lock", LockMode::kExclusive, 9, {8}, 1, 0},
                  LockInfo{"shared", LockMode::kShared, 10, {8, 12}, 0, 0},
                  LockInfo{"free", LockMode::kExclusive, 3, {}, 0, 2500}};
  reply("status", status);
  status.locks = {LockInfo{"lock", LockMode::kExclusive, 9, {8}, 0, 0, {"worker"}},
                  LockInfo{"shared", LockMode::kShared, 10, {8, 12}, 0, 0, {"worker", "auditor"}}};
  reply("status-identities", status);
  LockReply config = ok;
  config.config = sign_config_certificate(SequencerSigner(cluster_key(), fuzz::kGroup), replica_set());
  reply("get-replicas", config);
}

void paxos_seeds(Corpus& corpus) {
  using namespace lockgroup;
  const PeerAuth auth(cluster_key(), fuzz::kGroup);
  const Ballot ballot = make_ballot(5, 2);
  const std::vector<Entry> entries = {Entry{10, ballot, "value"}, Entry{11, ballot, ""}};
  auto message = [&](const std::string& name, PeerBody body) {
    PeerMessage m{2, 3, 0x1234, 7, 99, std::move(body)};
    const std::string bytes = encode_peer(m);
    corpus.add("paxos_messages", name, bytes);
    corpus.add("paxos_messages", "sealed-" + name, auth.seal(m));
    corpus.add("envelope", "peer-" + name, bytes);
  };
  message("prepare", Prepare{ballot, 10, 4});
  message("promise", Promise{ballot, true, 0, 4, 9, entries});
  message("promise-refused", Promise{ballot, false, make_ballot(6, 1), 4, 0, {}});
  message("accept", Accept{ballot, 5, 9, entries});
  message("heartbeat", Accept{ballot, 6, 11, {}});
  message("accepted", Accepted{ballot, true, 0, 5, {10, 11}});
  message("accepted-refused", Accepted{ballot, false, make_ballot(6, 1), 5, {}});
  message("catch-up-request", CatchUpRequest{10});
  message("catch-up", CatchUp{9, "snapshot bytes", {Entry{10, ballot, "value"}}});
  message("step-down", StepDown{ballot, 3});
}

// Batches of lock-table commands (Paxos values) and snapshots of the tables
// they make: every kind of command, held, shared, waited-for and delayed locks,
// and a membership.
void lock_table_seeds(Corpus& corpus) {
  using namespace lockgroup;
  const std::vector<std::vector<TaggedCommand>> batches = {
      {{1, OpenSession{}}, {2, OpenSession{30'000, "worker"}}, {3, OpenSession{0, "auditor"}}},
      {{4, Acquire{1, "a", LockMode::kExclusive, 1000, false, 0, 1}},
       {5, Acquire{2, "b", LockMode::kShared, 0, false, 0, 1}},
       {6, Acquire{3, "b", LockMode::kShared, 0, false, 0, 1}},
       {7, Acquire{1, "b", LockMode::kExclusive, 0, true, 5000, 2}},
       {8, Acquire{2, "a", LockMode::kExclusive, 0, true, 100, 2}}},
      {{9, Release{3, "b", 2}}, {10, CancelWait{2, "a"}}, {11, ExpireSession{1}}},
      {{12, EndDelay{"a", 1}}, {13, CloseSession{2}}},
      {{14, SetMembers{{{1, "tcp://10.0.0.1:7000"}, {2, "tcp://10.0.0.2:7000"}, {4, "tcp://10.0.0.4:7000"}}}}},
      {{15, SetReplicas{replica_set()}}},
      {{16, MasterEpoch{0x301}}, {17, ExpireSession{3, 0x301}}, {18, CancelWait{1, "b", 0x202}}}};
  LockTable table;
  corpus.add("lock_snapshot", "empty", table.snapshot());
  std::vector<TaggedCommand> all;
  for (size_t i = 0; i < batches.size(); ++i) {
    corpus.add("lock_commands", "batch-" + std::to_string(i), encode_batch(batches[i]));
    (void)table.apply(batches[i]);
    corpus.add("lock_snapshot", "after-batch-" + std::to_string(i), table.snapshot());
    all.insert(all.end(), batches[i].begin(), batches[i].end());
  }
  corpus.add("lock_commands", "all", encode_batch(all));
}

// docs/protocol.md's examples: "<!-- example NAME -->" and "<!-- lock-example
// NAME -->", each followed by a code block of hex digit pairs.
void doc_seeds(Corpus& corpus) {
  std::ifstream in(std::string(PALISADE_SOURCE_DIR) + "/docs/protocol.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  for (const auto& [marker, harness] : {std::pair{std::string("<!-- example "), std::string("replica_protocol")},
                                        std::pair{std::string("<!-- lock-example "), std::string("lock_protocol")}}) {
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
      const size_t name_end = text.find(" -->", at);
      const size_t open = text.find("```", name_end);
      const size_t body = text.find('\n', open);
      const size_t close = text.find("```", body);
      if (name_end == std::string::npos || open == std::string::npos || close == std::string::npos) break;
      const std::string name = text.substr(at + marker.size(), name_end - at - marker.size());
      std::string digits, bytes;
      for (char c : text.substr(body, close - body)) {
        if (std::isxdigit(static_cast<unsigned char>(c))) digits.push_back(c);
      }
      for (size_t i = 0; i + 1 < digits.size(); i += 2) {
        bytes.push_back(static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16)));
      }
      corpus.add(harness, "doc-" + name, bytes);
      corpus.add("envelope", "doc-" + name, bytes);
    }
  }
}

// Record seeds: flags(1) name_len(1) name record; flag 1 is a record without
// its checksum, which the harness appends.
void record_seeds(Corpus& corpus) {
  auto add = [&](const std::string& harness, const std::string& name, const std::string& key,
                 const std::string& record) {
    std::string sealed(1, '\0'), unsealed(1, '\1');
    sealed += static_cast<char>(key.size());
    sealed += key + record;
    unsealed += static_cast<char>(key.size());
    unsealed += key + record.substr(0, record.size() - 8);
    corpus.add(harness, name, sealed);
    corpus.add(harness, name + "-unsealed", unsealed);
  };
  using replica::Versions;
  Versions one{version("value", kTs)};
  add("record", "one", "key", replica::encode_record("key", one));
  Versions two{version("new", kTs, "lock"), version("old", kOlderTs, "", true)};
  add("record", "two", "key", replica::encode_record("key", two));
  Versions dropped{version("", kTs, "lock", true)};
  dropped.note_dropped(kOlderTs);
  dropped.note_dropped(FencedTimestamp{0, 5});
  add("record", "dropped", "k", replica::encode_record("k", dropped));
  Versions many_dropped{version("v", kTs)};
  for (uint64_t token = 1; token <= 10; ++token) many_dropped.note_dropped(FencedTimestamp{token, token * 100});
  add("record", "dropped-older", "k", replica::encode_record("k", many_dropped));
  add("record", "empty", "", replica::encode_record("", Versions{}));

  add("floor_record", "floor", "lock", replica::encode_floor_record("lock", {9, ""}));
  add("floor_record", "floor-sequencer", "lock", replica::encode_floor_record("lock", {9, sequencer("lock", 9)}));
}

// Journal seeds: mode(1) position(16) file, as journal_fuzz.cc reads them.
void journal_seeds(Corpus& corpus) {
  const TempDir dir;
  auto add = [&](const std::string& name, const std::string& path, Journal::Position from) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream file;
    file << in.rdbuf();
    for (uint8_t mode : {uint8_t{0}, uint8_t{3 | (5 << 2)}}) {
      std::string seed(1, static_cast<char>(mode));
      seed += Journal::encode_position(from) + file.str();
      corpus.add("journal", name + "-mode" + std::to_string(mode), seed);
    }
  };
  auto journal = [&](const std::string& name) {
    auto j = Journal::open(dir.sub(name), Journal::kMinFileBytes, true);
    if (!j.is_ok()) throw std::runtime_error(j.status().to_string());
    return std::move(j).value();
  };
  {
    auto j = journal("empty");
    add("empty", dir.sub("empty"), Journal::Position{});
  }
  {
    auto j = journal("three");
    for (std::string_view payload : {"first", "second record", ""}) (void)j->append(payload);
    add("three", dir.sub("three"), Journal::Position{});
  }
  {
    // Records up to the end of the ring, a checkpoint, then records that
    // wrap to its start: replayed from the checkpoint.
    auto j = journal("wrapped");
    const std::string payload(900, 'w');
    while (j->fits(payload.size())) (void)j->append(payload);
    j->checkpointed();
    const Journal::Position checkpoint = j->next();
    for (int i = 0; i < 2; ++i) (void)j->append(payload.substr(0, 300));
    add("wrapped", dir.sub("wrapped"), checkpoint);
  }
}

void sequencer_seeds(Corpus& corpus) {
  corpus.add("sequencer", "exclusive", sequencer("lock", 9));
  corpus.add("sequencer", "shared", sequencer("lock", 9, LockMode::kShared));
  corpus.add("sequencer", "identity", sequencer("lock", 9, LockMode::kExclusive, "worker"));
  corpus.add("sequencer", "fence",
             sequencer("a", 3) + "\n" + sequencer("a", 5) + "\n" + sequencer("a", 4) + "\n" + sequencer("b", 1) + "\n" +
                 sequencer("a", 5, LockMode::kShared));
  corpus.add("sequencer", "public-key", SequencerSigner(cluster_key(), fuzz::kGroup).public_key());
  corpus.add("sequencer", "payload", sequencer_format::encode_payload({"g", "l", LockMode::kExclusive, 1}));
}

void cluster_seeds(Corpus& corpus) {
  auto add = [&](const std::string& name, const ClusterConfig& config) {
    const std::string text = format_cluster_config(config);
    auto parsed = parse_cluster_config(text, "seed-" + name);
    if (!parsed.is_ok()) throw std::runtime_error("cluster seed " + name + ": " + parsed.status().to_string());
    corpus.add("cluster_config", name, text);
  };
  ClusterConfig minimal;
  minimal.group = "g";
  minimal.lockd = {LockdNode{7, "tcp://a:1"}};
  minimal.replicas = {"tcp://b:1"};
  add("minimal", minimal);

  ClusterConfig full;
  full.cluster_id = kCluster;
  full.group = "local-1";
  full.key_file = "/etc/palisade/cluster.key";
  full.replica_key_file = "/etc/palisade/replica.key";
  full.sequencer_public_key = SequencerSigner(cluster_key(), "local-1").public_key();
  full.lockd = {LockdNode{1, "tcp://127.0.0.1:7100"}, LockdNode{2, "tcp://127.0.0.1:7101"},
                LockdNode{3, "ipc:///run/palisade/lockd-3"}};
  full.replicas = {"tcp://127.0.0.1:7200", "tcp://127.0.0.1:7201", "tcp://[::1]:7202"};
  full.read_quorum = 2;
  full.write_quorum = 2;
  full.timing.session_lease_ms = 15'000;
  add("full", full);

  ClusterConfig secure = minimal;
  secure.identities = {Identity{"lockd-7", {std::string(40, '0')}, {"lockd"}},
                       Identity{"replica-b", {std::string(40, '1'), std::string(40, '2')}, {"replica", "admin"}},
                       Identity{"ops", {std::string(40, '3')}, {}}};
  secure.daemon_identity = {{"tcp://a:1", "lockd-7"}, {"tcp://b:1", "replica-b"}};
  add("secure", secure);
}

void key_file_seeds(Corpus& corpus) {
  corpus.add("key_files", "curve", transport::key_file_text({"lockd-1", transport::generate_curve_keys()}));
  corpus.add("key_files", "curve-comments",
             "# a key pair\n\n" + transport::key_file_text({"ops.admin_2", transport::generate_curve_keys()}));
  corpus.add("key_files", "cluster-key", std::string(fuzz::kClusterKeyHex) + "\n");
}

}  // namespace
}  // namespace palisade

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: palisade-fuzz-corpus DIR\n";
    return 2;
  }
  palisade::Corpus corpus(argv[1]);
  palisade::replica_seeds(corpus);
  palisade::lock_seeds(corpus);
  palisade::paxos_seeds(corpus);
  palisade::lock_table_seeds(corpus);
  palisade::doc_seeds(corpus);
  palisade::record_seeds(corpus);
  palisade::journal_seeds(corpus);
  palisade::sequencer_seeds(corpus);
  palisade::cluster_seeds(corpus);
  palisade::key_file_seeds(corpus);
  for (const auto& [harness, count] : corpus.counts()) std::cout << harness << ": " << count << " seeds\n";
  return 0;
}
