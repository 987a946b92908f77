#include "palisade/election.h"

#include <utility>

#include "client/grant_fence.h"
#include "client/polling.h"

namespace palisade {

Election::Election(LockClient& client, QuorumStore& store, ElectionOptions options)
    : client_(client), store_(store), options_(std::move(options)) {
  if (options_.key.empty()) options_.key = options_.name;
}

Result<Lease> Election::campaign(std::string_view value, std::chrono::milliseconds wait, std::stop_token cancel) {
  auto lease = client_.acquire(
      options_.name, {.mode = LockMode::kExclusive, .wait = wait, .lock_delay = options_.lock_delay, .cancel = cancel});
  if (!lease.is_ok()) return lease.status();
  // The client fences on acquire when it was given this store. Without a
  // quorum fenced, a deposed leader's write could still land where this
  // leader's value is read.
  Status written = client::fence_on(client_, store_, lease.value());
  if (written.is_ok()) written = store_.put(options_.key, value, lease.value()).status;
  if (!written.is_ok()) {
    (void)client_.release(lease.value());  // best effort: closing the session releases it too
    return written;
  }
  return lease;
}

Status Election::check_lease(const Lease& lease) const {
  if (lease.name() == options_.name) return Status::ok();
  return Status(Code::kBadRequest,
                "the lease is of lock '" + lease.name() + "', not of election '" + options_.name + "'");
}

WriteResult Election::proclaim(const Lease& lease, std::string_view value) {
  if (Status s = check_lease(lease); !s.is_ok()) {
    WriteResult refused;
    refused.status = std::move(s);
    return refused;
  }
  return store_.put(options_.key, value, lease);
}

Status Election::resign(Lease& lease) {
  if (Status s = check_lease(lease); !s.is_ok()) return s;
  // An invalid lease deletes nothing (no_session): a successor's value stays.
  const WriteResult deleted = store_.del(options_.key, lease);
  Status released = client_.release(lease);
  if (!released.is_ok()) return released;
  if (deleted.status.code() == Code::kNoSession || deleted.status.code() == Code::kFenced) return Status::ok();
  return deleted.status;
}

Result<std::optional<Leader>> Election::leader() {
  // The value first, then the grant: a value read is then never newer than
  // the grant, so a value whose token is the grant's is the leader's own.
  const ReadResult read = store_.get(options_.key);
  if (!read.status.is_ok()) return read.status;
  auto grant = client_.current_grant(options_.name);
  if (!grant.is_ok()) return grant.status();
  if (!grant.value() || grant.value()->mode != LockMode::kExclusive) return std::optional<Leader>();
  Leader leader{.token = grant.value()->token, .value = std::nullopt, .ts = {}};
  if (read.found && read.lock == options_.name && read.ts.token == leader.token) {
    leader.value = read.value;
    leader.ts = read.ts;
  }
  return std::optional<Leader>(std::move(leader));
}

Status Election::observe(const std::function<void(const std::optional<Leader>&)>& on_change, std::stop_token stop,
                         std::chrono::milliseconds every) {
  std::optional<std::optional<Leader>> told;
  return client::poll_every(every, std::move(stop), [&]() -> Status {
    auto now = leader();
    if (!now.is_ok()) return now.status();
    if (!told || *told != now.value()) {
      told = now.value();
      on_change(now.value());
    }
    return Status::ok();
  });
}

}  // namespace palisade
