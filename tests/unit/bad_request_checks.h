// The bad input every request decoder must refuse, each kind with its own Code
// and without crashing (docs/protocol.md, "Errors"): envelope problems, bytes
// that are not one MessagePack map, sizes over the limits, random garbage and
// mutated messages. The replica and lock-group codec tests run these same
// tables and checks against their own decoders, and add the cases only their
// messages have.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "wire/envelope.h"
#include "palisade/status.h"
#include "tests/unit/msgpack_builder.h"

namespace palisade::test {

// What *id_out holds before a decoder is called.
constexpr uint64_t kGarbageId = 0xdead'beef;

// What a request decoder said: its code, the id it left in *id_out, its message.
struct Decoded {
  Code code;
  uint64_t id_out;
  std::string message;
};
using RequestDecoder = std::function<Decoded(std::string_view bytes, const wire::Limits& limits)>;

// What `decode(bytes, limits, &id)`, a codec's request decoder, says.
template <typename Decode>
Decoded decoded_by(Decode decode, std::string_view bytes, const wire::Limits& limits) {
  uint64_t id = kGarbageId;
  auto r = decode(bytes, limits, &id);
  return {r.code(), id, r.status().message()};
}
// A reply decoder of the same codec, which must refuse what is not a reply.
using ReplyDecoder = std::function<Status(std::string_view bytes)>;

// A hand-built request and what decoding it must say.
struct WireCase {
  std::string name;
  Fields fields;
  Code code;
  uint64_t id_out;
};

// Envelope problems ("v", "id", "type", duplicate and unknown fields), made
// from `valid`, the fields of a valid request whose id is `id`; with `valid`
// itself and the largest id as controls.
std::vector<WireCase> envelope_cases(const Fields& valid, uint64_t id);

// Body fields that are wrong (types, missing, unknown, out of range): each one
// BadRequest with the request's id.
struct NamedFields {
  std::string name;
  Fields fields;
};
std::vector<WireCase> bad_request_cases(uint64_t id, const std::vector<NamedFields>& cases);

// Decodes each case with default limits, in a section of its own: its code,
// its id_out, and a message with every error.
void check_cases(const std::vector<WireCase>& cases, const RequestDecoder& decode);

// Malformed, with id_out 0 and a message: bytes that are not MessagePack
// ("\xc1", text, nothing), and values that are not a map or a map whose field
// name is not text.
void check_not_messagepack_is_malformed(const RequestDecoder& decode);
void check_not_a_map_is_malformed(const RequestDecoder& decode);
// Malformed, with id_out 0: every proper prefix of `valid`, and `valid` with
// bytes after it.
void check_every_truncation_is_malformed(const std::string& valid, const RequestDecoder& decode);
void check_trailing_bytes_are_malformed(const std::string& valid, const RequestDecoder& decode);

// TooLarge with id_out 0 for one byte over the whole-message limit (small
// limits, every field within its own), while a message at the limit is only
// BadRequest for its unknown padding field; and TooLarge far over the default
// limit.
void check_whole_message_limit(const Fields& valid, const RequestDecoder& decode);
// TooLarge for lists and maps nested deeper than any message's, in `field` of
// `valid` and bare; a list nested within the limit is just BadRequest.
void check_nesting_limit(const Fields& valid, const std::string& field, const RequestDecoder& decode);
// Maps, lists, strings and binaries declaring sizes far beyond the bytes there
// are: TooLarge over the entry-count limits, Malformed within them, with id_out
// 0, and the same from the reply decoder; also inside `field` of `valid`.
void check_huge_declared_sizes(const Fields& valid, const std::string& field, const RequestDecoder& decode,
                               const ReplyDecoder& decode_reply);

// The codes a decoder gives bad input.
bool is_decode_error(Code code);
// 50,000 random byte strings from `seed`, half of them starting like a map:
// every one refused with a decode error and a message, by both decoders.
void check_random_garbage_is_refused(uint64_t seed, const RequestDecoder& decode, const ReplyDecoder& decode_reply);
// Calls `check` with `count` copies of messages from `valid`, each with one to
// three bytes changed at random from `seed`.
void for_each_mutation(uint64_t seed, const std::vector<std::string>& valid, int count,
                       const std::function<void(const std::string& bytes)>& check);

}  // namespace palisade::test
