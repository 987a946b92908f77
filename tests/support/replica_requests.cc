#include "tests/support/replica_requests.h"

#include "base/physical_clock.h"

namespace palisade::test {

wire::ReplicaRequest write_req(std::string key, std::string value, FencedTimestamp ts, std::string lock) {
  return {0, wire::WriteRequest{std::move(key), std::move(value), false, ts, std::move(lock)}};
}
wire::ReplicaRequest delete_req(std::string key, FencedTimestamp ts, std::string lock) {
  return {0, wire::WriteRequest{std::move(key), "", true, ts, std::move(lock)}};
}
wire::ReplicaRequest fence_req(std::string lock, uint64_t token) { return {0, wire::FenceRequest{std::move(lock), token}}; }
wire::ReplicaRequest commit_req(std::string key, FencedTimestamp ts) { return {0, wire::CommitRequest{std::move(key), ts}}; }
wire::ReplicaRequest purge_req(std::string key, FencedTimestamp ts) { return {0, wire::PurgeRequest{std::move(key), ts}}; }
wire::ReplicaRequest read_req(std::string key) { return {0, wire::ReadRequest{std::move(key)}}; }
wire::ReplicaRequest fenced_read_req(std::string key, std::string lock, uint64_t token) {
  return {0, wire::ReadRequest{std::move(key), "", wire::FenceRequest{std::move(lock), token}}};
}
wire::ReplicaRequest ping_req() { return {0, wire::PingRequest{}}; }
wire::ReplicaRequest with_sequencer(wire::ReplicaRequest r, std::string sequencer) {
  // A body is one of them: the string is moved once.
  auto* read = std::get_if<wire::ReadRequest>(&r.body);
  if (auto* w = std::get_if<wire::WriteRequest>(&r.body)) {
    w->sequencer = std::move(sequencer);
  } else if (auto* f = std::get_if<wire::FenceRequest>(&r.body)) {
    f->sequencer = std::move(sequencer);
  } else if (read != nullptr && read->fence) {
    read->fence->sequencer = std::move(sequencer);
  }
  return r;
}

FencedTimestamp ts_now(uint64_t token, uint64_t logical) {
  SystemClock clock;
  return {token, hlc::make(clock.now_ms(), logical)};
}

}  // namespace palisade::test
