#include "client/grant_fence.h"

#include <string>

namespace palisade::client {

Status grant_fence_status(const WriteResult& fenced, std::string_view lock, uint64_t token) {
  const std::string grant = "lock '" + std::string(lock) + "' was granted (token " + std::to_string(token) + ")";
  if (!fenced.status.is_ok()) {
    return Status(fenced.status.code(),
                  grant + " but its fence did not reach a write quorum, so it was released: " + fenced.status.message());
  }
  if (fenced.floor > token) {
    return Status(Code::kFenced, grant + " but a replica's fence floor is already " + std::to_string(fenced.floor) +
                                     ": a later holder superseded it, so it was released");
  }
  return Status::ok();
}

Status fence_on(LockClient& client, QuorumStore& store, const Lease& lease) {
  if (client.store() == &store) return Status::ok();
  return grant_fence_status(store.fence(Fence{lease.name(), lease.token(), lease.sequencer()}), lease.name(),
                            lease.token());
}

}  // namespace palisade::client
