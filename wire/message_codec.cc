#include "wire/message_codec.h"

namespace palisade::wire {

void write_reply_head(msgpack::packer<msgpack::sbuffer>& pk, uint32_t field_count, uint64_t id, const Status& status) {
  write_envelope(pk, field_count, id, kReplyType);
  pack_status(pk, status);
}

}  // namespace palisade::wire
