// One request to one palisade-lockd node, for tools that ask a particular node
// on purpose (status, health checks, a paused replica asking for its set);
// applications use LockClient, which finds the master and retries.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "palisade/credentials.h"
#include "wire/lock_protocol.h"

namespace zmq {
class context_t;
}

namespace palisade::transport {

// A status reply lists up to 1000 locks.
constexpr size_t kMaxLockReplyBytes = size_t{16} << 20;

// Sends `body` on a fresh DEALER to `endpoint` and waits for its reply; nullopt
// when none comes within `timeout`. `cluster` is the id the request names
// (raw bytes, base/cluster_id.h; empty: any): a node of another cluster
// answers wrong_cluster. Over CURVE with `credentials` when set; nullopt
// too when they name no key for the endpoint.
std::optional<wire::LockReply> call_lockd_endpoint(zmq::context_t& ctx, const std::string& endpoint,
                                                   const wire::LockRequestBody& body, std::chrono::milliseconds timeout,
                                                   const std::string& cluster,
                                                   const std::optional<Credentials>& credentials);
// call_lockd_endpoint to every one of `endpoints` at once: their replies in
// their order, nullopt for those that gave none within `timeout`.
std::vector<std::optional<wire::LockReply>> call_lockd_endpoints(
    zmq::context_t& ctx, const std::vector<std::string>& endpoints, const wire::LockRequestBody& body,
    std::chrono::milliseconds timeout, const std::string& cluster, const std::optional<Credentials>& credentials);
// A fresh request id, unique in this process.
uint64_t next_lock_request_id();

}  // namespace palisade::transport
