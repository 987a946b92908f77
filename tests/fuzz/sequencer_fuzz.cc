// Sequencers (palisade/sequencer.h, wire/sequencer.h): the text a lock holder
// hands to replicas and services. Read without a key (parse_sequencer), cut in
// parts, checked by a SequencerVerifier, admitted by a SequencerFence.
//
// Invariants: a text that splits joins back to itself (base64url has one text
// per byte string); a payload that decodes encodes to one that decodes the
// same; what the verifier accepts parses to the same fields; a parsed
// sequencer signed again by the fuzz group verifies to itself. Each line of
// the input, parsed and so signed, goes through one SequencerFence, whose floor
// of a lock is the highest token it admitted.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "auth/cluster_key.h"
#include "auth/sequencer_signer.h"
#include "palisade/sequencer.h"
#include "tests/fuzz/fuzz_support.h"
#include "wire/sequencer.h"

namespace palisade {
namespace {

using fuzz::kGroup;
constexpr size_t kMaxLines = 8;

const SequencerSigner& signer() {
  static const SequencerSigner signer(ClusterKey::from_hex(fuzz::kClusterKeyHex).value(), fuzz::kGroup);
  return signer;
}

const SequencerVerifier& verifier() {
  static const SequencerVerifier verifier = signer().verifier();
  return verifier;
}

void check_text(std::string_view text) {
  namespace format = sequencer_format;
  if (auto bytes = format::unbase64url(text)) FUZZ_CHECK(format::base64url(*bytes) == text);
  FUZZ_CHECK(format::unbase64url(format::base64url(text)) == std::string(text));
  if (auto key = format::public_key_bytes(text)) FUZZ_CHECK(format::public_key_text(*key) == text);

  auto parts = format::split(text);
  if (parts.is_ok()) {
    FUZZ_CHECK(parts.value().signature.size() == kSequencerSignatureBytes);
    FUZZ_CHECK(format::join(parts.value().payload, parts.value().signature) == text);
  }
  if (auto payload = format::decode_payload(text); payload.is_ok()) {
    auto again = format::decode_payload(format::encode_payload(payload.value()));
    FUZZ_CHECK(again.is_ok() && again.value() == payload.value());
  }
  auto parsed = parse_sequencer(text);
  FUZZ_CHECK(parsed.is_ok() == (parts.is_ok() && format::decode_payload(parts.value().payload).is_ok()));
  if (parsed.is_ok()) {
    const Sequencer& s = parsed.value();
    FUZZ_CHECK(!s.group.empty() && !s.lock.empty() && s.token != 0 && s.lock.size() <= 256);
    auto again = format::decode_payload(format::encode_payload(s));
    FUZZ_CHECK(again.is_ok() && again.value() == s);
  }
  auto verified = verifier().verify(text);
  if (verified.is_ok()) {
    FUZZ_CHECK(parsed.is_ok() && parsed.value() == verified.value());
    FUZZ_CHECK(verified.value().group == kGroup);
  }
}

}  // namespace
}  // namespace palisade

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade;
  const std::string_view input = fuzz::as_text(data, size);
  check_text(input);

  SequencerFence fence(verifier());
  std::map<std::string, uint64_t> floors;  // what the fence's floors must be
  std::string_view rest = input;
  for (size_t line = 0; line < kMaxLines && !rest.empty(); ++line) {
    const size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view text = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (line > 0) check_text(text);
    auto parsed = parse_sequencer(text);
    if (!parsed.is_ok()) continue;
    Sequencer s = parsed.value();
    s.group = kGroup;
    const std::string signed_text = signer().sign(s);
    auto verified = verifier().verify(signed_text);
    FUZZ_CHECK(verified.is_ok() && verified.value() == s);
    auto admitted = fence.admit(signed_text);
    auto floor = floors.find(s.lock);
    if (s.mode != LockMode::kExclusive) {
      FUZZ_CHECK(admitted.status().code() == Code::kBadSequencer);
    } else if (floor != floors.end() && s.token < floor->second) {
      FUZZ_CHECK(admitted.status().code() == Code::kFenced);
    } else {
      FUZZ_CHECK(admitted.is_ok() && admitted.value() == s);
      floors[s.lock] = s.token;
    }
    FUZZ_CHECK(fence.floor(s.lock) == (floors.count(s.lock) != 0 ? floors[s.lock] : 0));
  }
  return 0;
}
