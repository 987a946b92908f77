#include "tests/sim/history.h"

#include <map>

#include "wire/replica_protocol.h"

namespace palisade::sim {
namespace {

// A version's content, which tells apart two writes with one timestamp.
std::string content(bool tombstone, const std::string& value) { return tombstone ? " tombstone" : " '" + value + "'"; }

std::string describe(const ReadRecord& r) {
  return "read by client " + std::to_string(r.client) + " of '" + r.key + "' [" + std::to_string(r.start_ms) + ", " +
         std::to_string(r.end_ms) + "] returned " + r.ts.to_string() +
         (r.ts == FencedTimestamp{} ? "" : content(!r.found, r.value));
}

std::string describe(const WriteRecord& w) {
  return "write by client " + std::to_string(w.client) + " of '" + w.key + "' " + w.ts.to_string() +
         content(w.tombstone, w.value) + " [" + std::to_string(w.start_ms) + ", " + std::to_string(w.end_ms) +
         "] answered " + std::string(code_name(w.result));
}

// The earliest time a fence of `lock` with a token above `token` completed,
// or a write under such a token was acknowledged (each raised the floor on W
// replicas); UINT64_MAX if none.
uint64_t superseded_at(const History& h, const std::string& lock, uint64_t token) {
  uint64_t at = UINT64_MAX;
  for (const FenceRecord& f : h.fences) {
    if (f.result == Code::kOk && f.lock == lock && f.token > token) at = std::min(at, f.end_ms);
  }
  for (const WriteRecord& w : h.writes) {
    if (w.result == Code::kOk && w.lock == lock && w.token > token) at = std::min(at, w.end_ms);
  }
  return at;
}

// A version as replicas order it. The system orders versions by timestamp,
// then by content hash (wire::newer): of two writes with one timestamp, one
// wins everywhere, so the checkers must order them the same way.
wire::Version version_of(const WriteRecord& w) {
  wire::Version v;
  v.ts = w.ts;
  v.lock = w.lock;
  v.tombstone = w.tombstone;
  v.value = w.tombstone ? "" : w.value;
  return v;
}

// What a read returned, as a version: the write it matched (which knows the
// lock) at the timestamp read, or, for a read that matched none, its
// timestamp and content alone.
// A read that found no version at all is older than every write.
wire::Version version_of(const ReadRecord& r, const WriteRecord* match) {
  if (match != nullptr) {
    wire::Version v = version_of(*match);
    v.ts = r.ts;  // the attempt it read: a write sent again on a newer set has one timestamp per attempt
    return v;
  }
  wire::Version v;
  v.ts = r.ts;
  v.tombstone = !r.found;
  v.value = r.found ? r.value : "";
  return v;
}

}  // namespace

std::vector<std::string> check(const History& h) {
  std::vector<std::string> out;
  // Clients' clocks can give two writes one timestamp: content tells them apart.
  std::multimap<std::pair<std::string, FencedTimestamp>, const WriteRecord*> by_ts;
  for (const WriteRecord& w : h.writes) {
    by_ts.emplace(std::make_pair(w.key, w.ts), &w);
    for (const FencedTimestamp& ts : w.attempts) {
      if (ts != w.ts) by_ts.emplace(std::make_pair(w.key, ts), &w);
    }
  }
  std::map<std::pair<std::string, std::string>, const AdversaryWrite*> adversary;  // (key, value) -> its write
  for (const AdversaryWrite& a : h.adversary) adversary.emplace(std::make_pair(a.key, a.value), &a);

  for (const WriteRecord& w : h.writes) {
    if (w.token != 0 && w.result == Code::kOk && w.start_ms > superseded_at(h, w.lock, w.token)) {
      out.push_back("superseded holder acknowledged: " + describe(w));
    }
  }
  for (const FenceRecord& f : h.fences) {
    if (f.lease && f.start_ms > superseded_at(h, f.lock, f.token)) {
      out.push_back("superseded grant handed out: client " + std::to_string(f.client) + "'s grant of '" + f.lock +
                    "' at token " + std::to_string(f.token) + ", fenced [" + std::to_string(f.start_ms) + ", " +
                    std::to_string(f.end_ms) + "] answered " + std::string(code_name(f.result)) +
                    ", after a larger token's fence or write completed at " +
                    std::to_string(superseded_at(h, f.lock, f.token)));
    }
  }
  // What each read returned, in the system's order of versions (index: read).
  std::vector<wire::Version> returned(h.reads.size());
  for (size_t i = 0; i < h.reads.size(); ++i) {
    const ReadRecord& r = h.reads[i];
    if (r.result != Code::kOk || r.ts == FencedTimestamp{}) continue;
    const WriteRecord* match = nullptr;
    for (auto [it, end] = by_ts.equal_range({r.key, r.ts}); it != end; ++it) {
      const WriteRecord& w = *it->second;
      if (r.found != w.tombstone && (!r.found || r.value == w.value)) match = &w;
    }
    returned[i] = version_of(r, match);
    if (match == nullptr && r.found) {
      if (auto a = adversary.find({r.key, r.value}); a != adversary.end()) {
        const AdversaryWrite& w = *a->second;
        out.push_back("adversary write visible: " + describe(r) + ", written by the adversary under " + w.lock +
                      " token " + std::to_string(w.token) + " at " + std::to_string(w.sent_ms) + " ms (" + w.why +
                      ")");
        continue;
      }
    }
    if (match == nullptr) {
      out.push_back("never written with that content: " + describe(r));
      continue;
    }
    const WriteRecord& w = *match;
    if (w.result == Code::kFenced || w.result == Code::kStale) {
      out.push_back("visible though refused: " + describe(r) + " of " + describe(w));
    }
    if (w.token != 0 && w.start_ms > superseded_at(h, w.lock, w.token)) {
      out.push_back("superseded write visible: " + describe(r) + " of " + describe(w));
    }
  }
  for (size_t i = 0; i < h.reads.size(); ++i) {
    const ReadRecord& r = h.reads[i];
    if (r.result != Code::kOk) continue;
    for (const WriteRecord& w : h.writes) {
      if (w.key == r.key && w.result == Code::kOk && w.end_ms < r.start_ms && wire::newer(version_of(w), returned[i])) {
        out.push_back("acknowledged write lost: " + describe(r) + " after " + describe(w));
      }
    }
    for (size_t j = 0; j < h.reads.size(); ++j) {
      const ReadRecord& earlier = h.reads[j];
      if (earlier.key == r.key && earlier.result == Code::kOk && earlier.end_ms < r.start_ms &&
          wire::newer(returned[j], returned[i])) {
        out.push_back("read went back in time: " + describe(r) + " after " + describe(earlier));
      }
    }
  }
  return out;
}

void finish_read(ReadRecord& record, const ReadResult& result, uint64_t now_ms) {
  record.end_ms = now_ms;
  record.result = result.status.code();
  record.found = result.found;
  record.value = result.value;
  record.ts = result.ts;
}

}  // namespace palisade::sim
