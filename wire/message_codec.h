// The steps every request/reply codec takes, whatever its messages: each
// message packed into a buffer of its own, requests packed by visiting their
// body, replies headed by their envelope and status; decoding opens the
// envelope, reads the fields and refuses any field left unread. The codecs
// (wire/lock_protocol.cc, wire/replica_protocol.cc) supply only what their
// messages hold. Internal to the codecs.
#pragma once

#include <cstdint>
#include <msgpack.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "wire/envelope.h"
#include "wire/field_reader.h"
#include "palisade/status.h"

namespace palisade::wire {

// The type of every reply.
inline constexpr std::string_view kReplyType = "reply";

// The bytes that `write(pk)` packs.
template <typename Write>
std::string encode_message(Write&& write) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  write(pk);
  return {buf.data(), buf.size()};
}

// What each codec's request encoder derives from: where it packs, and the
// envelope and "cluster" that head a map of `field_count` other fields.
struct RequestEncoderBase {
  msgpack::packer<msgpack::sbuffer>& pk;
  uint64_t id;
  std::string_view cluster;

  void head(uint32_t field_count, std::string_view type) const {
    write_request_envelope(pk, field_count, id, cluster, type);
  }
};

// A request (an id, a variant body and the cluster it is for), packed by
// `Encoder{pk, id, cluster}` (a RequestEncoderBase), which has an operator()
// for each type of body.
template <typename Encoder, typename Request>
std::string encode_request_with(const Request& request) {
  return encode_message([&](msgpack::packer<msgpack::sbuffer>& pk) {
    std::visit(Encoder{pk, request.id, request.cluster}, request.body);
  });
}

// A reply's envelope and status: the first fields of a map of `field_count` in all.
void write_reply_head(msgpack::packer<msgpack::sbuffer>& pk, uint32_t field_count, uint64_t id, const Status& status);

// Decodes a request of at most `max_bytes`: the envelope and its cluster
// (read_request_cluster), then the body with
// `read_body(type, fields, body)` (a Status; UnknownType for a type it does not
// know), then BadRequest for any field it did not read. On failure *id_out
// holds the request's id when it could be read, else 0.
template <typename Request, typename ReadBody>
Result<Request> decode_request_with(std::string_view bytes, size_t max_bytes, uint64_t* id_out, ReadBody read_body) {
  auto opened = open_envelope(bytes, max_bytes, id_out);
  if (!opened.is_ok()) return opened.status();
  Envelope& env = opened.value();
  FieldReader& r = *env.fields;
  // Built in place: moving a request into a Result trips GCC 12's
  // -Wmaybe-uninitialized (a false positive on the variant's alternatives).
  Result<Request> request{Request{}};
  request.value().id = env.id;
  read_request_cluster(r, request.value().cluster);
  if (Status s = read_body(env.type, r, request.value().body); !s.is_ok()) return s;
  if (Status s = r.finish(); !s.is_ok()) return s;
  return request;
}

// How much of a reply open_envelope may unpack, and the longest status message.
struct ReplyLimits {
  size_t max_bytes = 0;
  size_t max_list = 64;
  size_t max_message_bytes = 0;
};

// Decodes a reply: the envelope (UnknownType for a message that is not a
// reply) and the status fields, then the rest with `read_fields(fields,
// reply)`, then BadRequest for any field it did not read; then `check(reply)`
// judges what needs every field read (a Status), and last the status code is
// parsed into reply.status.
template <typename Reply, typename ReadFields, typename Check>
Result<Reply> decode_reply_with(std::string_view bytes, const ReplyLimits& limits, ReadFields read_fields,
                                Check check) {
  auto opened = open_envelope(bytes, limits.max_bytes, nullptr, limits.max_list);
  if (!opened.is_ok()) return opened.status();
  Envelope& env = opened.value();
  if (env.type != kReplyType) return Status(Code::kUnknownType, "expected a reply, got '" + env.type + "'");
  FieldReader& r = *env.fields;
  Reply reply;
  reply.id = env.id;
  StatusFields status;
  status.read(r, limits.max_message_bytes);
  read_fields(r, reply);
  if (Status s = r.finish(); !s.is_ok()) return s;
  if (Status s = check(reply); !s.is_ok()) return s;
  if (Status s = status.parse(&reply.status); !s.is_ok()) return s;
  return reply;
}

template <typename Reply, typename ReadFields>
Result<Reply> decode_reply_with(std::string_view bytes, const ReplyLimits& limits, ReadFields read_fields) {
  return decode_reply_with<Reply>(bytes, limits, read_fields, [](const Reply&) { return Status::ok(); });
}

}  // namespace palisade::wire
