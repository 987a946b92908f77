#include "replica/record.h"

#include "common/big_endian.h"
#include "common/hash.h"

namespace palisade::replica {
namespace {

// format(1) count(1), per version: flags(1) ts(16) lock_len(2) lock
// [sequencer_len(2) sequencer, when flags has kSequencerFlag] value_len(4) value; checksum(8)
constexpr uint8_t kFormat = 1;
constexpr uint8_t kCommittedFlag = 1;
constexpr uint8_t kTombstoneFlag = 2;
constexpr uint8_t kSequencerFlag = 4;  // records written before sequencers were kept lack it
constexpr size_t kVersionFixedBytes = 1 + 16 + 2 + 4;


// The key is part of the checksum, so a record found under the wrong key is corrupt too.
uint64_t checksum(std::string_view key, std::string_view body) { return hash64(body, hash64(key)); }

Status corrupt(std::string_view key, const char* why) {
  return Status(Code::kCorrupt, "stored versions of key '" + std::string(key.substr(0, 64)) + "' are corrupt: " + why);
}

}  // namespace

std::string encode_record(std::string_view key, const Versions& versions) {
  std::string out;
  out.push_back(static_cast<char>(kFormat));
  out.push_back(static_cast<char>(versions.size()));
  for (const wire::Version& v : versions) {
    uint8_t flags = (v.state == wire::VersionState::kCommitted ? kCommittedFlag : 0) | (v.tombstone ? kTombstoneFlag : 0) |
                    (v.sequencer.empty() ? 0 : kSequencerFlag);
    out.push_back(static_cast<char>(flags));
    auto ts = v.ts.encode();
    out.append(reinterpret_cast<const char*>(ts.data()), ts.size());
    append_be(out, v.lock.size(), 2);
    out.append(v.lock);
    if (!v.sequencer.empty()) {
      append_be(out, v.sequencer.size(), 2);
      out.append(v.sequencer);
    }
    append_be(out, v.value.size(), 4);
    out.append(v.value);
  }
  append_be(out, checksum(key, out), 8);
  return out;
}

Result<Versions> decode_record(std::string_view key, std::string_view rec) {
  if (rec.size() < 2 + 8) return corrupt(key, "record too short");
  std::string_view body = rec.substr(0, rec.size() - 8);
  if (read_be(rec.data() + body.size(), 8) != checksum(key, body)) return corrupt(key, "checksum mismatch");
  if (static_cast<uint8_t>(rec[0]) != kFormat) return corrupt(key, "unknown record format");
  size_t count = static_cast<uint8_t>(rec[1]);
  size_t pos = 2;
  Versions versions;
  for (size_t i = 0; i < count; ++i) {
    if (pos + kVersionFixedBytes > body.size()) return corrupt(key, "truncated version");
    wire::Version& v = versions.emplace_back();
    uint8_t flags = static_cast<uint8_t>(body[pos]);
    v.state = (flags & kCommittedFlag) ? wire::VersionState::kCommitted : wire::VersionState::kPending;
    v.tombstone = (flags & kTombstoneFlag) != 0;
    v.ts = FencedTimestamp::decode(reinterpret_cast<const uint8_t*>(body.data() + pos + 1));
    pos += 17;
    size_t lock_len = read_be(body.data() + pos, 2);
    pos += 2;
    if (pos + lock_len + 4 > body.size()) return corrupt(key, "bad lock length");
    v.lock.assign(body.data() + pos, lock_len);
    pos += lock_len;
    if (flags & kSequencerFlag) {
      if (pos + 2 > body.size()) return corrupt(key, "truncated sequencer length");
      size_t seq_len = read_be(body.data() + pos, 2);
      pos += 2;
      if (pos + seq_len + 4 > body.size()) return corrupt(key, "bad sequencer length");
      v.sequencer.assign(body.data() + pos, seq_len);
      pos += seq_len;
    }
    size_t value_len = read_be(body.data() + pos, 4);
    pos += 4;
    if (pos + value_len > body.size()) return corrupt(key, "bad value length");
    v.value.assign(body.data() + pos, value_len);
    pos += value_len;
  }
  if (pos != body.size()) return corrupt(key, "trailing bytes");
  return versions;
}

std::string encode_floor_record(std::string_view lock, const FloorRecord& f) {
  std::string out;
  append_be(out, f.floor, 8);
  if (!f.sequencer.empty()) {
    append_be(out, f.sequencer.size(), 2);
    out.append(f.sequencer);
  }
  append_be(out, checksum(lock, out), 8);
  return out;
}

Result<FloorRecord> decode_floor_record(std::string_view lock, std::string_view rec) {
  auto corrupt_floor = [&] {
    return Status(Code::kCorrupt, "fence floor of lock '" + std::string(lock) + "' is corrupt");
  };
  if (rec.size() < 16 || rec.size() == 17) return corrupt_floor();
  std::string_view body = rec.substr(0, rec.size() - 8);
  if (read_be(rec.data() + body.size(), 8) != checksum(lock, body)) return corrupt_floor();
  FloorRecord f{read_be(body.data(), 8), {}};
  if (body.size() > 8) {
    if (read_be(body.data() + 8, 2) != body.size() - 10) return corrupt_floor();
    f.sequencer.assign(body.substr(10));
  }
  return f;
}

}  // namespace palisade::replica
