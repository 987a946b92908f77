// Reads of the replicas' change feeds (docs/protocol.md "changes"): the
// Coordinator asks every replica for a page, and hands back each one that
// answered. Deciding what the pages show is the watcher's (client/watch_state.h).
#include <algorithm>
#include <set>

#include "client/coordinator.h"
#include "client/coordinator_ops.h"

namespace palisade::client {

OpId Coordinator::start_feed(std::string prefix, std::vector<uint64_t> after, uint64_t now_ms, bool wait_for_all) {
  note_time(now_ms);
  OpId id = next_op_++;
  FeedResult nothing{Status::ok(), options_.config, options_.n, options_.w};
  if (after.size() != static_cast<size_t>(options_.n)) {
    nothing.pages.resize(options_.n);
    completions_.push_back({id, std::move(nothing)});
    return id;
  }
  FeedOp& op = feeds_[id];
  op.result = std::move(nothing);
  op.prefix = std::move(prefix);
  op.after = std::move(after);
  op.start_ms = now_ms;
  op.wait_for_all = wait_for_all;
  op.deadline_ms = now_ms + options_.timeout_ms;
  op.retry_at_ms = now_ms + options_.hedge_ms;
  op.replicas.resize(options_.n);
  op.result.pages.resize(options_.n);
  for (int i = 0; i < options_.n; ++i) ask_feed(id, op, i);
  return id;
}

void Coordinator::ask_feed(OpId id, FeedOp& op, int replica) {
  auto& rep = op.replicas[replica];
  if (rep.outstanding || rep.answered || rep.refuses) return;
  rep.outstanding = true;
  send(id, replica,
       wire::ChangesRequest{op.prefix, op.after[replica], static_cast<uint32_t>(wire::kMaxChangesPerReply)});
}

namespace {

// Whether a page keeps to what was asked: a feed's position, changes of the
// prefix numbered after `after`, in order (the codec checks the order).
bool keeps_to(const wire::ReplicaReply& reply, const std::string& prefix, uint64_t after) {
  if (!reply.feed) return false;
  return std::all_of(reply.changes.begin(), reply.changes.end(), [&](const wire::FeedChange& c) {
    return c.key.starts_with(prefix) && (c.seq > after || after == UINT64_MAX) && c.seq <= reply.feed->next;
  });
}

}  // namespace

void Coordinator::on_feed_reply(FeedOp& op, int replica, const wire::ReplicaReply* reply) {
  auto& rep = op.replicas[replica];
  const Code code = listing_answer(clock_, rep, op.refusal, reply);
  if (code == Code::kWrongCluster || code == Code::kPermissionDenied) return;
  // Another answer (an error, a page outside what was asked) is asked again at the next retry.
  if (code != Code::kOk || !keeps_to(*reply, op.prefix, op.after[replica])) return;
  rep.answered = true;
  op.result.pages[replica] = *reply;
}

void Coordinator::advance_feed(OpId id, FeedOp& op, uint64_t now_ms) {
  const auto count = [&](auto pred) { return std::count_if(op.replicas.begin(), op.replicas.end(), pred); };
  if (count([](const auto& r) { return r.refuses; }) > 0 && count([](const auto& r) { return r.answered; }) == 0 &&
      count([](const auto& r) { return r.outstanding; }) == 0) {
    return finish_feed(id, op, op.refusal);
  }
  // A replica slower than the others, or down, is behind this read: its page
  // comes with a later one. Waiting for it would make the others' pages old.
  const auto answered = count([](const auto& r) { return r.answered; });
  if (answered + count([](const auto& r) { return r.refuses; }) == options_.n || now_ms >= op.deadline_ms ||
      (!op.wait_for_all && answered >= options_.r && now_ms >= op.start_ms + options_.hedge_ms)) {
    return finish_feed(id, op, Status::ok());
  }
  if (now_ms >= op.retry_at_ms) {
    op.retry_at_ms = now_ms + options_.hedge_ms;
    for (int i = 0; i < options_.n; ++i) {
      auto& rep = op.replicas[i];
      rep.outstanding = false;  // a lost request or answer: asked again
      ask_feed(id, op, i);
    }
  }
}

void Coordinator::finish_feed(OpId id, FeedOp& op, Status status) {
  op.result.status = std::move(status);
  if (!op.result.status.is_ok()) op.result.pages.assign(op.result.pages.size(), std::nullopt);
  completions_.push_back({id, std::move(op.result)});
  drop_pending(id);
  feeds_.erase(id);
}

std::string Coordinator::check_feeds() const {
  std::set<std::pair<OpId, int>> asking;  // (feed read, replica) with a request pending
  for (const auto& [id, p] : pending_) {
    if (feeds_.count(p.op) != 0) asking.insert({p.op, p.replica});
  }
  for (const auto& [id, op] : feeds_) {
    const std::string what = "feed read " + std::to_string(id);
    if (op.replicas.size() != static_cast<size_t>(options_.n) || op.after.size() != op.replicas.size() ||
        op.result.pages.size() != op.replicas.size()) {
      return what + " does not track every replica";
    }
    for (int i = 0; i < options_.n; ++i) {
      const auto& rep = op.replicas[static_cast<size_t>(i)];
      if (rep.answered != op.result.pages[static_cast<size_t>(i)].has_value()) {
        return what + " holds a page of replica " + std::to_string(i) + " exactly when it answered";
      }
      if (rep.outstanding && asking.count({id, i}) == 0) {
        return what + " waits on replica " + std::to_string(i) + " with no request pending";
      }
    }
  }
  return "";
}

}  // namespace palisade::client
