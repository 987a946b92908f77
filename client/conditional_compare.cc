#include "client/conditional_compare.h"

namespace palisade::client {

Status conditional_compare(const Expect& expect, const ReadResult& current) {
  if (expect.version) {
    if (current.found && current.ts == *expect.version) return Status::ok();
    return Status(Code::kStale, "the key is not at version " + expect.version->to_string());
  }
  if (!current.found) return Status::ok();
  return Status(Code::kStale, "the key has a value");
}

}  // namespace palisade::client
