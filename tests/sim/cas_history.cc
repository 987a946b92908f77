#include "tests/sim/cas_history.h"

#include <map>
#include <utility>

namespace palisade::sim {

using test::RegisterOp;

size_t CasHistory::call(const std::string& key, int client, std::optional<std::string> expect, std::string value,
                        uint64_t now_ms) {
  entries_.push_back({key, RegisterOp{.kind = RegisterOp::Kind::kCas,
                                      .outcome = RegisterOp::Outcome::kUnknown,
                                      .call = now_ms,
                                      .process = client,
                                      .expect = std::move(expect),
                                      .value = std::move(value)}});
  return entries_.size() - 1;
}

void CasHistory::written(size_t cas, FencedTimestamp ts, std::vector<FencedTimestamp> sent_at, uint64_t now_ms) {
  RegisterOp& op = entries_[cas].op;
  op.outcome = RegisterOp::Outcome::kOk;
  op.ret = now_ms;
  op.ts = ts;
  op.sent_at = std::move(sent_at);
}

void CasHistory::stale(size_t cas, uint64_t now_ms) {
  RegisterOp& op = entries_[cas].op;
  op.outcome = RegisterOp::Outcome::kFailed;
  op.ret = now_ms;
}

void CasHistory::no_effect(size_t cas) { entries_[cas].effect = false; }

void CasHistory::read(const ReadRecord& r) {
  if (r.result != Code::kOk) return;  // a read that failed says nothing
  RegisterOp op{.kind = RegisterOp::Kind::kRead, .call = r.start_ms, .ret = r.end_ms, .process = r.client};
  if (r.found) {
    op.value = r.value;
    op.ts = r.ts;
  }
  entries_.push_back({r.key, std::move(op)});
}

std::vector<std::string> CasHistory::check() const {
  std::map<std::string, std::vector<RegisterOp>> by_key;
  for (const Entry& e : entries_) {
    if (e.effect) by_key[e.key].push_back(e.op);
  }
  std::vector<std::string> out;
  for (const auto& [key, history] : by_key) {
    const test::RegisterVerdict verdict = test::check_register(history);
    if (!verdict.linearizable) {
      out.push_back("compare-and-sets of '" + key + "' are not linearizable: " + verdict.why);
    }
  }
  return out;
}

uint64_t CasHistory::count(RegisterOp::Outcome outcome) const {
  uint64_t n = 0;
  for (const Entry& e : entries_) n += e.effect && e.op.kind == RegisterOp::Kind::kCas && e.op.outcome == outcome;
  return n;
}

}  // namespace palisade::sim
