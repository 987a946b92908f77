#include "replica/record.h"

#include <cstring>

#include "common/hash.h"

namespace palisade::replica {
namespace {

// format(1) flags(1) ts(16) lock_len(2) lock value_len(4) value checksum(8)
constexpr uint8_t kFormat = 1;
constexpr uint8_t kCommittedFlag = 1;
constexpr uint8_t kTombstoneFlag = 2;
constexpr size_t kFixedBytes = 1 + 1 + 16 + 2 + 4 + 8;

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_be(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

// The key is part of the checksum, so a record found under the wrong key is corrupt too.
uint64_t checksum(std::string_view key, std::string_view body) { return hash64(body, hash64(key)); }

Status corrupt(std::string_view key, const char* why) {
  return Status(Code::kCorrupt, "stored version of key '" + std::string(key.substr(0, 64)) + "' is corrupt: " + why);
}

}  // namespace

std::string encode_record(std::string_view key, const wire::Version& v) {
  std::string out;
  out.reserve(kFixedBytes + v.lock.size() + v.value.size());
  out.push_back(static_cast<char>(kFormat));
  uint8_t flags = (v.state == wire::VersionState::kCommitted ? kCommittedFlag : 0) | (v.tombstone ? kTombstoneFlag : 0);
  out.push_back(static_cast<char>(flags));
  auto ts = v.ts.encode();
  out.append(reinterpret_cast<const char*>(ts.data()), ts.size());
  put_be(out, v.lock.size(), 2);
  out.append(v.lock);
  put_be(out, v.value.size(), 4);
  out.append(v.value);
  put_be(out, checksum(key, out), 8);
  return out;
}

Result<wire::Version> decode_record(std::string_view key, std::string_view rec) {
  if (rec.size() < kFixedBytes) return corrupt(key, "record too short");
  std::string_view body = rec.substr(0, rec.size() - 8);
  if (get_be(rec.data() + body.size(), 8) != checksum(key, body)) return corrupt(key, "checksum mismatch");
  if (static_cast<uint8_t>(rec[0]) != kFormat) return corrupt(key, "unknown record format");
  wire::Version v;
  uint8_t flags = static_cast<uint8_t>(rec[1]);
  v.state = (flags & kCommittedFlag) ? wire::VersionState::kCommitted : wire::VersionState::kPending;
  v.tombstone = (flags & kTombstoneFlag) != 0;
  v.ts = FencedTimestamp::decode(reinterpret_cast<const uint8_t*>(rec.data() + 2));
  size_t pos = 18;
  size_t lock_len = get_be(rec.data() + pos, 2);
  pos += 2;
  if (pos + lock_len + 4 + 8 > rec.size()) return corrupt(key, "bad lock length");
  v.lock.assign(rec.data() + pos, lock_len);
  pos += lock_len;
  size_t value_len = get_be(rec.data() + pos, 4);
  pos += 4;
  if (pos + value_len + 8 != rec.size()) return corrupt(key, "bad value length");
  v.value.assign(rec.data() + pos, value_len);
  return v;
}

}  // namespace palisade::replica
