// The envelope every palisade message opens with (wire/envelope.h): the
// MessagePack unpacking under its limits, the version, id and type, then what
// every request and reply reads next (the cluster id, the status fields). An
// envelope that opens must write back as one that opens to the same id and
// type.
#include <cstdint>
#include <string>

#include <msgpack.hpp>

#include "base/cluster_id.h"
#include "tests/fuzz/fuzz_support.h"
#include "wire/envelope.h"

namespace palisade::wire {
namespace {

std::string write_back(const Envelope& env, std::string_view cluster) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  write_request_envelope(pk, 3, env.id, cluster, env.type);
  return {buf.data(), buf.size()};
}

}  // namespace
}  // namespace palisade::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  using namespace palisade::wire;
  const std::string_view bytes = fuzz::as_text(data, size);
  const size_t max_bytes = Limits{}.max_message_bytes();
  uint64_t id = ~uint64_t{0};
  auto opened = open_envelope(bytes, max_bytes, &id);
  if (!opened.is_ok()) return 0;
  Envelope& env = opened.value();
  FUZZ_CHECK(id == env.id);
  FUZZ_CHECK(env.fields.has_value());

  // What decoders read next; none of it may fail but through the status.
  FieldReader& r = *env.fields;
  std::string cluster;
  read_request_cluster(r, cluster);
  FUZZ_CHECK(!r.status().is_ok() || cluster.empty() || cluster.size() == kClusterIdBytes);
  StatusFields status;
  status.read(r, Limits{}.max_value_bytes);
  Status parsed;
  if (r.status().is_ok()) (void)status.parse(&parsed);
  (void)r.finish();

  for (std::string_view with : {std::string_view(), std::string_view(cluster)}) {
    if (!with.empty() && with.size() != kClusterIdBytes) continue;
    const std::string again = write_back(env, with);
    uint64_t again_id = ~env.id;
    auto reopened = open_envelope(again, max_bytes, &again_id);
    FUZZ_CHECK(reopened.is_ok());
    FUZZ_CHECK(reopened.value().id == env.id && again_id == env.id);
    FUZZ_CHECK(reopened.value().type == env.type);
    std::string cluster_again;
    read_request_cluster(*reopened.value().fields, cluster_again);
    FUZZ_CHECK(cluster_again == with);
    FUZZ_CHECK(reopened.value().fields->finish().is_ok());
  }
  return 0;
}
