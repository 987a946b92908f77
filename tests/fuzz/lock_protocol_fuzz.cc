// The lock protocol's decoders (wire/lock_protocol.h): a request as any client
// sends it to palisade-lockd, a reply as a client reads it. What decodes must
// encode to bytes that decode to the same message and encode the same again.
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "wire/lock_protocol.h"

namespace palisade {
namespace {

// As the lock client reads replies (client/lock_client.cc).
constexpr size_t kMaxReplyBytes = size_t{16} << 20;

void check_request(const wire::LockRequest& request, const wire::Limits& limits) {
  const std::string bytes = wire::encode_lock_request(request);
  uint64_t id = ~request.id;
  auto again = wire::decode_lock_request(bytes, limits, &id);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(again.value() == request);
  FUZZ_CHECK(id == request.id);
  FUZZ_CHECK(wire::encode_lock_request(again.value()) == bytes);
}

void check_reply(const wire::LockReply& reply) {
  const std::string bytes = wire::encode_lock_reply(reply);
  auto again = wire::decode_lock_reply(bytes, kMaxReplyBytes);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(again.value().id == reply.id);
  FUZZ_CHECK(again.value().status.code() == reply.status.code());
  FUZZ_CHECK(again.value().locks == reply.locks);
  FUZZ_CHECK(wire::encode_lock_reply(again.value()) == bytes);
}

}  // namespace
}  // namespace palisade

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  const std::string_view bytes = fuzz::as_text(data, size);
  const wire::Limits limits;
  uint64_t id = 0;
  auto request = wire::decode_lock_request(bytes, limits, &id);
  if (request.is_ok()) {
    FUZZ_CHECK(id == request.value().id);
    check_request(request.value(), limits);
  }
  auto reply = wire::decode_lock_reply(bytes, kMaxReplyBytes);
  if (reply.is_ok()) check_reply(reply.value());
  return 0;
}
