#include "antientropy/replica_change.h"

#include <algorithm>

namespace palisade {

std::string_view change_name(ReplicaChangeKind kind) {
  switch (kind) {
    case ReplicaChangeKind::kReplace:
      return "replacement";
    case ReplicaChangeKind::kAdd:
      return "addition";
    case ReplicaChangeKind::kRemove:
      return "removal";
  }
  return "change";
}

Result<Quorums> quorums_after(ReplicaChangeKind kind, const wire::ReplicaSet& old, Quorums asked) {
  const auto n = static_cast<uint32_t>(old.replicas.size());
  const uint32_t w = old.write_quorum, r = old.read_quorum;
  const uint32_t next_n = kind == ReplicaChangeKind::kAdd ? n + 1 : kind == ReplicaChangeKind::kRemove ? n - 1 : n;
  auto bad = [](const std::string& why) { return Status(Code::kBadRequest, why); };
  if (next_n == 0) return bad("the set's last replica cannot be removed");
  if (kind == ReplicaChangeKind::kReplace) {
    if ((asked.write != 0 && asked.write != w) || (asked.read != 0 && asked.read != r)) {
      return bad("a replacement keeps W " + std::to_string(w) + " and R " + std::to_string(r));
    }
    return Quorums{w, r};
  }
  Quorums next = asked;
  if (next.write == 0) {
    next.write = std::max(w, next_n / 2 + 1);
  }
  if (next.read == 0) {
    const uint32_t least = next_n + 1 > next.write ? next_n + 1 - next.write : 1;
    next.read = std::clamp(r, least, std::max(least, next_n));
  }
  const std::string sizes = " (the set goes from " + std::to_string(n) + " replicas to " + std::to_string(next_n) + ")";
  if (next.write < w) {
    return bad("W " + std::to_string(next.write) + " is below the set's W " + std::to_string(w) +
               ": W never falls in a change, for the replicas that stay have only their own fence floors" + sizes);
  }
  if (kind == ReplicaChangeKind::kAdd && next.write > w + 1) {
    return bad("W " + std::to_string(next.write) + " is above W + 1 = " + std::to_string(w + 1) +
               ": an added replica holds one more copy of each version" + sizes);
  }
  if (next.write > next_n || next.read > next_n || next.read == 0) {
    return bad("W " + std::to_string(next.write) + " and R " + std::to_string(next.read) + " must be within 1.." +
               std::to_string(next_n) + sizes);
  }
  if (next.write * 2 <= next_n) {
    return bad("W " + std::to_string(next.write) + " must be a majority of " + std::to_string(next_n) + sizes);
  }
  if (next.read + next.write <= next_n) {
    return bad("R " + std::to_string(next.read) + " + W " + std::to_string(next.write) + " must be above N " +
               std::to_string(next_n) + ", so that every read meets every write" + sizes);
  }
  return next;
}

std::string fill_shortfall(ReplicaChangeKind kind, const Result<AntiEntropyReport>& result, bool paused,
                           const std::string& joining, const std::vector<std::string>& staying) {
  if (!result.is_ok()) return result.status().to_string();
  const AntiEntropyReport& report = result.value();
  auto listed = [](const std::vector<std::string>& in, const std::string& e) {
    return std::find(in.begin(), in.end(), e) != in.end();
  };
  if (!joining.empty()) {
    if (listed(report.unreachable, joining)) return "the new replica " + joining + " did not answer";
    if (report.target_refused > 0) {
      return "the new replica " + joining + " did not take every copy (" + report.first_refusal + ")";
    }
  }
  if (!paused) return "";
  if (report.undecided > 0) {
    return std::to_string(report.undecided) + " versions are undecided, first of key '" + report.first_undecided +
           "': a replica not heard from, or a corrupt record of the key, may hold their copies";
  }
  if (kind != ReplicaChangeKind::kRemove) return "";
  for (const std::string& e : staying) {
    if (listed(report.unreachable, e)) return "replica " + e + ", which stays, did not answer the paused fill";
    if (listed(report.refusing, e)) {
      return "replica " + e + ", which stays, did not take every copy (" + report.first_refusal + ")";
    }
  }
  return "";
}

}  // namespace palisade
