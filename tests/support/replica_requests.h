// Builders of replica requests for tests.
#pragma once

#include <string>

#include "wire/replica_protocol.h"

namespace palisade::test {

// Request builders.
wire::ReplicaRequest write_req(std::string key, std::string value, FencedTimestamp ts, std::string lock = "");
wire::ReplicaRequest delete_req(std::string key, FencedTimestamp ts, std::string lock = "");
wire::ReplicaRequest fence_req(std::string lock, uint64_t token);
wire::ReplicaRequest commit_req(std::string key, FencedTimestamp ts);
wire::ReplicaRequest purge_req(std::string key, FencedTimestamp ts);
wire::ReplicaRequest read_req(std::string key);
// A read that takes the fence (lock, token) first.
wire::ReplicaRequest fenced_read_req(std::string key, std::string lock, uint64_t token);
wire::ReplicaRequest ping_req();
// `r` (a write, a fence or a fenced read) carrying `sequencer`.
wire::ReplicaRequest with_sequencer(wire::ReplicaRequest r, std::string sequencer);

// A timestamp with `token` at the current wall-clock millisecond plus `logical`.
FencedTimestamp ts_now(uint64_t token, uint64_t logical = 0);

}  // namespace palisade::test
