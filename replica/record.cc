#include "replica/record.h"

#include <algorithm>

#include "base/big_endian.h"
#include "base/check.h"
#include "wire/hash.h"

namespace palisade::replica {
namespace {

// format(1) count(1) [format 2 only: kept(1) dropped(16 * kept) [dropped_older(16) when kept has 0x80]],
// per version: flags(1) ts(16) lock_len(2) lock
// [sequencer_len(2) sequencer, when flags has kSequencerFlag] value_len(4) value; checksum(8)
constexpr uint8_t kFormat = 1;
constexpr uint8_t kFormatWithDropped = 2;  // format 1 when nothing was dropped: the same bytes as before
constexpr uint8_t kHasDroppedOlder = 0x80;  // in the `kept` byte
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

FencedTimestamp Versions::dropped_up_to(uint64_t token) const {
  FencedTimestamp newest = token != 0 && token <= dropped_older.token ? dropped_older : FencedTimestamp{};
  for (const FencedTimestamp& ts : dropped) {
    if (ts.token == token) newest = std::max(newest, ts);
  }
  return newest;
}

void Versions::drop_from(const_iterator first) {
  for (auto it = first; it != cend(); ++it) note_dropped(it->ts);
  erase(first, cend());
}

void Versions::note_dropped(const FencedTimestamp& ts) {
  auto at = std::find_if(dropped.begin(), dropped.end(), [&](const FencedTimestamp& d) { return d.token >= ts.token; });
  if (at != dropped.end() && at->token == ts.token) {
    *at = std::max(*at, ts);
    return;
  }
  dropped.insert(at, ts);
  if (dropped.size() > kDroppedTokensKept) {
    // The lowest token goes, except unfenced writes' (token 0): they are kept
    // apart, for dropped_older bounds fenced tokens only.
    auto oldest = dropped.begin() + (dropped.front().token == 0 ? 1 : 0);
    dropped_older = std::max(dropped_older, *oldest);
    dropped.erase(oldest);
  }
}

std::string encode_record(std::string_view key, const Versions& versions) {
  std::string out;
  const bool dropped = !versions.dropped.empty() || versions.dropped_older != FencedTimestamp{};
  auto append_ts = [&](const FencedTimestamp& t) {
    auto bytes = t.encode();
    out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  out.push_back(static_cast<char>(dropped ? kFormatWithDropped : kFormat));
  out.push_back(static_cast<char>(versions.size()));
  if (dropped) {
    PALISADE_CHECK(versions.dropped.size() <= Versions::kDroppedTokensKept);  // below the 0x80 flag
    const bool older = versions.dropped_older != FencedTimestamp{};
    out.push_back(static_cast<char>(versions.dropped.size() | (older ? kHasDroppedOlder : 0)));
    for (const FencedTimestamp& t : versions.dropped) append_ts(t);
    if (older) append_ts(versions.dropped_older);
  }
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
  const uint8_t format = static_cast<uint8_t>(rec[0]);
  if (format != kFormat && format != kFormatWithDropped) return corrupt(key, "unknown record format");
  size_t count = static_cast<uint8_t>(rec[1]);
  size_t pos = 2;
  Versions versions;
  if (format == kFormatWithDropped) {
    const uint8_t kept_byte = pos < body.size() ? static_cast<uint8_t>(body[pos]) : 0xff;
    const size_t kept = kept_byte & ~kHasDroppedOlder, older = (kept_byte & kHasDroppedOlder) != 0 ? 1 : 0;
    if (kept > Versions::kDroppedTokensKept || kept + older == 0 || pos + 1 + (kept + older) * 16 > body.size()) {
      return corrupt(key, "bad dropped versions");
    }
    ++pos;
    for (size_t i = 0; i < kept + older; ++i, pos += 16) {
      auto t = FencedTimestamp::decode(reinterpret_cast<const uint8_t*>(body.data() + pos));
      if (i < kept && !versions.dropped.empty() && versions.dropped.back().token >= t.token) {
        return corrupt(key, "dropped versions out of order");
      }
      (i < kept ? versions.dropped.emplace_back() : versions.dropped_older) = t;
    }
  }
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

std::string check_versions(const Versions& versions) {
  for (size_t i = 0; i < versions.size(); ++i) {
    const std::string where = "version " + std::to_string(i) + " (" + versions[i].ts.to_string() + "): ";
    if (i + 1 < versions.size()) {
      if (!wire::newer(versions[i], versions[i + 1])) return where + "not newer than the next";
      if (versions[i].state == wire::VersionState::kCommitted) return where + "committed, yet not the oldest";
    }
  }
  return {};
}

}  // namespace palisade::replica
