// A lock-table snapshot (lockgroup/lock_table.h LockTable::restore): the whole
// state machine, which acceptors keep on disk after compacting their log and
// peers send in catch-up messages. What does not restore is Corrupt and
// leaves the table as it was. What restores keeps the table's invariants and
// snapshots to bytes that restore to an equal table and snapshot the same
// again; a batch of commands then applies to both alike.
#include <cstdint>
#include <string>
#include <vector>

#include "lockgroup/lock_table.h"
#include "tests/fuzz/fuzz_support.h"

namespace palisade::lockgroup {
namespace {

// A session that holds "a" and waits for "b", and another that holds "b".
const std::vector<TaggedCommand> kBatch = {
    {1, OpenSession{}},
    {2, OpenSession{30'000}},
    {3, Acquire{1, "a", LockMode::kExclusive, 1000, false, 0, 1}},
    {4, Acquire{2, "b", LockMode::kShared, 0, false, 0, 1}},
    {5, Acquire{1, "b", LockMode::kExclusive, 0, true, 5000, 2}},
};

}  // namespace
}  // namespace palisade::lockgroup

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  using namespace palisade::lockgroup;
  LockTable table;
  (void)table.apply(kBatch);
  const LockTable before = table;
  Status restored = table.restore(fuzz::as_text(data, size));
  if (!restored.is_ok()) {
    FUZZ_CHECK(restored.code() == Code::kCorrupt);
    FUZZ_CHECK(table == before);
    return 0;
  }
  FUZZ_CHECK(table.check_invariants().empty());
  const std::string snapshot = table.snapshot();
  LockTable again;
  FUZZ_CHECK(again.restore(snapshot).is_ok());
  FUZZ_CHECK(again == table);
  FUZZ_CHECK(again.snapshot() == snapshot);

  // Closes or expires every session, opens one, which then takes every lock.
  std::vector<TaggedCommand> closing;
  uint64_t tag = 0;
  for (const auto& [session, lease_ms] : table.sessions()) {
    closing.push_back({++tag, session % 2 == 0 ? Command{CloseSession{session}} : Command{ExpireSession{session}}});
  }
  closing.push_back({++tag, OpenSession{}});
  const Effects closed = table.apply(closing);
  FUZZ_CHECK(closed == again.apply(closing));
  std::vector<TaggedCommand> taking;
  for (const auto& [name, state] : table.locks()) {
    taking.push_back({++tag, Acquire{closed.results.back().session, name}});
  }
  FUZZ_CHECK(table.apply(taking) == again.apply(taking));
  FUZZ_CHECK(table == again);
  FUZZ_CHECK(table.check_invariants().empty());
  return 0;
}
