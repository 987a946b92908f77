// What an exclusive grant's fence says about the grant (LockClient::acquire).
// A fence that reached a write quorum but came back with a floor above the
// grant's token means a later holder fenced the lock already: the grant is
// superseded, and a lease from it would only have its writes refused.
#pragma once

#include <cstdint>
#include <string_view>

#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "palisade/status.h"

namespace palisade::client {

// Ok when the grant of `lock` with `token` may be used: the fence is ok and its
// floor is not above the token. Else the fence's error, or Fenced naming the floor.
Status grant_fence_status(const WriteResult& fenced, std::string_view lock, uint64_t token);

// The fence of a recipe's grant (Election) on the store it
// writes to: `lease`'s fence on `store`, decided as above, unless `client`
// fenced it there on acquire already (it was given that store): ok then.
Status fence_on(LockClient& client, QuorumStore& store, const Lease& lease);

}  // namespace palisade::client
