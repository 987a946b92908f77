#include "palisade/conditional.h"

#include <cstdio>
#include <utility>

#include "client/conditional_compare.h"
#include "wire/envelope.h"
#include "wire/hash.h"

namespace palisade {

ConditionalStore::ConditionalStore(LockClient& client, QuorumStore& store, ConditionalOptions options)
    : client_(client), store_(store), options_(options) {}

std::string ConditionalStore::lock_for(std::string_view key) {
  std::string lock(kLockPrefix);
  if (lock.size() + key.size() <= wire::Limits{}.max_lock_bytes) return lock.append(key);
  char hex[40];
  std::snprintf(hex, sizeof hex, "#%016llx%016llx", static_cast<unsigned long long>(hash64(key, 0)),
                static_cast<unsigned long long>(hash64(key, 1)));
  return lock.append(hex);
}

ConditionalResult ConditionalStore::put(std::string_view key, std::string_view value, const Expect& expect) {
  return write(key, value, expect);
}

ConditionalResult ConditionalStore::del(std::string_view key, const Expect& expect) {
  return write(key, std::nullopt, expect);
}

ConditionalResult ConditionalStore::write(std::string_view key, std::optional<std::string_view> value,
                                          const Expect& expect) {
  ConditionalResult out;
  auto lease = client_.acquire(lock_for(key), {.mode = LockMode::kExclusive, .wait = options_.wait});
  if (!lease.is_ok()) {
    out.status = lease.status();
    return out;
  }
  // A fenced read: every replica that answers takes the grant's fence
  // first, so a conditional write that stalled before this one is either in
  // what the read decides from or can no longer be acknowledged.
  Lease& held = lease.value();
  out.current = store_.get(key, held);
  out.status = out.current.status;
  if (out.status.is_ok()) {
    out.status = client::conditional_compare(expect, out.current);
    if (out.status.is_ok()) {
      const WriteResult written = value ? store_.put(key, *value, held) : store_.del(key, held);
      out.status = written.status;
      out.ts = written.ts;
    }
  }
  // Best effort: a release that fails leaves the lock to the session's end,
  // and changes nothing of what was written.
  (void)client_.release(held);
  return out;
}

}  // namespace palisade
