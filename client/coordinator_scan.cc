// Prefix reads (docs/consistency.md "Prefix reads"): the Coordinator's scans.
// A page of keys is listed by R replicas; each key listed is then decided by
// a read of its own that starts from those replicas' answers, so that a
// scan returns what a get of each key would, by the very same rules, and
// asks more replicas, or repairs, only for the keys that need it.
#include <algorithm>
#include <set>

#include "client/coordinator.h"
#include "client/coordinator_ops.h"

namespace palisade::client {

OpId Coordinator::start_scan(std::string prefix, std::string after, size_t limit, uint64_t now_ms) {
  note_time(now_ms);
  OpId id = next_op_++;
  if (limit == 0) {
    completions_.push_back({id, ScanResult{Status(Code::kBadRequest, "a scan's limit must be at least 1"), {}, {}}});
    return id;
  }
  ScanOp& op = scans_[id];
  op.prefix = std::move(prefix);
  op.after = std::move(after);
  op.limit = limit;
  op.replicas.resize(options_.n);
  list_page(id, op, now_ms);
  return id;
}

void Coordinator::list_page(OpId id, ScanOp& op, uint64_t now_ms) {
  drop_pending(id);  // the last page's late answers no longer count
  op.deadline_ms = now_ms + options_.timeout_ms;
  op.retry_at_ms = now_ms + options_.hedge_ms;
  op.reads.clear();
  op.page_end.clear();
  for (auto& rep : op.replicas) {
    const bool refuses = rep.refuses;
    rep = {};
    rep.refuses = refuses;
  }
  // Start at a different replica each page to spread the load.
  const uint64_t first = id + op.pages++;
  for (int k = 0; k < options_.r; ++k) ask_scan(id, op, static_cast<int>((first + k) % options_.n));
}

void Coordinator::ask_scan(OpId id, ScanOp& op, int replica) {
  auto& rep = op.replicas[replica];
  if (rep.outstanding || rep.failed || rep.refuses) return;
  rep.asked = rep.outstanding = true;
  const auto limit = static_cast<uint32_t>(std::min(op.limit, wire::kMaxScanKeys));
  send(id, replica, wire::ScanRequest{op.prefix, op.after, limit});
}

namespace {

// Whether a scan answer keeps to what was asked: keys of the prefix, after
// `after`, in byte order, one receipt per version when it gives any, and a
// key listed when more follow.
bool keeps_to(const wire::ReplicaReply& reply, const std::string& prefix, const std::string& after) {
  if (reply.more && reply.scanned.empty()) return false;  // "more" after nothing ends no page
  size_t versions = 0;
  const std::string* last = &after;
  for (const wire::ScannedKey& k : reply.scanned) {
    if (!k.key.starts_with(prefix) || k.key <= *last) return false;
    last = &k.key;
    versions += k.record.versions.size();
  }
  return reply.receipts.empty() || reply.receipts.size() == versions;
}

}  // namespace

void Coordinator::on_scan_reply(ScanOp& op, int replica, const wire::ReplicaReply* reply) {
  auto& rep = op.replicas[replica];
  const Code code = listing_answer(clock_, rep, op.refusal, reply);
  if (code == Code::kWrongCluster || code == Code::kPermissionDenied) return;
  // An answer outside the range asked is no listing: asked again at the next retry.
  rep.failed = code != Code::kOk || !keeps_to(*reply, op.prefix, op.after);
  if (rep.failed) return;
  rep.answered = true;
  rep.answered_request = reply->id;
  rep.listed = *reply;
}

void Coordinator::advance_scan(OpId id, ScanOp& op, uint64_t now_ms) {
  if (!op.reads.empty()) return;  // the page's reads decide from here
  const auto refusing =
      std::count_if(op.replicas.begin(), op.replicas.end(), [](const auto& rep) { return rep.refuses; });
  if (options_.n - refusing < options_.r) return finish_scan(id, op, op.refusal);
  const bool retry = now_ms >= op.retry_at_ms;
  const AskRound round = AskRound::count(op.replicas, retry, options_.paused);  // as a read's (advance_read)
  if (round.answered >= options_.r && !options_.paused) return read_page(id, op, now_ms);
  for (int i = 0; i < options_.n; ++i) {
    if (round.asks(op.replicas[i], retry)) ask_scan(id, op, i);
  }
  if (op.retry_at_ms <= now_ms) op.retry_at_ms = now_ms + options_.hedge_ms;
  if (now_ms >= op.deadline_ms) {
    std::string why =
        "could not list the keys of prefix '" + op.prefix + "' on " + std::to_string(options_.r) + " replicas in time";
    if (options_.paused) {
      why += "; replica set version " + std::to_string(options_.config) +
             " is paused, reads wait for the next set: a replacement is under way";
    }
    finish_scan(id, op, Status(Code::kUnavailable, why));
  }
}

void Coordinator::read_page(OpId id, ScanOp& op, uint64_t now_ms) {
  // A replica that stopped early listed everything up to its last key, and
  // no further: the page ends at the first such key.
  bool ends = false;
  for (const auto& rep : op.replicas) {
    if (!rep.answered || !rep.listed.more || rep.listed.scanned.empty()) continue;
    const std::string& last = rep.listed.scanned.back().key;
    if (!ends || last < op.page_end) op.page_end = last;
    ends = true;
  }
  for (const auto& rep : op.replicas) {
    if (!rep.answered) continue;
    for (const wire::ScannedKey& k : rep.listed.scanned) {
      if (!ends || k.key <= op.page_end) op.reads.emplace(k.key, std::nullopt);
    }
  }
  if (op.reads.empty()) {
    // A replica that stopped early listed at least one key, so an empty
    // page is the end of the prefix.
    return finish_scan(id, op, Status::ok());
  }
  if (options_.broken_scan_trusts_listing) {
    for (auto& [key, result] : op.reads) {
      result = ReadResult{Status::ok(), false, "", {}, ""};
      const wire::Version* newest = nullptr;
      for (const auto& rep : op.replicas) {
        for (const wire::ScannedKey& k : rep.listed.scanned) {
          if (!rep.answered || k.key != key || k.record.versions.empty()) continue;
          if (newest == nullptr || wire::newer(k.record.versions.front(), *newest)) newest = &k.record.versions.front();
        }
      }
      if (newest != nullptr) result->ts = newest->ts;
      if (newest != nullptr && !newest->tombstone)
        *result = {Status::ok(), true, newest->value, newest->ts, newest->lock};
    }
    drop_pending(id);
    for (auto& rep : op.replicas) rep.outstanding = false;
    return page_read(id, op, now_ms);
  }
  // Each key's read starts as if every replica that listed the page had
  // answered its `read`: the same versions, receipts and floors, of the
  // same moment. A key a replica did not list has no version there.
  std::vector<OpId> started;
  for (const auto& entry : op.reads) {
    const std::string& key = entry.first;
    const OpId read_id = next_op_++;
    ReadOp& read = reads_[read_id];
    read.key = key;
    read.scan = id;
    read.deadline_ms = op.deadline_ms;
    read.retry_at_ms = now_ms + options_.hedge_ms;
    read.replicas.resize(options_.n);
    for (int i = 0; i < options_.n; ++i) {
      const auto& listed = op.replicas[i];
      if (!listed.answered) continue;
      auto& rep = read.replicas[i];
      rep.asked = true;
      const auto& scanned = listed.listed.scanned;
      auto it = std::lower_bound(scanned.begin(), scanned.end(), key,
                                 [](const wire::ScannedKey& k, const std::string& key) { return k.key < key; });
      if (it != scanned.end() && it->key == key && it->record.corrupt) {
        // Damage: its `read` names the digest a repair needs; ask it.
        rep.corrupt = rep.failed = true;
        continue;
      }
      rep.answered = true;
      rep.answered_request = listed.answered_request;
      rep.floors = listed.listed.floors;
      if (it == scanned.end() || it->key != key) continue;
      rep.versions = it->record.versions;
      if (!listed.listed.receipts.empty()) {
        size_t first = 0;
        for (auto k = scanned.begin(); k != it; ++k) first += k->record.versions.size();
        rep.receipts.assign(listed.listed.receipts.begin() + static_cast<ptrdiff_t>(first),
                            listed.listed.receipts.begin() + static_cast<ptrdiff_t>(first + rep.versions.size()));
      }
    }
    started.push_back(read_id);
  }
  op.reads_left = started.size();
  drop_pending(id);  // the listing is done: late answers are of no use
  for (auto& rep : op.replicas) rep.outstanding = false;
  // The last read to end ends the page, which may end the scan: `op` is not
  // touched after this loop.
  for (OpId read_id : started) {
    if (auto it = reads_.find(read_id); it != reads_.end()) advance_read(read_id, it->second, now_ms);
  }
}

void Coordinator::on_key_read(OpId scan, const std::string& key, ReadResult result, uint64_t now_ms) {
  auto it = scans_.find(scan);
  if (it == scans_.end()) return;
  ScanOp& op = it->second;
  op.reads[key] = std::move(result);
  if (--op.reads_left == 0) page_read(scan, op, now_ms);
}

void Coordinator::page_read(OpId scan, ScanOp& op, uint64_t now_ms) {
  for (auto& [k, read] : op.reads) {
    if (!read->status.is_ok()) {
      return finish_scan(scan, op, Status(read->status.code(), "key '" + k + "': " + read->status.message()));
    }
  }
  for (auto& [k, read] : op.reads) {
    if (!read->found) {
      if (read->ts != FencedTimestamp{}) op.result.deleted.push_back({k, "", read->ts, std::move(read->lock)});
      continue;
    }
    if (op.limit == 0) {  // more keys, but the scan has what it was asked for
      op.result.next = op.result.entries.back().key;
      std::erase_if(op.result.deleted, [&](const KeyValue& d) { return d.key > op.result.next; });
      return finish_scan(scan, op, Status::ok());
    }
    op.result.entries.push_back({k, std::move(read->value), read->ts, std::move(read->lock)});
    --op.limit;
  }
  if (op.page_end.empty()) return finish_scan(scan, op, Status::ok());
  op.after = op.page_end;
  if (op.limit == 0) {
    op.result.next = op.page_end;
    return finish_scan(scan, op, Status::ok());
  }
  list_page(scan, op, now_ms);
}

void Coordinator::finish_scan(OpId id, ScanOp& op, Status status) {
  ScanResult result = std::move(op.result);
  if (!status.is_ok()) result = {};
  result.status = std::move(status);
  completions_.push_back({id, std::move(result)});
  drop_pending(id);
  scans_.erase(id);
}

std::string Coordinator::check_scans() const {
  std::set<std::pair<OpId, int>> listing;  // (scan, replica) with a scan request pending
  for (const auto& [id, p] : pending_) {
    if (scans_.count(p.op) != 0) listing.insert({p.op, p.replica});
  }
  std::map<OpId, size_t> reading;  // reads of each scan's page
  for (const auto& [id, read] : reads_) {
    if (read.scan == 0) continue;
    auto scan = scans_.find(read.scan);
    if (scan == scans_.end()) return "read " + std::to_string(id) + " decides a key for no unfinished scan";
    if (scan->second.reads.count(read.key) == 0) return "read " + std::to_string(id) + " reads a key its page lacks";
    ++reading[read.scan];
  }
  for (const auto& [id, op] : scans_) {
    const std::string what = "scan " + std::to_string(id);
    if (op.replicas.size() != static_cast<size_t>(options_.n)) return what + " does not track every replica";
    if (op.limit == 0) return what + " wants no more entries and is not finished";
    if (op.reads_left != reading[id]) {
      return what + " counts " + std::to_string(op.reads_left) + " reads left, not its unfinished ones";
    }
    if (!op.reads.empty() && op.reads_left == 0) return what + " has read its page and is not finished";
    for (int i = 0; i < options_.n; ++i) {
      const auto& rep = op.replicas[static_cast<size_t>(i)];
      if (rep.outstanding && (!rep.asked || !op.reads.empty() || listing.count({id, i}) == 0)) {
        return what + " waits on replica " + std::to_string(i) + " with no request of this page pending";
      }
    }
  }
  return "";
}

}  // namespace palisade::client
