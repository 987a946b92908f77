#include "tests/sim/history.h"

#include <map>

namespace palisade::sim {
namespace {

std::string describe(const ReadRecord& r) {
  return "read by client " + std::to_string(r.client) + " of '" + r.key + "' [" + std::to_string(r.start_ms) + ", " +
         std::to_string(r.end_ms) + "] returned " + r.ts.to_string();
}

std::string describe(const WriteRecord& w) {
  return "write by client " + std::to_string(w.client) + " of '" + w.key + "' " + w.ts.to_string() + " [" +
         std::to_string(w.start_ms) + ", " + std::to_string(w.end_ms) + "] answered " + std::string(code_name(w.result));
}

// The earliest time a fence of `lock` with a token above `token` completed; UINT64_MAX if none.
uint64_t superseded_at(const History& h, const std::string& lock, uint64_t token) {
  uint64_t at = UINT64_MAX;
  for (const FenceRecord& f : h.fences) {
    if (f.result == Code::kOk && f.lock == lock && f.token > token) at = std::min(at, f.end_ms);
  }
  return at;
}

}  // namespace

std::vector<std::string> check(const History& h) {
  std::vector<std::string> out;
  // Clients' clocks can give two writes one timestamp: content tells them apart.
  std::multimap<std::pair<std::string, FencedTimestamp>, const WriteRecord*> by_ts;
  for (const WriteRecord& w : h.writes) by_ts.emplace(std::make_pair(w.key, w.ts), &w);

  for (const WriteRecord& w : h.writes) {
    if (w.token != 0 && w.result == Code::kOk && w.start_ms > superseded_at(h, w.lock, w.token)) {
      out.push_back("superseded holder acknowledged: " + describe(w));
    }
  }
  for (const ReadRecord& r : h.reads) {
    if (r.result != Code::kOk || r.ts == FencedTimestamp{}) continue;
    const WriteRecord* match = nullptr;
    for (auto [it, end] = by_ts.equal_range({r.key, r.ts}); it != end; ++it) {
      const WriteRecord& w = *it->second;
      if (r.found != w.tombstone && (!r.found || r.value == w.value)) match = &w;
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
  for (const ReadRecord& r : h.reads) {
    if (r.result != Code::kOk) continue;
    for (const WriteRecord& w : h.writes) {
      if (w.key == r.key && w.result == Code::kOk && w.end_ms < r.start_ms && r.ts < w.ts) {
        out.push_back("acknowledged write lost: " + describe(r) + " after " + describe(w));
      }
    }
    for (const ReadRecord& earlier : h.reads) {
      if (earlier.key == r.key && earlier.result == Code::kOk && earlier.end_ms < r.start_ms && r.ts < earlier.ts) {
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
