#include "tests/support/register_history.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_set>
#include <utility>

namespace palisade::test {
namespace {

constexpr int kNone = -1;  // the register holds no value
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

// One call or return, in a doubly linked list ordered by time.
struct Event {
  size_t op = 0;
  bool call = true;
  size_t prev = 0;
  size_t next = 0;
  size_t match = 0;  // the call's return, the return's call
};

class Search {
 public:
  Search(std::vector<RegisterOp> ops, std::map<std::string, int> ids, int initial)
      : ops_(std::move(ops)), ids_(std::move(ids)), state_(initial), linearized_(ops_.size(), false) {
    build_events();
  }

  RegisterVerdict run() {
    RegisterVerdict verdict;
    size_t entry = events_[kHead].next;
    std::vector<std::pair<size_t, int>> stack;  // the call lifted, and the state before it
    size_t deepest = 0;
    std::vector<bool> deepest_done = linearized_;
    while (entry != kEnd) {
      const Event& e = events_[entry];
      const RegisterOp& op = ops_[e.op];
      if (e.call) {
        const std::optional<int> next = apply(op);
        if (next && explored_.insert(key(e.op, *next)).second) {
          stack.emplace_back(entry, state_);
          state_ = *next;
          linearized_[e.op] = true;
          lift(entry);
          if (stack.size() > deepest) {
            deepest = stack.size();
            deepest_done = linearized_;
          }
          entry = events_[kHead].next;
          continue;
        }
        entry = e.next;
      } else if (op.outcome == RegisterOp::Outcome::kUnknown) {
        entry = e.next;  // never took effect
      } else {
        if (stack.empty()) {
          verdict.why = report(deepest_done);
          verdict.explored = explored_.size();
          return verdict;
        }
        const auto [call, before] = stack.back();
        stack.pop_back();
        state_ = before;
        linearized_[events_[call].op] = false;
        unlift(call);
        entry = events_[call].next;
      }
    }
    verdict.linearizable = true;
    verdict.explored = explored_.size();
    return verdict;
  }

 private:
  static constexpr size_t kHead = 0;
  static constexpr size_t kEnd = std::numeric_limits<size_t>::max();

  void build_events() {
    struct Timed {
      uint64_t at;
      bool ret;
      size_t op;
    };
    std::vector<Timed> timed;
    for (size_t i = 0; i < ops_.size(); ++i) {
      timed.push_back({ops_[i].call, false, i});
      timed.push_back({ops_[i].outcome == RegisterOp::Outcome::kUnknown ? kNever : ops_[i].ret, true, i});
    }
    // At one time, calls first: operations that touch are taken as concurrent.
    std::stable_sort(timed.begin(), timed.end(),
                     [](const Timed& a, const Timed& b) { return a.at != b.at ? a.at < b.at : !a.ret && b.ret; });
    events_.assign(timed.size() + 1, Event{});
    std::vector<size_t> call_of(ops_.size()), return_of(ops_.size());
    for (size_t i = 0; i < timed.size(); ++i) {
      Event& e = events_[i + 1];
      e.op = timed[i].op;
      e.call = !timed[i].ret;
      e.prev = i;
      e.next = i + 2 < events_.size() ? i + 2 : kEnd;
      (e.call ? call_of : return_of)[e.op] = i + 1;
    }
    events_[kHead].next = events_.size() > 1 ? 1 : kEnd;
    for (size_t op = 0; op < ops_.size(); ++op) {
      events_[call_of[op]].match = return_of[op];
      events_[return_of[op]].match = call_of[op];
    }
  }

  void unlink(size_t i) {
    Event& e = events_[i];
    events_[e.prev].next = e.next;
    if (e.next != kEnd) events_[e.next].prev = e.prev;
  }
  void relink(size_t i) {
    Event& e = events_[i];
    events_[e.prev].next = i;
    if (e.next != kEnd) events_[e.next].prev = i;
  }
  void lift(size_t call) {
    unlink(call);
    unlink(events_[call].match);
  }
  void unlift(size_t call) {
    relink(events_[call].match);
    relink(call);
  }

  int id_of(const std::optional<std::string>& value) const { return value ? ids_.at(*value) : kNone; }

  // The state after `op` from the current one, or nullopt when it cannot
  // take place now.
  std::optional<int> apply(const RegisterOp& op) const {
    if (op.kind == RegisterOp::Kind::kRead) {
      if (id_of(op.value) != state_) return std::nullopt;
      return state_;
    }
    const bool matches = id_of(op.expect) == state_;
    if (op.outcome == RegisterOp::Outcome::kFailed) {
      if (matches) return std::nullopt;
      return state_;
    }
    if (!matches) return std::nullopt;
    return id_of(op.value);
  }

  std::string key(size_t op, int state) const {
    std::string k(linearized_.size() + sizeof state, '\0');
    for (size_t i = 0; i < linearized_.size(); ++i) k[i] = linearized_[i] || i == op ? '1' : '0';
    k.replace(linearized_.size(), sizeof state, reinterpret_cast<const char*>(&state), sizeof state);
    return k;
  }

  std::string report(const std::vector<bool>& done) const {
    std::string out = "not linearizable; after the longest order found, none of these fits:";
    int listed = 0;
    for (size_t i = 0; i < ops_.size() && listed < 6; ++i) {
      if (done[i]) continue;
      out += "\n  " + describe(ops_[i]);
      ++listed;
    }
    return out;
  }

  std::vector<RegisterOp> ops_;
  std::map<std::string, int> ids_;
  int state_;
  std::vector<bool> linearized_;
  std::vector<Event> events_;
  std::unordered_set<std::string> explored_;
};

}  // namespace

std::string describe(const RegisterOp& op) {
  auto text = [](const std::optional<std::string>& v) { return v ? "'" + *v + "'" : std::string("nothing"); };
  std::string out = "p" + std::to_string(op.process) + " ";
  if (op.kind == RegisterOp::Kind::kRead) {
    out += "read " + text(op.value);
  } else {
    out += "cas " + text(op.expect) + " -> " + text(op.value);
  }
  out += op.outcome == RegisterOp::Outcome::kOk       ? " ok"
         : op.outcome == RegisterOp::Outcome::kFailed ? " failed"
                                                      : " unknown";
  out += " [" + std::to_string(op.call) + ", " +
         (op.outcome == RegisterOp::Outcome::kUnknown ? std::string("?") : std::to_string(op.ret)) + "]";
  return out;
}

RegisterVerdict check_register(const std::vector<RegisterOp>& history, const std::optional<std::string>& initial) {
  RegisterVerdict malformed;
  std::map<std::string, int> ids;
  std::map<std::string, std::vector<FencedTimestamp>> written_at;
  if (initial) ids[*initial] = 0;
  std::vector<RegisterOp> ops;
  for (const RegisterOp& op : history) {
    if (op.kind == RegisterOp::Kind::kRead && op.outcome != RegisterOp::Outcome::kOk) continue;  // says nothing
    if (op.kind == RegisterOp::Kind::kCas && op.value) {
      if (!ids.emplace(*op.value, static_cast<int>(ids.size())).second) {
        malformed.why = "two writes of '" + *op.value + "': values must be unique to their writes";
        return malformed;
      }
      if (op.outcome == RegisterOp::Outcome::kOk && op.ts) {
        std::vector<FencedTimestamp>& at = written_at[*op.value];
        at = op.sent_at;
        at.push_back(*op.ts);
      }
    }
    if (op.outcome != RegisterOp::Outcome::kUnknown && op.ret < op.call) {
      malformed.why = describe(op) + " returned before its call";
      return malformed;
    }
    ops.push_back(op);
  }
  for (const RegisterOp& op : ops) {
    const bool reads = op.kind == RegisterOp::Kind::kRead;
    if ((reads && op.value && ids.count(*op.value) == 0) || (!reads && op.expect && ids.count(*op.expect) == 0)) {
      malformed.why = describe(op) + " names a value no write wrote: not linearizable";
      return malformed;
    }
    if (reads && op.value && op.ts) {
      auto at = written_at.find(*op.value);
      if (at != written_at.end() && std::find(at->second.begin(), at->second.end(), *op.ts) == at->second.end()) {
        malformed.why = describe(op) + " read it at " + op.ts->to_string() + ", but it was written at " +
                        at->second.back().to_string() + ": not linearizable";
        return malformed;
      }
    }
  }
  return Search(std::move(ops), std::move(ids), initial ? 0 : kNone).run();
}

}  // namespace palisade::test
