// The envelope every palisade message shares: one MessagePack map with the
// protocol version "v", the request id "id" and the message "type" (docs/protocol.md).
// Internal to the codecs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <msgpack.hpp>

#include "wire/field_reader.h"
#include "palisade/status.h"

namespace palisade::wire {

constexpr uint64_t kProtocolVersion = 1;

// Size limits that decoding enforces. Over a limit is TooLarge, never a crash.
struct Limits {
  size_t max_key_bytes = 511;  // LMDB's largest key (replica/lmdb_store.h)
  size_t max_value_bytes = size_t{1} << 20;
  size_t max_lock_bytes = 256;
  // Versions a replica keeps per key at most: one committed, the rest pending.
  static constexpr size_t kMaxVersionsPerKey = 5;
  // A sequencer (wire/sequencer.h kMaxSequencerBytes, checked there).
  static constexpr size_t kMaxSequencerBytes = 1024;
  // The commits a replica write may carry (wire::WriteRequest::commits).
  static constexpr size_t kMaxCarriedCommitBytes = 16 * 1024;
  // Whole request: the largest legal payload plus room for the other fields.
  size_t max_message_bytes() const {
    return max_key_bytes + max_value_bytes + max_lock_bytes + kMaxSequencerBytes + kMaxCarriedCommitBytes + 1024;
  }
  // A reply that lists keys (scan, read_many) stops before the key that would
  // bring it past this size, unless that key is its first.
  static constexpr size_t kListReplyBytes = size_t{1} << 20;
  // Whole reply: a read returns every version of a key, each with its
  // sequencer; a list holds up to kListReplyBytes, then one key more.
  size_t max_reply_bytes() const {
    return kMaxVersionsPerKey * (max_value_bytes + 2 * max_lock_bytes + kMaxSequencerBytes + 128) + kListReplyBytes +
           4096;
  }
};

// A decoded message whose envelope was read; `fields` reads the rest of the map
// (it points into `handle`, which keeps the decoded data alive).
struct Envelope {
  msgpack::object_handle handle;
  uint64_t id = 0;
  std::string type;
  std::optional<FieldReader> fields;
};

// Unpacks exactly one map of at most `max_bytes`, with at most `max_list` items
// in any list and 64 fields in any map (trailing bytes are Malformed), and reads
// its envelope. On failure *id_out holds the id when it could be read, else 0.
Result<Envelope> open_envelope(std::string_view bytes, size_t max_bytes, uint64_t* id_out, size_t max_list = 64);

// Writes the envelope as the first three entries of a map of `field_count` entries in all.
void write_envelope(msgpack::packer<msgpack::sbuffer>& pk, uint32_t field_count, uint64_t id,
                    std::string_view type);

// A request's envelope: write_envelope's entries, then "cluster" (bin, the
// 16 bytes of the cluster id) when `cluster` is not empty; `field_count`
// counts the request's other fields, the envelope's three included.
void write_request_envelope(msgpack::packer<msgpack::sbuffer>& pk, uint32_t field_count, uint64_t id,
                            std::string_view cluster, std::string_view type);
// Reads what write_request_envelope wrote as "cluster" into `out` (left empty
// when absent); BadRequest unless it is 16 bytes.
void read_request_cluster(FieldReader& r, std::string& out);

void pack_bytes(msgpack::packer<msgpack::sbuffer>& pk, std::string_view bytes);
// A reply's status: "code" (its wire name), and "message" when not empty.
// Two fields, or one without a message.
void pack_status(msgpack::packer<msgpack::sbuffer>& pk, const Status& status);

// Reads what pack_status wrote.
struct StatusFields {
  std::string code, message;
  void read(FieldReader& r, size_t max_message_bytes);
  // Ok with the status in *out, or BadRequest for an unknown code.
  Status parse(Status* out) const;
};
void pack_text(msgpack::packer<msgpack::sbuffer>& pk, std::string_view text);
void pack_timestamp(msgpack::packer<msgpack::sbuffer>& pk, const FencedTimestamp& ts);

}  // namespace palisade::wire
