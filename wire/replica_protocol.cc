#include "wire/replica_protocol.h"

#include <algorithm>

#include "base/big_endian.h"
#include "wire/config_certificate.h"
#include "wire/hash.h"
#include "wire/message_codec.h"
#include "wire/message_fields.h"
#include "wire/sequencer.h"

namespace palisade::wire {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

static_assert(Limits::kMaxSequencerBytes == palisade::kMaxSequencerBytes);

// Lists of numbers and leaf entries travel as one `bin` each (big-endian,
// docs/protocol.md "Anti-entropy"): far more compact than MessagePack arrays,
// and free of the 64-entry limit on arrays.
std::string pack_u64s(const std::vector<uint64_t>& values) {
  std::string out;
  out.reserve(values.size() * 8);
  for (uint64_t v : values) append_be(out, v, 8);
  return out;
}

// Reads big-endian fields from a `bin`; the first overrun makes ok() false.
class BinReader {
 public:
  explicit BinReader(std::string_view bytes) : bytes_(bytes) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == bytes_.size(); }
  uint64_t number(int width) {
    if (!take(width)) return 0;
    return read_be(bytes_.data() + pos_ - width, width);
  }
  std::string text(size_t length) {
    if (!take(length)) return {};
    return std::string(bytes_.substr(pos_ - length, length));
  }

 private:
  bool take(size_t n) {
    if (!ok_ || bytes_.size() - pos_ < n) return ok_ = false;
    pos_ += n;
    return true;
  }
  std::string_view bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void read_u64s(FieldReader& r, std::string_view name, size_t max_count, std::vector<uint64_t>& out) {
  std::string raw;
  r.bytes(name, raw, max_count * 8, Need::kRequired);
  if (!r.status().is_ok()) return;
  if (raw.empty() || raw.size() % 8 != 0) {
    return r.fail(Code::kBadRequest, "field '" + std::string(name) + "' must hold 1 to " +
                                         std::to_string(max_count) + " big-endian u64s");
  }
  for (size_t i = 0; i < raw.size(); i += 8) out.push_back(read_be(raw.data() + i, 8));
}

constexpr uint8_t kCorruptEntry = 1;
constexpr uint8_t kCommittedHead = 1, kTombstoneHead = 2;

void append_text(std::string& out, std::string_view text, int length_bytes) {
  append_be(out, text.size(), length_bytes);
  out.append(text);
}

// How a version head and a full version start: their flags, then their timestamp.
void append_flags_and_ts(std::string& out, VersionState state, bool tombstone, const FencedTimestamp& ts) {
  out.push_back(static_cast<char>((state == VersionState::kCommitted ? kCommittedHead : 0) |
                                  (tombstone ? kTombstoneHead : 0)));
  append_be(out, ts.token, 8);
  append_be(out, ts.hlc, 8);
}

void read_flags_and_ts(BinReader& in, VersionState& state, bool& tombstone, FencedTimestamp& ts) {
  auto flags = in.number(1);
  state = (flags & kCommittedHead) ? VersionState::kCommitted : VersionState::kPending;
  tombstone = (flags & kTombstoneHead) != 0;
  ts.token = in.number(8);
  ts.hlc = in.number(8);
}

std::string pack_entries(const std::vector<LeafEntry>& entries) {
  std::string out;
  for (const LeafEntry& e : entries) {
    out.push_back(static_cast<char>(e.kind));
    append_text(out, e.name, 2);
    append_be(out, e.digest, 8);
    if (e.kind == LeafEntry::Kind::kFloor) {
      append_be(out, e.floor, 8);
      append_text(out, e.sequencer, 2);
      continue;
    }
    out.push_back(static_cast<char>(e.corrupt ? kCorruptEntry : 0));
    out.push_back(static_cast<char>(e.heads.size()));
    for (const VersionHead& h : e.heads) {
      append_flags_and_ts(out, h.state, h.tombstone, h.ts);
      append_be(out, h.hash, 8);
      append_text(out, h.lock, 2);
    }
  }
  return out;
}

Status unpack_entries(std::string_view raw, const Limits& limits, std::vector<LeafEntry>& out) {
  BinReader in(raw);
  auto bad = [](std::string why) { return Status(Code::kBadRequest, "field 'entries': " + why); };
  while (in.ok() && !in.at_end()) {
    LeafEntry& e = out.emplace_back();
    auto kind = in.number(1);
    if (kind != 1 && kind != 2) return bad("unknown entry kind " + std::to_string(kind));
    e.kind = static_cast<LeafEntry::Kind>(kind);
    size_t name_len = in.number(2);
    if (name_len > std::max(limits.max_key_bytes, limits.max_lock_bytes)) return bad("name too long");
    e.name = in.text(name_len);
    e.digest = in.number(8);
    if (e.kind == LeafEntry::Kind::kFloor) {
      e.floor = in.number(8);
      size_t seq_len = in.number(2);
      if (seq_len > Limits::kMaxSequencerBytes) return bad("sequencer too long");
      e.sequencer = in.text(seq_len);
      continue;
    }
    e.corrupt = (in.number(1) & kCorruptEntry) != 0;
    size_t count = in.number(1);
    if (count > Limits::kMaxVersionsPerKey) return bad("more than " + std::to_string(Limits::kMaxVersionsPerKey) + " versions");
    for (size_t i = 0; i < count && in.ok(); ++i) {
      VersionHead& h = e.heads.emplace_back();
      read_flags_and_ts(in, h.state, h.tombstone, h.ts);
      h.hash = in.number(8);
      size_t lock_len = in.number(2);
      if (lock_len > limits.max_lock_bytes) return bad("lock name too long");
      h.lock = in.text(lock_len);
    }
  }
  if (!in.ok()) return bad("truncated");
  return Status::ok();
}

std::string pack_nodes(const std::vector<TreeNode>& nodes) {
  std::string out;
  out.reserve(nodes.size() * 12);
  for (const TreeNode& n : nodes) {
    append_be(out, n.digest, 8);
    append_be(out, n.tombstones, 4);
  }
  return out;
}

Status unpack_nodes(std::string_view raw, std::vector<TreeNode>& out) {
  if (raw.size() % 12 != 0) return Status(Code::kBadRequest, "field 'nodes' must hold 12-byte nodes");
  for (size_t i = 0; i < raw.size(); i += 12) {
    out.push_back({read_be(raw.data() + i, 8), static_cast<uint32_t>(read_be(raw.data() + i + 8, 4))});
  }
  return Status::ok();
}

// read_many and copy_many carry versions with their values; flags as for heads.
void pack_full_version(std::string& out, const Version& v) {
  append_flags_and_ts(out, v.state, v.tombstone, v.ts);
  append_text(out, v.lock, 2);
  append_text(out, v.value, 4);
  append_text(out, v.sequencer, 2);
}

// Reads what pack_full_version wrote; a problem is named in *why.
bool unpack_full_version(BinReader& in, const Limits& limits, Version& v, std::string* why) {
  read_flags_and_ts(in, v.state, v.tombstone, v.ts);
  size_t lock_len = in.number(2);
  if (lock_len > limits.max_lock_bytes) return *why = "lock name too long", false;
  v.lock = in.text(lock_len);
  size_t value_len = in.number(4);
  if (value_len > limits.max_value_bytes) return *why = "value too long", false;
  if (v.tombstone && value_len != 0) return *why = "a tombstone carries no value", false;
  v.value = in.text(value_len);
  size_t seq_len = in.number(2);
  if (seq_len > Limits::kMaxSequencerBytes) return *why = "sequencer too long", false;
  v.sequencer = in.text(seq_len);
  return true;
}

std::string pack_records(const std::vector<KeyRecord>& records) {
  std::string out;
  for (const KeyRecord& r : records) {
    out.push_back(static_cast<char>(r.corrupt ? kCorruptEntry : 0));
    out.push_back(static_cast<char>(r.versions.size()));
    for (const Version& v : r.versions) pack_full_version(out, v);
  }
  return out;
}

// Reads one record as pack_records wrote it; a problem is named in *why.
void unpack_record(BinReader& in, const Limits& limits, KeyRecord& r, std::string* why) {
  r.corrupt = (in.number(1) & kCorruptEntry) != 0;
  size_t count = in.number(1);
  if (count > Limits::kMaxVersionsPerKey)
    *why = "more than " + std::to_string(Limits::kMaxVersionsPerKey) + " versions";
  for (size_t i = 0; i < count && in.ok() && why->empty(); ++i) {
    unpack_full_version(in, limits, r.versions.emplace_back(), why);
  }
}

Status unpack_records(std::string_view raw, const Limits& limits, std::vector<KeyRecord>& out) {
  BinReader in(raw);
  std::string why;
  while (in.ok() && !in.at_end() && why.empty()) {
    if (out.size() == kMaxKeysPerReadMany) {
      why = "more than " + std::to_string(kMaxKeysPerReadMany) + " keys";
      break;
    }
    unpack_record(in, limits, out.emplace_back(), &why);
  }
  if (why.empty() && !in.ok()) why = "truncated";
  return why.empty() ? Status::ok() : Status(Code::kBadRequest, "field 'records': " + why);
}

// A scan's keys: per key its name, then its record as read_many packs it.
std::string pack_scanned(const std::vector<ScannedKey>& scanned) {
  std::string out;
  for (const ScannedKey& k : scanned) {
    append_text(out, k.key, 2);
    out += pack_records({k.record});
  }
  return out;
}

Status unpack_scanned(std::string_view raw, const Limits& limits, std::vector<ScannedKey>& out) {
  BinReader in(raw);
  std::string why;
  while (in.ok() && !in.at_end() && why.empty()) {
    if (out.size() == kMaxScanKeys) {
      why = "more than " + std::to_string(kMaxScanKeys) + " keys";
      break;
    }
    ScannedKey& k = out.emplace_back();
    size_t key_len = in.number(2);
    if (key_len == 0 || key_len > limits.max_key_bytes) why = "a key empty or too long";
    k.key = in.text(key_len);
    if (out.size() > 1 && out[out.size() - 2].key >= k.key) why = "keys out of byte order";
    if (why.empty()) unpack_record(in, limits, k.record, &why);
  }
  if (why.empty() && !in.ok()) why = "truncated";
  return why.empty() ? Status::ok() : Status(Code::kBadRequest, "field 'scanned': " + why);
}

// A feed's changes: per change its number, its key, then its version as
// read_many packs one.
std::string pack_changes(const std::vector<FeedChange>& changes) {
  std::string out;
  for (const FeedChange& c : changes) {
    append_be(out, c.seq, 8);
    append_text(out, c.key, 2);
    pack_full_version(out, c.version);
  }
  return out;
}

Status unpack_changes(std::string_view raw, const Limits& limits, std::vector<FeedChange>& out) {
  BinReader in(raw);
  std::string why;
  while (in.ok() && !in.at_end() && why.empty()) {
    if (out.size() == kMaxChangesPerReply) {
      why = "more than " + std::to_string(kMaxChangesPerReply) + " changes";
      break;
    }
    FeedChange& c = out.emplace_back();
    c.seq = in.number(8);
    if (out.size() > 1 && out[out.size() - 2].seq >= c.seq) why = "changes out of order";
    size_t key_len = in.number(2);
    if (why.empty() && (key_len == 0 || key_len > limits.max_key_bytes)) why = "a key empty or too long";
    c.key = in.text(key_len);
    if (why.empty()) unpack_full_version(in, limits, c.version, &why);
  }
  if (why.empty() && !in.ok()) why = "truncated";
  return why.empty() ? Status::ok() : Status(Code::kBadRequest, "field 'changes': " + why);
}

std::string pack_copies(const std::vector<Copy>& copies) {
  std::string out;
  for (const Copy& c : copies) {
    append_text(out, c.key, 2);
    pack_full_version(out, c.version);
  }
  return out;
}

void read_copies(FieldReader& r, const Limits& limits, std::vector<Copy>& out) {
  std::string raw;
  r.bytes("copies", raw, limits.max_message_bytes(), Need::kRequired);
  if (!r.status().is_ok()) return;
  BinReader in(raw);
  std::string why;
  while (in.ok() && !in.at_end() && why.empty()) {
    if (out.size() == kMaxCopiesPerRequest) {
      return r.fail(Code::kTooLarge, "more than " + std::to_string(kMaxCopiesPerRequest) + " copies");
    }
    Copy& c = out.emplace_back();
    size_t key_len = in.number(2);
    if (key_len > limits.max_key_bytes) return r.fail(Code::kTooLarge, "field 'copies': key too long");
    c.key = in.text(key_len);
    unpack_full_version(in, limits, c.version, &why);
  }
  if (why.empty() && !in.ok()) why = "truncated";
  if (why.empty() && out.empty()) why = "no copy";
  if (!why.empty()) r.fail(Code::kBadRequest, "field 'copies': " + why);
  for (Copy& c : out) c.version.state = VersionState::kCommitted;
}

// copy_many's `replaces`: per copy that names the corrupt record it replaces,
// its index among the copies (2 bytes) and that record's digest (8), by index.
std::string pack_replaces(const std::vector<Copy>& copies) {
  std::string out;
  for (size_t i = 0; i < copies.size(); ++i) {
    if (!copies[i].replaces) continue;
    append_be(out, i, 2);
    append_be(out, *copies[i].replaces, 8);
  }
  return out;
}

// copy_many's `pending`: the indexes (2 bytes each, rising) of the copies to store pending.
std::string pack_pending(const std::vector<Copy>& copies) {
  std::string out;
  for (size_t i = 0; i < copies.size(); ++i) {
    if (copies[i].pending) append_be(out, i, 2);
  }
  return out;
}

bool any_pending(const std::vector<Copy>& copies) {
  return std::any_of(copies.begin(), copies.end(), [](const Copy& c) { return c.pending; });
}

bool any_replaces(const std::vector<Copy>& copies) {
  return std::any_of(copies.begin(), copies.end(), [](const Copy& c) { return c.replaces.has_value(); });
}

// copy_many's lists of copies (`replaces`, `pending`): entries of `width`
// bytes, each a copy's index (2 bytes, rising, below the number of copies)
// and then `width - 2` bytes of its own, each handed to `take(copy, rest)`,
// which may fail the reader.
template <typename Take>
void read_copy_list(FieldReader& r, const std::string& field, size_t width, const char* entries,
                    std::vector<Copy>& copies, Take take) {
  if (!r.has(field)) return;
  std::string raw;
  r.bytes(field, raw, kMaxCopiesPerRequest * width, Need::kRequired);
  if (!r.status().is_ok()) return;
  if (raw.empty() || raw.size() % width != 0) {
    return r.fail(Code::kBadRequest, "field '" + field + "' must hold 1 or more " + entries);
  }
  size_t next = 0;  // indexes rise, so none is named twice
  for (size_t at = 0; at < raw.size() && r.status().is_ok(); at += width) {
    size_t index = read_be(raw.data() + at, 2);
    if (index < next || index >= copies.size()) {
      return r.fail(Code::kBadRequest, "field '" + field + "': copy index " + std::to_string(index) +
                                           " out of order or beyond the copies");
    }
    take(index, raw.data() + at + 2);
    next = index + 1;
  }
}

void read_replaces(FieldReader& r, std::vector<Copy>& copies) {
  read_copy_list(r, "replaces", 10, "10-byte entries", copies,
                 [&](size_t index, const char* rest) { copies[index].replaces = read_be(rest, 8); });
}

// After read_replaces: a copy stored pending replaces no record.
void read_pending(FieldReader& r, std::vector<Copy>& copies) {
  read_copy_list(r, "pending", 2, "2-byte indexes", copies, [&](size_t index, const char*) {
    if (copies[index].replaces) {
      return r.fail(Code::kBadRequest, "field 'pending': copy " + std::to_string(index) + " also replaces a record");
    }
    copies[index].pending = true;
    copies[index].version.state = VersionState::kPending;
  });
}

// Receipts travel as one `bin`: per receipt, the replica id (8) and the MAC (16).
void append_receipts(std::string& out, const std::vector<Receipt>& receipts) {
  for (const Receipt& r : receipts) {
    append_be(out, r.replica, 8);
    out.append(reinterpret_cast<const char*>(r.mac.data()), r.mac.size());
  }
}

std::string pack_receipts(const std::vector<Receipt>& receipts) {
  std::string out;
  append_receipts(out, receipts);
  return out;
}

// `count` receipts from `in`; false on an overrun.
bool take_receipts(BinReader& in, size_t count, std::vector<Receipt>& out) {
  for (size_t i = 0; i < count && in.ok(); ++i) {
    Receipt r;
    r.replica = in.number(8);
    std::string mac = in.text(r.mac.size());
    if (!in.ok()) return false;
    std::copy(mac.begin(), mac.end(), r.mac.begin());
    out.push_back(r);
  }
  return in.ok();
}

void read_receipts(FieldReader& r, std::string_view name, size_t max_count, std::vector<Receipt>& out) {
  if (!r.has(name)) return;
  std::string raw;
  r.bytes(name, raw, max_count * kReceiptBytes, Need::kRequired);
  if (!r.status().is_ok()) return;
  BinReader in(raw);
  if (raw.empty() || raw.size() % kReceiptBytes != 0 || !take_receipts(in, raw.size() / kReceiptBytes, out)) {
    return r.fail(Code::kBadRequest, "field '" + std::string(name) + "' must hold 1 to " + std::to_string(max_count) +
                                         " receipts of " + std::to_string(kReceiptBytes) + " bytes");
  }
}

// A write's carried commits: per commit, key length (2), key, token (8), hlc
// (8), content hash (8), receipt count (1), receipts. One without a hash is
// left out: carried, it would name the version whose hash is 0.
std::string pack_commits(const std::vector<CommitRequest>& commits) {
  std::string out;
  for (const CommitRequest& c : commits) {
    if (!c.hash) continue;
    append_text(out, c.key, 2);
    append_be(out, c.ts.token, 8);
    append_be(out, c.ts.hlc, 8);
    append_be(out, c.hash.value_or(0), 8);
    append_be(out, c.certificate.size(), 1);
    append_receipts(out, c.certificate);
  }
  return out;
}

void read_commits(FieldReader& r, const Limits& limits, std::vector<CommitRequest>& out) {
  if (!r.has("commits")) return;
  std::string raw;
  r.bytes("commits", raw, Limits::kMaxCarriedCommitBytes, Need::kRequired);
  if (!r.status().is_ok()) return;
  BinReader in(raw);
  size_t read = 0;
  while (in.ok() && !in.at_end()) {
    CommitRequest c;
    size_t key_len = in.number(2);
    c.key = in.text(key_len);
    c.ts.token = in.number(8);
    c.ts.hlc = in.number(8);
    c.hash = in.number(8);
    const size_t receipts = in.number(1);
    if (receipts > kMaxCertificateReceipts || !take_receipts(in, receipts, c.certificate)) break;
    ++read;
    // A key this replica cannot store names no version here: skipped, so that
    // it does not get the write that carries it refused.
    if (in.ok() && key_len <= limits.max_key_bytes) out.push_back(std::move(c));
  }
  if (!in.ok() || !in.at_end() || read == 0) {
    return r.fail(Code::kBadRequest, "field 'commits' must hold 1 or more commits");
  }
}

// A stats reply's floors: per floor, name length (2), name, floor (8).
std::string pack_stats_floors(const std::vector<std::pair<std::string, uint64_t>>& floors) {
  std::string out;
  for (const auto& [lock, floor] : floors) {
    append_text(out, lock, 2);
    append_be(out, floor, 8);
  }
  return out;
}

void pack_stats(Packer& pk, const ReplicaStats& s) {
  pk.pack_map(5 + (s.insecure ? 1 : 0) + (s.config_version != 0 ? 1 : 0) + (s.config_paused ? 1 : 0) +
              (s.receipt_id != 0 ? 1 : 0));
  pack_u64_field(pk, "keys", s.keys);
  pack_u64_field(pk, "floor_count", s.floor_count);
  pack_bytes_field(pk, "floors", pack_stats_floors(s.floors));
  pack_u64_field(pk, "data_bytes", s.data_bytes);
  pack_u64_field(pk, "format", s.format);
  if (s.insecure) pack_bool_field(pk, "insecure", true);
  if (s.config_version != 0) pack_u64_field(pk, "config_version", s.config_version);
  if (s.config_paused) pack_bool_field(pk, "config_paused", true);
  if (s.receipt_id != 0) pack_u64_field(pk, "receipt_id", s.receipt_id);
}

void read_stats(FieldReader& r, const Limits& limits, std::optional<ReplicaStats>& out) {
  const msgpack::object* map = r.object("stats", Need::kOptional);
  if (map == nullptr || !r.status().is_ok()) return;
  if (map->type != msgpack::type::MAP) return r.fail(Code::kBadRequest, "field 'stats' must be a map");
  ReplicaStats& s = out.emplace();
  FieldReader sr(*map, "stats");
  std::string floors;
  uint64_t format = 0;
  sr.u64("keys", s.keys, Need::kRequired);
  sr.u64("floor_count", s.floor_count, Need::kRequired);
  sr.bytes("floors", floors, kMaxStatsFloors * (2 + limits.max_lock_bytes + 8), Need::kRequired);
  sr.u64("data_bytes", s.data_bytes, Need::kRequired);
  sr.u64("format", format, Need::kRequired);
  sr.boolean("insecure", s.insecure, Need::kOptional);
  sr.u64("config_version", s.config_version, Need::kOptional);
  sr.boolean("config_paused", s.config_paused, Need::kOptional);
  sr.u64("receipt_id", s.receipt_id, Need::kOptional);
  if (Status st = sr.finish(); !st.is_ok()) return r.fail(st.code(), st.message());
  s.format = static_cast<uint32_t>(format);
  BinReader in(floors);
  while (in.ok() && !in.at_end()) {
    size_t name_len = in.number(2);
    if (name_len > limits.max_lock_bytes) return r.fail(Code::kBadRequest, "stats: lock name too long");
    std::string lock = in.text(name_len);
    s.floors.emplace_back(std::move(lock), in.number(8));
  }
  if (!in.ok()) return r.fail(Code::kBadRequest, "stats: floors truncated");
  if (format > UINT32_MAX || s.floors.size() > kMaxStatsFloors || s.floors.size() > s.floor_count) {
    return r.fail(Code::kBadRequest, "stats: format out of range, or more floors listed than counted");
  }
}

struct RequestEncoder : RequestEncoderBase {
  uint64_t config = 0;

  // Hides RequestEncoderBase::head: the envelope, then "config" when set.
  void head(uint32_t field_count, std::string_view type) const {
    RequestEncoderBase::head(field_count + (config != 0 ? 1 : 0), type);
    if (config != 0) pack_u64_field(pk, "config", config);
  }
  void operator()(const PingRequest&) const { head(3, "ping"); }
  void operator()(const WriteRequest& r) const {
    const std::string commits = pack_commits(r.commits);
    const uint32_t optional =
        (r.committed ? 1 : 0) + (r.sequencer.empty() ? 0 : 1) + (r.replaces ? 1 : 0) + (commits.empty() ? 0 : 1) +
        (r.certificate.empty() ? 0 : 1);
    head((r.tombstone ? 7 : 8) + optional, "write");
    pack_bytes_field(pk, "key", r.key);
    if (!r.tombstone) pack_bytes_field(pk, "value", r.value);
    pack_bool_field(pk, "tombstone", r.tombstone);
    pack_timestamp_field(pk, "ts", r.ts);
    pack_text_field(pk, "lock", r.lock);
    if (r.committed) pack_bool_field(pk, "committed", true);
    pack_sequencer(r.sequencer);
    if (r.replaces) pack_u64_field(pk, "replaces", *r.replaces);
    if (!commits.empty()) pack_bytes_field(pk, "commits", commits);
    if (!r.certificate.empty()) pack_bytes_field(pk, "certificate", pack_receipts(r.certificate));
  }
  void operator()(const FenceRequest& r) const {
    head(r.sequencer.empty() ? 5 : 6, "fence");
    pack_text_field(pk, "lock", r.lock);
    pack_u64_field(pk, "token", r.token);
    pack_sequencer(r.sequencer);
  }
  void pack_sequencer(const std::string& sequencer) const {
    if (!sequencer.empty()) pack_text_field(pk, "sequencer", sequencer);
  }
  void key_and_ts(std::string_view type, const std::string& key, const FencedTimestamp& ts,
                  const std::optional<uint64_t>& hash, const Certificate& certificate = {}) const {
    head((hash ? 6 : 5) + (certificate.empty() ? 0 : 1), type);
    pack_bytes_field(pk, "key", key);
    pack_timestamp_field(pk, "ts", ts);
    if (hash) pack_u64_field(pk, "hash", *hash);
    if (!certificate.empty()) pack_bytes_field(pk, "certificate", pack_receipts(certificate));
  }
  void operator()(const CommitRequest& r) const { key_and_ts("commit", r.key, r.ts, r.hash, r.certificate); }
  void operator()(const PurgeRequest& r) const { key_and_ts("purge", r.key, r.ts, r.hash); }
  void operator()(const DropTombstoneRequest& r) const { key_and_ts("drop_tombstone", r.key, r.ts, r.hash); }
  void operator()(const TreeRequest& r) const {
    head(5, "tree");
    pack_u64_field(pk, "level", r.level);
    pack_bytes_field(pk, "nodes", pack_u64s(r.nodes));
  }
  void operator()(const LeafRequest& r) const {
    head(4, "leaf");
    pack_bytes_field(pk, "leaves", pack_u64s(r.leaves));
  }
  void operator()(const ReadManyRequest& r) const {
    head(4, "read_many");
    std::string keys;
    for (const std::string& k : r.keys) append_text(keys, k, 2);
    pack_bytes_field(pk, "keys", keys);
  }
  void operator()(const CopyManyRequest& r) const {
    const bool replaces = any_replaces(r.copies);
    const bool pending = any_pending(r.copies);
    head(4 + (replaces ? 1 : 0) + (pending ? 1 : 0), "copy_many");
    pack_bytes_field(pk, "copies", pack_copies(r.copies));
    if (replaces) pack_bytes_field(pk, "replaces", pack_replaces(r.copies));
    if (pending) pack_bytes_field(pk, "pending", pack_pending(r.copies));
  }
  void operator()(const StatsRequest& r) const {
    head(4, "stats");
    pack_u64_field(pk, "max_floors", r.max_floors);
  }
  void operator()(const InstallConfigRequest& r) const {
    head(4, "install_config");
    pack_text_field(pk, "certificate", r.certificate);
  }
  void operator()(const ScanRequest& r) const {
    head(r.after.empty() ? 5 : 6, "scan");
    pack_bytes_field(pk, "prefix", r.prefix);
    if (!r.after.empty()) pack_bytes_field(pk, "after", r.after);
    pack_u64_field(pk, "limit", r.limit);
  }
  void operator()(const ChangesRequest& r) const {
    head(r.after == 0 ? 5 : 6, "changes");
    pack_bytes_field(pk, "prefix", r.prefix);
    if (r.after != 0) pack_u64_field(pk, "after", r.after);
    pack_u64_field(pk, "limit", r.limit);
  }
  void operator()(const ReadRequest& r) const {
    const uint32_t fence_fields = r.fence ? (r.fence->sequencer.empty() ? 2 : 3) : 0;
    head((r.floor_of.empty() ? 4 : 5) + fence_fields, "read");
    pack_bytes_field(pk, "key", r.key);
    if (!r.floor_of.empty()) pack_text_field(pk, "floor_of", r.floor_of);
    if (r.fence) {
      pack_text_field(pk, "lock", r.fence->lock);
      pack_u64_field(pk, "token", r.fence->token);
      pack_sequencer(r.fence->sequencer);
    }
  }
};

Result<ReplicaRequestBody> read_body(const std::string& type, FieldReader& r, const Limits& limits) {
  if (type == "ping") return ReplicaRequestBody{PingRequest{}};
  if (type == "write") {
    WriteRequest w;
    r.bytes("key", w.key, limits.max_key_bytes, Need::kRequired);
    r.boolean("tombstone", w.tombstone, Need::kOptional);
    r.bytes("value", w.value, limits.max_value_bytes, w.tombstone ? Need::kOptional : Need::kRequired);
    r.timestamp("ts", w.ts, Need::kRequired);
    r.bytes("lock", w.lock, limits.max_lock_bytes, Need::kOptional);
    r.boolean("committed", w.committed, Need::kOptional);
    r.bytes("sequencer", w.sequencer, kMaxSequencerBytes, Need::kOptional);
    if (r.has("replaces")) r.u64("replaces", w.replaces.emplace(), Need::kRequired);
    read_commits(r, limits, w.commits);
    read_receipts(r, "certificate", kMaxCertificateReceipts, w.certificate);
    if (r.status().is_ok() && !w.certificate.empty() && !w.committed) {
      return Status(Code::kBadRequest, "only a committed write carries a certificate");
    }
    if (r.status().is_ok() && w.tombstone && !w.value.empty()) {
      return Status(Code::kBadRequest, "a tombstone write carries no value");
    }
    return ReplicaRequestBody{std::move(w)};
  }
  if (type == "fence") {
    FenceRequest f;
    r.bytes("lock", f.lock, limits.max_lock_bytes, Need::kRequired);
    r.u64("token", f.token, Need::kRequired);
    r.bytes("sequencer", f.sequencer, kMaxSequencerBytes, Need::kOptional);
    return ReplicaRequestBody{std::move(f)};
  }
  if (type == "tree") {
    TreeRequest t;
    uint64_t level = 0;
    r.u64("level", level, Need::kRequired);
    read_u64s(r, "nodes", kMaxTreeNodesPerRequest, t.nodes);
    if (!r.status().is_ok()) return r.status();
    if (level > kTreeLeafLevel) {
      return Status(Code::kBadRequest, "tree level " + std::to_string(level) + " is beyond the leaves (level " +
                                           std::to_string(kTreeLeafLevel) + ")");
    }
    t.level = static_cast<uint32_t>(level);
    for (uint64_t node : t.nodes) {
      if (node >= tree_width(t.level)) {
        return Status(Code::kBadRequest, "tree level " + std::to_string(level) + " has no node " + std::to_string(node));
      }
    }
    return ReplicaRequestBody{std::move(t)};
  }
  if (type == "leaf") {
    LeafRequest l;
    read_u64s(r, "leaves", kMaxLeavesPerRequest, l.leaves);
    if (!r.status().is_ok()) return r.status();
    for (uint64_t leaf : l.leaves) {
      if (leaf >= tree_width(kTreeLeafLevel)) return Status(Code::kBadRequest, "there is no leaf " + std::to_string(leaf));
    }
    return ReplicaRequestBody{std::move(l)};
  }
  if (type == "commit" || type == "purge" || type == "drop_tombstone") {
    std::string key;
    FencedTimestamp ts;
    std::optional<uint64_t> hash;
    r.bytes("key", key, limits.max_key_bytes, Need::kRequired);
    r.timestamp("ts", ts, Need::kRequired);
    if (r.has("hash")) r.u64("hash", hash.emplace(), Need::kRequired);
    if (type == "commit") {
      CommitRequest c{std::move(key), ts, hash};
      read_receipts(r, "certificate", kMaxCertificateReceipts, c.certificate);
      return ReplicaRequestBody{std::move(c)};
    }
    if (type == "drop_tombstone") return ReplicaRequestBody{DropTombstoneRequest{std::move(key), ts, hash}};
    return ReplicaRequestBody{PurgeRequest{std::move(key), ts, hash}};
  }
  if (type == "install_config") {
    InstallConfigRequest c;
    r.bytes("certificate", c.certificate, kMaxConfigCertificateBytes, Need::kRequired);
    return ReplicaRequestBody{std::move(c)};
  }
  if (type == "read_many") {
    ReadManyRequest m;
    std::string raw;
    r.bytes("keys", raw, kMaxKeysPerReadMany * (2 + limits.max_key_bytes), Need::kRequired);
    if (!r.status().is_ok()) return r.status();
    BinReader in(raw);
    while (in.ok() && !in.at_end()) {
      size_t key_len = in.number(2);
      if (key_len > limits.max_key_bytes) return Status(Code::kTooLarge, "field 'keys': key too long");
      m.keys.push_back(in.text(key_len));
    }
    if (!in.ok() || m.keys.empty()) {
      return Status(Code::kBadRequest, "field 'keys' must hold 1 to " + std::to_string(kMaxKeysPerReadMany) +
                                           " length-prefixed keys");
    }
    if (m.keys.size() > kMaxKeysPerReadMany) {
      return Status(Code::kTooLarge, "more than " + std::to_string(kMaxKeysPerReadMany) + " keys");
    }
    return ReplicaRequestBody{std::move(m)};
  }
  if (type == "copy_many") {
    CopyManyRequest m;
    read_copies(r, limits, m.copies);
    if (r.status().is_ok()) read_replaces(r, m.copies);
    if (r.status().is_ok()) read_pending(r, m.copies);
    if (!r.status().is_ok()) return r.status();
    return ReplicaRequestBody{std::move(m)};
  }
  if (type == "stats") {
    uint64_t max_floors = kMaxStatsFloors;
    r.u64("max_floors", max_floors, Need::kOptional);
    if (!r.status().is_ok()) return r.status();
    if (max_floors > kMaxStatsFloors) {
      return Status(Code::kBadRequest, "max_floors " + std::to_string(max_floors) + " is above " +
                                           std::to_string(kMaxStatsFloors));
    }
    return ReplicaRequestBody{StatsRequest{static_cast<uint32_t>(max_floors)}};
  }
  if (type == "scan") {
    ScanRequest sc;
    uint64_t limit = 0;
    r.bytes("prefix", sc.prefix, limits.max_key_bytes, Need::kRequired);
    r.bytes("after", sc.after, limits.max_key_bytes, Need::kOptional);
    r.u64("limit", limit, Need::kRequired);
    if (!r.status().is_ok()) return r.status();
    if (limit == 0 || limit > kMaxScanKeys) {
      return Status(Code::kBadRequest,
                    "limit " + std::to_string(limit) + " is not between 1 and " + std::to_string(kMaxScanKeys));
    }
    sc.limit = static_cast<uint32_t>(limit);
    return ReplicaRequestBody{std::move(sc)};
  }
  if (type == "changes") {
    ChangesRequest ch;
    uint64_t limit = 0;
    r.bytes("prefix", ch.prefix, limits.max_key_bytes, Need::kRequired);
    r.u64("after", ch.after, Need::kOptional);
    r.u64("limit", limit, Need::kRequired);
    if (!r.status().is_ok()) return r.status();
    if (limit == 0 || limit > kMaxChangesPerReply) {
      return Status(Code::kBadRequest,
                    "limit " + std::to_string(limit) + " is not between 1 and " + std::to_string(kMaxChangesPerReply));
    }
    ch.limit = static_cast<uint32_t>(limit);
    return ReplicaRequestBody{std::move(ch)};
  }
  if (type == "read") {
    ReadRequest rd;
    r.bytes("key", rd.key, limits.max_key_bytes, Need::kRequired);
    r.bytes("floor_of", rd.floor_of, limits.max_lock_bytes, Need::kOptional);
    // A fenced read carries a fence's fields: lock and token, both or neither.
    if (r.has("lock") || r.has("token")) {
      FenceRequest& f = rd.fence.emplace();
      r.bytes("lock", f.lock, limits.max_lock_bytes, Need::kRequired);
      r.u64("token", f.token, Need::kRequired);
      r.bytes("sequencer", f.sequencer, kMaxSequencerBytes, Need::kOptional);
    } else if (r.has("sequencer")) {
      return Status(Code::kBadRequest, "a read carries a sequencer only with a fence (lock and token)");
    }
    return ReplicaRequestBody{std::move(rd)};
  }
  return Status(Code::kUnknownType, "unknown message type '" + type + "'");
}

uint32_t reply_field_count(const ReplicaReply& reply) {
  uint32_t n = 5;  // v, id, type, code, clock
  if (!reply.status.message().empty()) ++n;
  if (reply.floor != 0) ++n;
  if (reply.stored_ts) ++n;
  if (reply.dropped) ++n;
  if (reply.digest) ++n;
  if (reply.applied) ++n;
  if (!reply.versions.empty()) ++n;
  if (!reply.floors.empty()) ++n;
  if (!reply.receipts.empty()) ++n;
  if (!reply.nodes.empty()) ++n;
  if (!reply.entries.empty()) ++n;
  if (reply.leaves_done != 0) ++n;
  if (reply.stats) ++n;
  if (!reply.records.empty()) ++n;
  if (reply.keys_done != 0) ++n;
  if (!reply.scanned.empty()) ++n;
  if (reply.more) ++n;
  if (reply.feed) n += 3;
  if (!reply.changes.empty()) ++n;
  if (reply.refused != 0) n += 2;
  if (!reply.config.empty()) ++n;
  return n;
}

void pack_version(Packer& pk, const Version& v) {
  pk.pack_map(v.sequencer.empty() ? 5 : 6);
  pack_timestamp_field(pk, "ts", v.ts);
  pack_text_field(pk, "lock", v.lock);
  pack_text_field(pk, "state", state_name(v.state));
  pack_bool_field(pk, "tombstone", v.tombstone);
  pack_bytes_field(pk, "value", v.value);
  if (!v.sequencer.empty()) pack_text_field(pk, "sequencer", v.sequencer);
}

void read_version(FieldReader& r, const Limits& limits, Version& v) {
  std::string state;
  r.timestamp("ts", v.ts, Need::kRequired);
  r.bytes("lock", v.lock, limits.max_lock_bytes, Need::kRequired);
  r.bytes("state", state, 16, Need::kRequired);
  r.boolean("tombstone", v.tombstone, Need::kRequired);
  r.bytes("value", v.value, limits.max_value_bytes, Need::kRequired);
  r.bytes("sequencer", v.sequencer, Limits::kMaxSequencerBytes, Need::kOptional);
  if (r.status().is_ok() && state != "pending" && state != "committed") {
    r.fail(Code::kBadRequest, "unknown version state '" + state + "'");
  }
  v.state = state == "committed" ? VersionState::kCommitted : VersionState::kPending;
}

void read_versions(FieldReader& r, const Limits& limits, std::vector<Version>& out) {
  read_map_list(r, "versions", Limits::kMaxVersionsPerKey, "version", out,
                [&](FieldReader& vr, Version& v) { read_version(vr, limits, v); });
}

void read_floors(FieldReader& r, const Limits& limits, std::map<std::string, uint64_t>& out) {
  const msgpack::object* map = r.object("floors", Need::kOptional);
  if (map == nullptr) return;
  if (map->type != msgpack::type::MAP) return r.fail(Code::kBadRequest, "field 'floors' must be a map");
  for (uint32_t i = 0; i < map->via.map.size; ++i) {
    const auto& kv = map->via.map.ptr[i];
    std::string_view lock;
    if (kv.key.type == msgpack::type::STR) lock = {kv.key.via.str.ptr, kv.key.via.str.size};
    if (kv.key.type == msgpack::type::BIN) lock = {kv.key.via.bin.ptr, kv.key.via.bin.size};
    bool is_text = kv.key.type == msgpack::type::STR || kv.key.type == msgpack::type::BIN;
    if (!is_text || lock.size() > limits.max_lock_bytes || kv.val.type != msgpack::type::POSITIVE_INTEGER) {
      return r.fail(Code::kBadRequest, "field 'floors' must map lock names to non-negative integers");
    }
    out[std::string(lock)] = kv.val.via.u64;
  }
}

}  // namespace

std::string_view state_name(VersionState state) {
  return state == VersionState::kCommitted ? "committed" : "pending";
}

uint64_t content_hash(const Version& v) {
  return hash64(v.value, hash64(v.lock, v.tombstone ? 1 : 2));
}

bool newer(const Version& a, const Version& b) {
  if (a.ts != b.ts) return a.ts > b.ts;
  return content_hash(a) > content_hash(b);
}

bool names(const Version& v, const FencedTimestamp& ts, const std::optional<uint64_t>& hash) {
  return v.ts == ts && (!hash || content_hash(v) == *hash);
}

VersionHead head_of(const Version& v) { return {v.ts, content_hash(v), v.state, v.tombstone, v.lock}; }

size_t carried_commit_bytes(const CommitRequest& c) {
  return 2 + c.key.size() + 25 + c.certificate.size() * kReceiptBytes;
}

bool same_write(const Version& a, const Version& b) {
  return a.ts == b.ts && a.lock == b.lock && a.tombstone == b.tombstone && a.value == b.value;
}

std::string_view request_type(const ReplicaRequestBody& body) {
  static constexpr std::array<std::string_view, 15> kNames = {
      "ping",           "write", "fence",     "commit",    "read",           "purge", "tree",   "leaf",
      "drop_tombstone", "stats", "read_many", "copy_many", "install_config", "scan",  "changes"};
  static_assert(kNames.size() == std::variant_size_v<ReplicaRequestBody>);
  return kNames[body.index()];
}

std::string encode_request(const ReplicaRequest& request) {
  return encode_message([&](Packer& pk) {
    std::visit(RequestEncoder{{pk, request.id, request.cluster}, request.config}, request.body);
  });
}

std::string encode_reply(const ReplicaReply& reply) {
  return encode_message([&](Packer& pk) {
    write_reply_head(pk, reply_field_count(reply), reply.id, reply.status);
    pack_u64_field(pk, "clock", reply.clock);
    if (reply.floor != 0) pack_u64_field(pk, "floor", reply.floor);
    if (reply.stored_ts) pack_timestamp_field(pk, "stored_ts", *reply.stored_ts);
    if (reply.dropped) pack_timestamp_field(pk, "dropped", *reply.dropped);
    if (reply.digest) pack_u64_field(pk, "digest", *reply.digest);
    if (reply.applied) pack_bool_field(pk, "applied", true);
    if (!reply.versions.empty()) {
      pack_text(pk, "versions");
      pk.pack_array(static_cast<uint32_t>(reply.versions.size()));
      for (const Version& v : reply.versions) pack_version(pk, v);
    }
    if (!reply.receipts.empty()) pack_bytes_field(pk, "receipts", pack_receipts(reply.receipts));
    if (!reply.floors.empty()) {
      pack_text(pk, "floors");
      pk.pack_map(static_cast<uint32_t>(reply.floors.size()));
      for (const auto& [lock, floor] : reply.floors) {
        pack_text(pk, lock);
        pk.pack_uint64(floor);
      }
    }
    if (!reply.nodes.empty()) pack_bytes_field(pk, "nodes", pack_nodes(reply.nodes));
    if (!reply.entries.empty()) pack_bytes_field(pk, "entries", pack_entries(reply.entries));
    if (reply.leaves_done != 0) pack_u64_field(pk, "leaves_done", reply.leaves_done);
    if (reply.stats) {
      pack_text(pk, "stats");
      pack_stats(pk, *reply.stats);
    }
    if (!reply.records.empty()) pack_bytes_field(pk, "records", pack_records(reply.records));
    if (reply.keys_done != 0) pack_u64_field(pk, "keys_done", reply.keys_done);
    if (!reply.scanned.empty()) pack_bytes_field(pk, "scanned", pack_scanned(reply.scanned));
    if (reply.more) pack_bool_field(pk, "more", true);
    if (reply.feed) {
      pack_u64_field(pk, "log", reply.feed->log);
      pack_u64_field(pk, "first", reply.feed->first);
      pack_u64_field(pk, "next", reply.feed->next);
    }
    if (!reply.changes.empty()) pack_bytes_field(pk, "changes", pack_changes(reply.changes));
    if (reply.refused != 0) {
      pack_u64_field(pk, "refused", reply.refused);
      pack_text_field(pk, "first_refusal", reply.first_refusal);
    }
    if (!reply.config.empty()) pack_text_field(pk, "config", reply.config);
  });
}

Result<ReplicaRequest> decode_request(std::string_view bytes, const Limits& limits, uint64_t* id_out) {
  uint64_t config = 0;
  auto read = [&](const std::string& type, FieldReader& r, ReplicaRequestBody& body) {
    r.u64("config", config, Need::kOptional);
    auto got = read_body(type, r, limits);
    if (!got.is_ok()) return got.status();
    body = std::move(got).value();
    return Status::ok();
  };
  auto request = decode_request_with<ReplicaRequest>(bytes, limits.max_message_bytes(), id_out, read);
  if (request.is_ok()) request.value().config = config;
  return request;
}

Result<ReplicaReply> decode_reply(std::string_view bytes, const Limits& limits) {
  // Lists that travel as one bin each, unpacked once every field was read.
  std::string nodes, entries, records, scanned, changes;
  const ReplyLimits reply_limits{.max_bytes = limits.max_reply_bytes(), .max_message_bytes = limits.max_value_bytes};
  return decode_reply_with<ReplicaReply>(
      bytes, reply_limits,
      [&](FieldReader& r, ReplicaReply& reply) {
        r.u64("clock", reply.clock, Need::kRequired);
        r.u64("floor", reply.floor, Need::kOptional);
        if (r.has("stored_ts")) r.timestamp("stored_ts", reply.stored_ts.emplace(), Need::kRequired);
        if (r.has("dropped")) r.timestamp("dropped", reply.dropped.emplace(), Need::kRequired);
        if (r.has("digest")) r.u64("digest", reply.digest.emplace(), Need::kRequired);
        r.boolean("applied", reply.applied, Need::kOptional);
        read_versions(r, limits, reply.versions);
        read_floors(r, limits, reply.floors);
        read_receipts(r, "receipts", kMaxScanKeys * Limits::kMaxVersionsPerKey, reply.receipts);
        r.bytes("nodes", nodes, kMaxTreeNodesPerRequest * 12, Need::kOptional);
        r.bytes("entries", entries, limits.max_reply_bytes(), Need::kOptional);
        r.u64("leaves_done", reply.leaves_done, Need::kOptional);
        read_stats(r, limits, reply.stats);
        r.bytes("records", records, limits.max_reply_bytes(), Need::kOptional);
        r.u64("keys_done", reply.keys_done, Need::kOptional);
        r.bytes("scanned", scanned, limits.max_reply_bytes(), Need::kOptional);
        r.boolean("more", reply.more, Need::kOptional);
        if (r.has("log")) {
          FeedPosition& feed = reply.feed.emplace();
          r.u64("log", feed.log, Need::kRequired);
          r.u64("first", feed.first, Need::kRequired);
          r.u64("next", feed.next, Need::kRequired);
        }
        r.bytes("changes", changes, limits.max_reply_bytes(), Need::kOptional);
        r.u64("refused", reply.refused, Need::kOptional);
        r.bytes("first_refusal", reply.first_refusal, limits.max_value_bytes,
                reply.refused != 0 ? Need::kRequired : Need::kOptional);
        r.bytes("config", reply.config, kMaxConfigCertificateBytes, Need::kOptional);
      },
      [&](ReplicaReply& reply) {
        if (Status n = unpack_nodes(nodes, reply.nodes); !n.is_ok()) return n;
        if (Status e = unpack_entries(entries, limits, reply.entries); !e.is_ok()) return e;
        if (Status e = unpack_records(records, limits, reply.records); !e.is_ok()) return e;
        if (reply.records.size() != reply.keys_done) return Status(Code::kBadRequest, "records must be keys_done long");
        if (Status e = unpack_scanned(scanned, limits, reply.scanned); !e.is_ok()) return e;
        if (Status e = unpack_changes(changes, limits, reply.changes); !e.is_ok()) return e;
        if (!reply.changes.empty() && !reply.feed) return Status(Code::kBadRequest, "changes come with their log");
        if (reply.feed && reply.feed->log == 0) return Status(Code::kBadRequest, "field 'log' must not be 0");
        size_t versions = reply.versions.size();
        for (const ScannedKey& k : reply.scanned) versions += k.record.versions.size();
        if (!reply.receipts.empty() && versions != 0 && reply.receipts.size() != versions) {
          return Status(Code::kBadRequest, "receipts must be one per version");
        }
        return Status::ok();
      });
}

ReplicaReply error_reply(uint64_t id, Status status) {
  ReplicaReply reply;
  reply.id = id;
  reply.status = std::move(status);
  return reply;
}

}  // namespace palisade::wire
