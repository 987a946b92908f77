// The replica protocol's decoders (wire/replica_protocol.h): a request as any
// client sends it to a replica, a reply as a client reads it, and a request
// under a repairer's seal (auth/repair_seal.h). What decodes must encode to
// bytes that decode to the same message and encode the same again.
#include <cstdint>
#include <string>

#include "auth/cluster_key.h"
#include "auth/repair_seal.h"
#include "tests/fuzz/fuzz_support.h"
#include "wire/replica_protocol.h"

namespace palisade {
namespace {

constexpr uint64_t kNowMs = fuzz::kSealTimeMs;  // when the harness opens seals

const RepairSeal& repair_seal() {
  static const RepairSeal seal(ClusterKey::from_hex(fuzz::kClusterKeyHex).value(), fuzz::kGroup);
  return seal;
}

void check_request(const wire::ReplicaRequest& request, const wire::Limits& limits) {
  const std::string bytes = wire::encode_request(request);
  uint64_t id = ~request.id;
  auto again = wire::decode_request(bytes, limits, &id);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(again.value() == request);
  FUZZ_CHECK(id == request.id);
  FUZZ_CHECK(wire::encode_request(again.value()) == bytes);
  // A repairer's seal opens to the request, only while it is fresh.
  const std::string sealed = repair_seal().seal(bytes, kNowMs);
  FUZZ_CHECK(RepairSeal::is_sealed(sealed));
  auto opened = repair_seal().open(sealed, kNowMs);
  FUZZ_CHECK(opened && *opened == bytes);
  FUZZ_CHECK(!repair_seal().open(sealed, kNowMs + kSealLifetimeMs + 1));
}

void check_reply(const wire::ReplicaReply& reply, const wire::Limits& limits) {
  const std::string bytes = wire::encode_reply(reply);
  auto again = wire::decode_reply(bytes, limits);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(again.value().id == reply.id);
  FUZZ_CHECK(again.value().status.code() == reply.status.code());
  FUZZ_CHECK(wire::encode_reply(again.value()) == bytes);
}

}  // namespace
}  // namespace palisade

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  const std::string_view bytes = fuzz::as_text(data, size);
  const wire::Limits limits;
  uint64_t id = 0;
  auto request = wire::decode_request(bytes, limits, &id);
  if (request.is_ok()) {
    FUZZ_CHECK(id == request.value().id);
    check_request(request.value(), limits);
  }
  auto reply = wire::decode_reply(bytes, limits);
  if (reply.is_ok()) check_reply(reply.value(), limits);
  // A sealed frame: what a replica opens before it decodes the request inside.
  if (RepairSeal::is_sealed(bytes)) {
    if (auto inner = repair_seal().open(bytes, kNowMs)) {
      auto sealed = wire::decode_request(*inner, limits);
      if (sealed.is_ok()) check_request(sealed.value(), limits);
    }
  }
  return 0;
}
