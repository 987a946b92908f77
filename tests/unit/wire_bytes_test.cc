// Every message type's encoding, pinned byte for byte: the round-trip tests
// accept any encoding that decodes the same, and docs/protocol.md spells out
// only some messages, so this is what keeps the codecs' wire format from
// drifting when their code changes. One message per request type and per
// optional reply field, with every optional field present and absent.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "wire/lock_protocol.h"
#include "wire/replica_protocol.h"
#include "tests/unit/hex_text.h"

namespace palisade {
namespace {

using namespace wire;

const FencedTimestamp kTs{7, 0x0191'2345'6789'0004};
const Version kVersion{kTs, "L", VersionState::kCommitted, false, "val", "ps1.a.b"};
const Version kTombstone{{3, 9}, "", VersionState::kPending, true, ""};

struct Pinned {
  const char* name;
  std::string bytes;
  const char* hex;
};

std::string hex(const std::string& bytes) {
  std::string out = test::hex_block(bytes);
  for (char& c : out) c = c == '\n' ? ' ' : c;
  if (!out.empty()) out.pop_back();
  return out;
}

std::vector<Pinned> replica_requests() {
  return {
      {"ping", encode_request({1, PingRequest{}}), "83 a1 76 01 a2 69 64 01 a4 74 79 70 65 a4 70 69 6e 67"},
      {"write", encode_request({2, WriteRequest{"k", "val", false, kTs, "L"}}),
       "88 a1 76 01 a2 69 64 02 a4 74 79 70 65 a5 77 72 69 74 65 a3 6b 65 79 c4 01 6b a5 76 61 6c 75 65 "
       "c4 03 76 61 6c a9 74 6f 6d 62 73 74 6f 6e 65 c2 a2 74 73 c4 10 00 00 00 00 00 00 00 07 01 91 23 "
       "45 67 89 00 04 a4 6c 6f 63 6b a1 4c"},
      {"committed write with a sequencer",
       encode_request({3, WriteRequest{"k", "val", false, kTs, "L", true, "ps1.a.b"}}),
       "8a a1 76 01 a2 69 64 03 a4 74 79 70 65 a5 77 72 69 74 65 a3 6b 65 79 c4 01 6b a5 76 61 6c 75 65 "
       "c4 03 76 61 6c a9 74 6f 6d 62 73 74 6f 6e 65 c2 a2 74 73 c4 10 00 00 00 00 00 00 00 07 01 91 23 "
       "45 67 89 00 04 a4 6c 6f 63 6b a1 4c a9 63 6f 6d 6d 69 74 74 65 64 c3 a9 73 65 71 75 65 6e 63 65 "
       "72 a7 70 73 31 2e 61 2e 62"},
      {"tombstone write", encode_request({4, WriteRequest{"k", "", true, kTs, ""}}),
       "87 a1 76 01 a2 69 64 04 a4 74 79 70 65 a5 77 72 69 74 65 a3 6b 65 79 c4 01 6b a9 74 6f 6d 62 73 "
       "74 6f 6e 65 c3 a2 74 73 c4 10 00 00 00 00 00 00 00 07 01 91 23 45 67 89 00 04 a4 6c 6f 63 6b a0"},
      {"fence", encode_request({5, FenceRequest{"L", 9}}),
       "85 a1 76 01 a2 69 64 05 a4 74 79 70 65 a5 66 65 6e 63 65 a4 6c 6f 63 6b a1 4c a5 74 6f 6b 65 6e "
       "09"},
      {"fence with a sequencer", encode_request({6, FenceRequest{"L", UINT64_MAX, "ps1.a.b"}}),
       "86 a1 76 01 a2 69 64 06 a4 74 79 70 65 a5 66 65 6e 63 65 a4 6c 6f 63 6b a1 4c a5 74 6f 6b 65 6e "
       "cf ff ff ff ff ff ff ff ff a9 73 65 71 75 65 6e 63 65 72 a7 70 73 31 2e 61 2e 62"},
      {"commit", encode_request({7, CommitRequest{"k", kTs}}),
       "85 a1 76 01 a2 69 64 07 a4 74 79 70 65 a6 63 6f 6d 6d 69 74 a3 6b 65 79 c4 01 6b a2 74 73 c4 10 "
       "00 00 00 00 00 00 00 07 01 91 23 45 67 89 00 04"},
      {"commit with a hash", encode_request({8, CommitRequest{"k", kTs, 0xabcd}}),
       "86 a1 76 01 a2 69 64 08 a4 74 79 70 65 a6 63 6f 6d 6d 69 74 a3 6b 65 79 c4 01 6b a2 74 73 c4 10 "
       "00 00 00 00 00 00 00 07 01 91 23 45 67 89 00 04 a4 68 61 73 68 cd ab cd"},
      {"purge with a hash", encode_request({9, PurgeRequest{"k", kTs, 1}}),
       "86 a1 76 01 a2 69 64 09 a4 74 79 70 65 a5 70 75 72 67 65 a3 6b 65 79 c4 01 6b a2 74 73 c4 10 00 "
       "00 00 00 00 00 00 07 01 91 23 45 67 89 00 04 a4 68 61 73 68 01"},
      {"drop_tombstone", encode_request({10, DropTombstoneRequest{"k", kTs}}),
       "85 a1 76 01 a2 69 64 0a a4 74 79 70 65 ae 64 72 6f 70 5f 74 6f 6d 62 73 74 6f 6e 65 a3 6b 65 79 "
       "c4 01 6b a2 74 73 c4 10 00 00 00 00 00 00 00 07 01 91 23 45 67 89 00 04"},
      {"read", encode_request({11, ReadRequest{"k"}}),
       "84 a1 76 01 a2 69 64 0b a4 74 79 70 65 a4 72 65 61 64 a3 6b 65 79 c4 01 6b"},
      {"read with floor_of", encode_request({12, ReadRequest{"k", "M"}}),
       "85 a1 76 01 a2 69 64 0c a4 74 79 70 65 a4 72 65 61 64 a3 6b 65 79 c4 01 6b a8 66 6c 6f 6f 72 5f "
       "6f 66 a1 4d"},
      {"fenced read", encode_request({12, ReadRequest{"k", "", FenceRequest{"L", 7, "ps1.a.b"}}}),
       "87 a1 76 01 a2 69 64 0c a4 74 79 70 65 a4 72 65 61 64 a3 6b 65 79 c4 01 6b a4 6c 6f 63 6b a1 4c "
       "a5 74 6f 6b 65 6e 07 a9 73 65 71 75 65 6e 63 65 72 a7 70 73 31 2e 61 2e 62"},
      {"tree", encode_request({13, TreeRequest{2, {0, 255}}}),
       "85 a1 76 01 a2 69 64 0d a4 74 79 70 65 a4 74 72 65 65 a5 6c 65 76 65 6c 02 a5 6e 6f 64 65 73 c4 "
       "10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ff"},
      {"leaf", encode_request({14, LeafRequest{{1, 0xfffff}}}),
       "84 a1 76 01 a2 69 64 0e a4 74 79 70 65 a4 6c 65 61 66 a6 6c 65 61 76 65 73 c4 10 00 00 00 00 00 "
       "00 00 01 00 00 00 00 00 0f ff ff"},
      {"read_many", encode_request({15, ReadManyRequest{{"a", "bc"}}}),
       "84 a1 76 01 a2 69 64 0f a4 74 79 70 65 a9 72 65 61 64 5f 6d 61 6e 79 a4 6b 65 79 73 c4 07 00 01 "
       "61 00 02 62 63"},
      {"copy_many", encode_request({16, CopyManyRequest{{Copy{"k", kVersion}, Copy{"t", kTombstone}}}}),
       "84 a1 76 01 a2 69 64 10 a4 74 79 70 65 a9 63 6f 70 79 5f 6d 61 6e 79 a6 63 6f 70 69 65 73 c4 43 "
       "00 01 6b 01 00 00 00 00 00 00 00 07 01 91 23 45 67 89 00 04 00 01 4c 00 00 00 03 76 61 6c 00 07 "
       "70 73 31 2e 61 2e 62 00 01 74 02 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00 09 00 00 00 00 00 "
       "00 00 00"},
      {"stats", encode_request({17, StatsRequest{}}),
       "84 a1 76 01 a2 69 64 11 a4 74 79 70 65 a5 73 74 61 74 73 aa 6d 61 78 5f 66 6c 6f 6f 72 73 cd 03 "
       "e8"},
      {"stats of few floors", encode_request({18, StatsRequest{3}}),
       "84 a1 76 01 a2 69 64 12 a4 74 79 70 65 a5 73 74 61 74 73 aa 6d 61 78 5f 66 6c 6f 6f 72 73 03"},
  };
}

ReplicaReply replica_reply(uint64_t id) {
  ReplicaReply r;
  r.id = id;
  r.clock = 0x0191'2345'6789'0005;
  return r;
}

std::vector<Pinned> replica_replies() {
  std::vector<Pinned> out;
  auto add = [&](const char* name, const ReplicaReply& r, const char* hex) {
    out.push_back({name, encode_reply(r), hex});
  };
  add("plain", replica_reply(1),
      "85 a1 76 01 a2 69 64 01 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 63 6c 6f 63 "
      "6b cf 01 91 23 45 67 89 00 05");
  add("an error", error_reply(2, Status(Code::kFenced, "token 4 is below the fence floor 7")),
      "86 a1 76 01 a2 69 64 02 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a6 66 65 6e 63 65 64 a7 "
      "6d 65 73 73 61 67 65 d9 22 74 6f 6b 65 6e 20 34 20 69 73 20 62 65 6c 6f 77 20 74 68 65 20 66 65 "
      "6e 63 65 20 66 6c 6f 6f 72 20 37 a5 63 6c 6f 63 6b 00");
  ReplicaReply r = replica_reply(3);
  r.floor = 7;
  r.stored_ts = kTs;
  r.applied = true;
  add("floor, stored_ts and applied", r,
      "88 a1 76 01 a2 69 64 03 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 63 6c 6f 63 "
      "6b cf 01 91 23 45 67 89 00 05 a5 66 6c 6f 6f 72 07 a9 73 74 6f 72 65 64 5f 74 73 c4 10 00 00 00 "
      "00 00 00 00 07 01 91 23 45 67 89 00 04 a7 61 70 70 6c 69 65 64 c3");
  r = replica_reply(4);
  r.versions = {kVersion, kTombstone};
  r.floors = {{"L", 3}, {"M", UINT64_MAX}};
  add("versions and floors", r,
      "87 a1 76 01 a2 69 64 04 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 63 6c 6f 63 "
      "6b cf 01 91 23 45 67 89 00 05 a8 76 65 72 73 69 6f 6e 73 92 86 a2 74 73 c4 10 00 00 00 00 00 00 "
      "00 07 01 91 23 45 67 89 00 04 a4 6c 6f 63 6b a1 4c a5 73 74 61 74 65 a9 63 6f 6d 6d 69 74 74 65 "
      "64 a9 74 6f 6d 62 73 74 6f 6e 65 c2 a5 76 61 6c 75 65 c4 03 76 61 6c a9 73 65 71 75 65 6e 63 65 "
      "72 a7 70 73 31 2e 61 2e 62 85 a2 74 73 c4 10 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00 09 a4 "
      "6c 6f 63 6b a0 a5 73 74 61 74 65 a7 70 65 6e 64 69 6e 67 a9 74 6f 6d 62 73 74 6f 6e 65 c3 a5 76 "
      "61 6c 75 65 c4 00 a6 66 6c 6f 6f 72 73 82 a1 4c 03 a1 4d cf ff ff ff ff ff ff ff ff");
  r = replica_reply(5);
  r.nodes = {{1, 2}, {UINT64_MAX, UINT32_MAX}};
  add("nodes", r,
      "86 a1 76 01 a2 69 64 05 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 63 6c 6f 63 "
      "6b cf 01 91 23 45 67 89 00 05 a5 6e 6f 64 65 73 c4 18 00 00 00 00 00 00 00 01 00 00 00 02 ff ff "
      "ff ff ff ff ff ff ff ff ff ff");
  r = replica_reply(6);
  LeafEntry key{LeafEntry::Kind::kKey, "k", 11, false, {head_of(kVersion), head_of(kTombstone)}};
  LeafEntry corrupt{LeafEntry::Kind::kKey, "c", 12, true, {}};
  LeafEntry floor{LeafEntry::Kind::kFloor, "L", 13, false, {}, 9, "ps1.a.b"};
  r.entries = {key, corrupt, floor};
  r.leaves_done = 2;
  add("entries and leaves_done", r,
      "87 a1 76 01 a2 69 64 06 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 63 6c 6f 63 "
      "6b cf 01 91 23 45 67 89 00 05 a7 65 6e 74 72 69 65 73 c4 70 01 00 01 6b 00 00 00 00 00 00 00 0b "
      "00 02 01 00 00 00 00 00 00 00 07 01 91 23 45 67 89 00 04 8c 80 e1 46 e6 80 0f 65 00 01 4c 02 00 "
      "00 00 00 00 00 00 03 00 00 00 00 00 00 00 09 45 c7 22 ff 5b 9c dc 07 00 00 01 00 01 63 00 00 00 "
      "00 00 00 00 0c 01 00 02 00 01 4c 00 00 00 00 00 00 00 0d 00 00 00 00 00 00 00 09 00 07 70 73 31 "
      "2e 61 2e 62 ab 6c 65 61 76 65 73 5f 64 6f 6e 65 02");
  r = replica_reply(7);
  r.stats = ReplicaStats{10, 2, {{"L", 3}, {"M", 4}}, 4096, 2};
  add("stats", r,
      "86 a1 76 01 a2 69 64 07 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 63 6c 6f 63 "
      "6b cf 01 91 23 45 67 89 00 05 a5 73 74 61 74 73 85 a4 6b 65 79 73 0a ab 66 6c 6f 6f 72 5f 63 6f "
      "75 6e 74 02 a6 66 6c 6f 6f 72 73 c4 16 00 01 4c 00 00 00 00 00 00 00 03 00 01 4d 00 00 00 00 00 "
      "00 00 04 aa 64 61 74 61 5f 62 79 74 65 73 cd 10 00 a6 66 6f 72 6d 61 74 02");
  r = replica_reply(8);
  r.records = {KeyRecord{false, {kVersion}}, KeyRecord{true, {}}, KeyRecord{false, {kTombstone, kVersion}}};
  r.keys_done = 3;
  add("records and keys_done", r,
      "87 a1 76 01 a2 69 64 08 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 63 6c 6f 63 "
      "6b cf 01 91 23 45 67 89 00 05 a7 72 65 63 6f 72 64 73 c4 67 00 01 01 00 00 00 00 00 00 00 07 01 "
      "91 23 45 67 89 00 04 00 01 4c 00 00 00 03 76 61 6c 00 07 70 73 31 2e 61 2e 62 01 00 00 02 02 00 "
      "00 00 00 00 00 00 03 00 00 00 00 00 00 00 09 00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 07 "
      "01 91 23 45 67 89 00 04 00 01 4c 00 00 00 03 76 61 6c 00 07 70 73 31 2e 61 2e 62 a9 6b 65 79 73 "
      "5f 64 6f 6e 65 03");
  r = replica_reply(9);
  r.refused = 2;
  r.first_refusal = "fenced: token 4";
  add("refused", r,
      "87 a1 76 01 a2 69 64 09 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 63 6c 6f 63 "
      "6b cf 01 91 23 45 67 89 00 05 a7 72 65 66 75 73 65 64 02 ad 66 69 72 73 74 5f 72 65 66 75 73 61 "
      "6c af 66 65 6e 63 65 64 3a 20 74 6f 6b 65 6e 20 34");
  return out;
}

std::vector<Pinned> lock_requests() {
  return {
      {"find_master", encode_lock_request({1, FindMasterRequest{}}),
       "83 a1 76 01 a2 69 64 01 a4 74 79 70 65 ab 66 69 6e 64 5f 6d 61 73 74 65 72"},
      {"open_session", encode_lock_request({2, OpenSessionRequest{0x301}}),
       "84 a1 76 01 a2 69 64 02 a4 74 79 70 65 ac 6f 70 65 6e 5f 73 65 73 73 69 6f 6e a5 65 70 6f 63 68 "
       "cd 03 01"},
      {"open_session with a lease", encode_lock_request({3, OpenSessionRequest{0x301, 30'000}}),
       "85 a1 76 01 a2 69 64 03 a4 74 79 70 65 ac 6f 70 65 6e 5f 73 65 73 73 69 6f 6e a5 65 70 6f 63 68 "
       "cd 03 01 a8 6c 65 61 73 65 5f 6d 73 cd 75 30"},
      {"keep_alive", encode_lock_request({4, KeepAliveRequest{0x301, 17}}),
       "85 a1 76 01 a2 69 64 04 a4 74 79 70 65 aa 6b 65 65 70 5f 61 6c 69 76 65 a5 65 70 6f 63 68 cd 03 "
       "01 a7 73 65 73 73 69 6f 6e 11"},
      {"close_session", encode_lock_request({5, CloseSessionRequest{0x301, 17}}),
       "85 a1 76 01 a2 69 64 05 a4 74 79 70 65 ad 63 6c 6f 73 65 5f 73 65 73 73 69 6f 6e a5 65 70 6f 63 "
       "68 cd 03 01 a7 73 65 73 73 69 6f 6e 11"},
      {"acquire", encode_lock_request({6, AcquireRequest{0x301, 17, "L", LockMode::kShared, 10'000, 250, 9}}),
       "8a a1 76 01 a2 69 64 06 a4 74 79 70 65 a7 61 63 71 75 69 72 65 a5 65 70 6f 63 68 cd 03 01 a7 73 "
       "65 73 73 69 6f 6e 11 a4 63 61 6c 6c 09 a4 6c 6f 63 6b a1 4c a4 6d 6f 64 65 a6 73 68 61 72 65 64 "
       "ad 6c 6f 63 6b 5f 64 65 6c 61 79 5f 6d 73 cd 27 10 a7 77 61 69 74 5f 6d 73 cc fa"},
      {"release", encode_lock_request({7, ReleaseRequest{0x301, 17, "L", 10}}),
       "87 a1 76 01 a2 69 64 07 a4 74 79 70 65 a7 72 65 6c 65 61 73 65 a5 65 70 6f 63 68 cd 03 01 a7 73 "
       "65 73 73 69 6f 6e 11 a4 63 61 6c 6c 0a a4 6c 6f 63 6b a1 4c"},
      {"check_sequencer", encode_lock_request({8, CheckSequencerRequest{"ps1.a.b"}}),
       "84 a1 76 01 a2 69 64 08 a4 74 79 70 65 af 63 68 65 63 6b 5f 73 65 71 75 65 6e 63 65 72 a9 73 65 "
       "71 75 65 6e 63 65 72 a7 70 73 31 2e 61 2e 62"},
      {"lock_status", encode_lock_request({9, LockStatusRequest{}}),
       "83 a1 76 01 a2 69 64 09 a4 74 79 70 65 ab 6c 6f 63 6b 5f 73 74 61 74 75 73"},
      {"current_grant", encode_lock_request({10, CurrentGrantRequest{"L"}}),
       "84 a1 76 01 a2 69 64 0a a4 74 79 70 65 ad 63 75 72 72 65 6e 74 5f 67 72 61 6e 74 "
       "a4 6c 6f 63 6b a1 4c"},
  };
}

std::vector<Pinned> lock_replies() {
  std::vector<Pinned> out;
  auto add = [&](const char* name, const LockReply& r, const char* hex) {
    out.push_back({name, encode_lock_reply(r), hex});
  };
  LockReply r;
  r.id = 1;
  r.epoch = 0x301;
  r.master = 1;
  add("plain", r,
      "86 a1 76 01 a2 69 64 01 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 65 70 6f 63 "
      "68 cd 03 01 a6 6d 61 73 74 65 72 01");
  r.status = Status(Code::kNotMaster, "ask node 1");
  r.master_endpoint = "tcp://10.0.0.1:7500";
  add("not_master with the master's endpoint", r,
      "88 a1 76 01 a2 69 64 01 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 aa 6e 6f 74 5f 6d 61 73 "
      "74 65 72 a7 6d 65 73 73 61 67 65 aa 61 73 6b 20 6e 6f 64 65 20 31 a5 65 70 6f 63 68 cd 03 01 a6 "
      "6d 61 73 74 65 72 01 af 6d 61 73 74 65 72 5f 65 6e 64 70 6f 69 6e 74 b3 74 63 70 3a 2f 2f 31 30 "
      "2e 30 2e 30 2e 31 3a 37 35 30 30");
  r = LockReply{};
  r.id = 2;
  r.session = 17;
  r.lease_ms = 12'000;
  add("open_session", r,
      "88 a1 76 01 a2 69 64 02 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 65 70 6f 63 "
      "68 00 a6 6d 61 73 74 65 72 00 a7 73 65 73 73 69 6f 6e 11 a8 6c 65 61 73 65 5f 6d 73 cd 2e e0");
  r = LockReply{};
  r.id = 3;
  r.lease_ms = 11'000;
  r.token = 9;
  r.sequencer = "ps1.a.b";
  add("exclusive grant", r,
      "8a a1 76 01 a2 69 64 03 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 65 70 6f 63 "
      "68 00 a6 6d 61 73 74 65 72 00 a8 6c 65 61 73 65 5f 6d 73 cd 2a f8 a5 74 6f 6b 65 6e 09 a4 6d 6f "
      "64 65 a9 65 78 63 6c 75 73 69 76 65 a9 73 65 71 75 65 6e 63 65 72 a7 70 73 31 2e 61 2e 62");
  r.mode = LockMode::kShared;
  add("shared grant", r,
      "8a a1 76 01 a2 69 64 03 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 65 70 6f 63 "
      "68 00 a6 6d 61 73 74 65 72 00 a8 6c 65 61 73 65 5f 6d 73 cd 2a f8 a5 74 6f 6b 65 6e 09 a4 6d 6f "
      "64 65 a6 73 68 61 72 65 64 a9 73 65 71 75 65 6e 63 65 72 a7 70 73 31 2e 61 2e 62");
  r = LockReply{};
  r.id = 4;
  r.current = true;
  r.released = true;
  add("current and released", r,
      "88 a1 76 01 a2 69 64 04 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 65 70 6f 63 "
      "68 00 a6 6d 61 73 74 65 72 00 a7 63 75 72 72 65 6e 74 c3 a8 72 65 6c 65 61 73 65 64 c3");
  r = LockReply{};
  r.id = 5;
  r.node = 2;
  r.role = "follower";
  r.applied_slot = 99;
  r.sessions = 3;
  r.locks = {LockInfo{"a", LockMode::kShared, 5, {17, 18}, 2, 0},
             LockInfo{"b", LockMode::kExclusive, 0, {}, 0, 60'000}};
  add("lock_status", r,
      "8b a1 76 01 a2 69 64 05 a4 74 79 70 65 a5 72 65 70 6c 79 a4 63 6f 64 65 a2 6f 6b a5 65 70 6f 63 "
      "68 00 a6 6d 61 73 74 65 72 00 a4 6e 6f 64 65 02 a4 72 6f 6c 65 a8 66 6f 6c 6c 6f 77 65 72 ac 61 "
      "70 70 6c 69 65 64 5f 73 6c 6f 74 63 a8 73 65 73 73 69 6f 6e 73 03 a5 6c 6f 63 6b 73 92 86 a4 6e "
      "61 6d 65 a1 61 a4 6d 6f 64 65 a6 73 68 61 72 65 64 a5 74 6f 6b 65 6e 05 a7 68 6f 6c 64 65 72 73 "
      "92 11 12 a7 77 61 69 74 65 72 73 02 a8 64 65 6c 61 79 5f 6d 73 00 86 a4 6e 61 6d 65 a1 62 a4 6d "
      "6f 64 65 a9 65 78 63 6c 75 73 69 76 65 a5 74 6f 6b 65 6e 00 a7 68 6f 6c 64 65 72 73 90 a7 77 61 "
      "69 74 65 72 73 00 a8 64 65 6c 61 79 5f 6d 73 cd ea 60");
  return out;
}

void check_pinned(const std::vector<Pinned>& messages) {
  for (const Pinned& m : messages) {
    INFO(m.name);
    CHECK(hex(m.bytes) == m.hex);
  }
}

TEST_CASE("wire bytes: replica requests", "[wire]") { check_pinned(replica_requests()); }
TEST_CASE("wire bytes: replica replies", "[wire]") { check_pinned(replica_replies()); }
TEST_CASE("wire bytes: lock-group requests", "[wire][lockgroup]") { check_pinned(lock_requests()); }
TEST_CASE("wire bytes: lock-group replies", "[wire][lockgroup]") { check_pinned(lock_replies()); }

}  // namespace
}  // namespace palisade
