// A batch of lock-table commands (lockgroup/lock_table.h decode_batch): the
// value of one Paxos slot, which peers send in accept and catch-up messages
// and acceptors keep on disk. What decodes must encode to bytes that decode to
// the same batch and encode the same again. Applied, the batch must leave a
// table that keeps its invariants and whose snapshot restores to an equal
// table, one that then applies the batch again exactly as the original does.
#include <cstdint>
#include <string>

#include "lockgroup/lock_table.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  using namespace palisade::lockgroup;
  auto batch = decode_batch(fuzz::as_text(data, size));
  if (!batch.is_ok()) {
    FUZZ_CHECK(batch.code() == Code::kMalformed || batch.code() == Code::kBadRequest);
    return 0;
  }
  const std::string encoded = encode_batch(batch.value());
  auto again = decode_batch(encoded);
  FUZZ_CHECK(again.is_ok() && again.value() == batch.value());
  FUZZ_CHECK(encode_batch(again.value()) == encoded);

  LockTable table;
  const Effects effects = table.apply(batch.value());
  FUZZ_CHECK(effects.results.size() == batch.value().size());
  FUZZ_CHECK(table.check_invariants().empty());
  LockTable restored;
  FUZZ_CHECK(restored.restore(table.snapshot()).is_ok());
  FUZZ_CHECK(restored == table);
  FUZZ_CHECK(table.apply(batch.value()) == restored.apply(batch.value()));
  FUZZ_CHECK(table.check_invariants().empty());
  FUZZ_CHECK(restored == table);
  return 0;
}
