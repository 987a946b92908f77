#include "lockgroup/peer_checks.h"

#include <string>
#include <variant>

namespace palisade::lockgroup {
namespace {

Status refuse(std::string message) { return Status(Code::kBadRequest, std::move(message)); }

Status check_entries(std::string_view what, const std::vector<Entry>& entries) {
  for (const Entry& e : entries) {
    if (e.value.empty()) continue;  // a no-op
    auto batch = decode_batch(e.value);
    if (!batch.is_ok()) {
      return refuse(std::string(what) + " for slot " + std::to_string(e.slot) +
                    " is not a batch of commands: " + batch.status().message());
    }
  }
  return Status::ok();
}

Status check_snapshot(const CatchUp& m, const LockTable& table, Slot applied) {
  if (m.snapshot_slot <= applied) return Status::ok();  // the node ignores it
  LockTable restored;
  if (Status s = restored.restore(m.snapshot); !s.is_ok()) {
    return refuse("catch-up snapshot through slot " + std::to_string(m.snapshot_slot) +
                  " does not restore: " + s.message());
  }
  // A later state never hands out a token again: tokens fence writes.
  if (restored.grant_counter() < table.grant_counter()) {
    return refuse("catch-up snapshot through slot " + std::to_string(m.snapshot_slot) + " has grant counter " +
                  std::to_string(restored.grant_counter()) + ", below this node's " +
                  std::to_string(table.grant_counter()));
  }
  return Status::ok();
}

}  // namespace

Status check_peer_values(const PeerMessage& message, const LockTable& table, Slot applied) {
  return std::visit(
      [&](const auto& m) -> Status {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Promise>) return check_entries("accepted value", m.accepted);
        if constexpr (std::is_same_v<T, Accept>) return check_entries("accept value", m.entries);
        if constexpr (std::is_same_v<T, CatchUp>) {
          if (Status s = check_snapshot(m, table, applied); !s.is_ok()) return s;
          return check_entries("chosen value", m.chosen);
        }
        return Status::ok();
      },
      message.body);
}

}  // namespace palisade::lockgroup
