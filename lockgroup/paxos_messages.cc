#include "lockgroup/paxos_messages.h"

#include <msgpack.hpp>

#include "wire/envelope.h"
#include "wire/field_reader.h"

namespace palisade::lockgroup {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;
using wire::FieldReader;
using wire::Need;
using wire::pack_bytes;
using wire::pack_text;

// Peer messages carry no request id (they are not request/reply pairs).
constexpr uint64_t kPeerId = 0;
constexpr uint64_t kMaxNodeId = 255;
// Lists of entries or slots: more than the 64 entries a client message may hold
// (a promise carries every accepted entry above the asked slot), yet bounded,
// since msgpack-c allocates a list's elements when it reads the list's header.
constexpr uint32_t kMaxListEntries = uint32_t{1} << 20;

constexpr std::string_view kPrepare = "prepare";
constexpr std::string_view kPromise = "promise";
constexpr std::string_view kAccept = "accept";
constexpr std::string_view kAccepted = "accepted";
constexpr std::string_view kCatchUpRequest = "catch_up_request";
constexpr std::string_view kCatchUp = "catch_up";
constexpr std::string_view kStepDown = "step_down";

// v, id, type, from, to, group, incarnation, serial.
constexpr uint32_t kCommonFields = 8;

void pack_entries(Packer& pk, std::string_view name, const std::vector<Entry>& entries) {
  pack_text(pk, name);
  pk.pack_array(static_cast<uint32_t>(entries.size()));
  for (const Entry& e : entries) {
    pk.pack_map(3);
    pack_text(pk, "slot");
    pk.pack_uint64(e.slot);
    pack_text(pk, "ballot");
    pk.pack_uint64(e.ballot);
    pack_text(pk, "value");
    pack_bytes(pk, e.value);
  }
}

void pack_u64(Packer& pk, std::string_view name, uint64_t v) {
  pack_text(pk, name);
  pk.pack_uint64(v);
}

void pack_bool(Packer& pk, std::string_view name, bool v) {
  pack_text(pk, name);
  pk.pack(v);
}

struct BodyEncoder {
  Packer& pk;
  const PeerMessage& m;

  void common(uint32_t body_fields, std::string_view type) const {
    wire::write_envelope(pk, kCommonFields + body_fields, kPeerId, type);
    pack_u64(pk, "from", m.from);
    pack_u64(pk, "to", m.to);
    pack_u64(pk, "group", m.group);
    pack_u64(pk, "incarnation", m.incarnation);
    pack_u64(pk, "serial", m.serial);
  }
  void operator()(const Prepare& b) const {
    common(3, kPrepare);
    pack_u64(pk, "ballot", b.ballot);
    pack_u64(pk, "from_slot", b.from_slot);
    pack_u64(pk, "seq", b.seq);
  }
  void operator()(const Promise& b) const {
    common(6, kPromise);
    pack_u64(pk, "ballot", b.ballot);
    pack_bool(pk, "ok", b.ok);
    pack_u64(pk, "promised", b.promised);
    pack_u64(pk, "seq", b.seq);
    pack_u64(pk, "snapshot_slot", b.snapshot_slot);
    pack_entries(pk, "accepted", b.accepted);
  }
  void operator()(const Accept& b) const {
    common(4, kAccept);
    pack_u64(pk, "ballot", b.ballot);
    pack_u64(pk, "seq", b.seq);
    pack_u64(pk, "chosen_through", b.chosen_through);
    pack_entries(pk, "entries", b.entries);
  }
  void operator()(const Accepted& b) const {
    common(5, kAccepted);
    pack_u64(pk, "ballot", b.ballot);
    pack_bool(pk, "ok", b.ok);
    pack_u64(pk, "promised", b.promised);
    pack_u64(pk, "seq", b.seq);
    pack_text(pk, "slots");
    pk.pack_array(static_cast<uint32_t>(b.slots.size()));
    for (Slot s : b.slots) pk.pack_uint64(s);
  }
  void operator()(const CatchUpRequest& b) const {
    common(1, kCatchUpRequest);
    pack_u64(pk, "from_slot", b.from_slot);
  }
  void operator()(const CatchUp& b) const {
    common(3, kCatchUp);
    pack_u64(pk, "snapshot_slot", b.snapshot_slot);
    pack_text(pk, "snapshot");
    pack_bytes(pk, b.snapshot);
    pack_entries(pk, "chosen", b.chosen);
  }
  void operator()(const StepDown& b) const {
    common(2, kStepDown);
    pack_u64(pk, "ballot", b.ballot);
    pack_u64(pk, "successor", b.successor);
  }
};

void read_node(FieldReader& r, std::string_view name, NodeId& out) {
  uint64_t v = 0;
  r.u64(name, v, Need::kRequired);
  if (!r.status().is_ok()) return;
  if (v == 0 || v > kMaxNodeId) {
    return r.fail(Code::kBadRequest, "field '" + std::string(name) + "' must be a node id 1.." +
                                         std::to_string(kMaxNodeId) + ", not " + std::to_string(v));
  }
  out = static_cast<NodeId>(v);
}

const msgpack::object* read_list(FieldReader& r, std::string_view name) {
  const msgpack::object* list = r.object(name, Need::kRequired);
  if (list != nullptr && list->type != msgpack::type::ARRAY) {
    r.fail(Code::kBadRequest, "field '" + std::string(name) + "' must be a list");
    return nullptr;
  }
  return list;
}

void read_entries(FieldReader& r, std::string_view name, size_t max_bytes, std::vector<Entry>& out) {
  const msgpack::object* list = read_list(r, name);
  if (list == nullptr) return;
  out.reserve(list->via.array.size);
  for (uint32_t i = 0; i < list->via.array.size; ++i) {
    const msgpack::object& item = list->via.array.ptr[i];
    std::string what = "entry " + std::to_string(i) + " of field '" + std::string(name) + "'";
    if (item.type != msgpack::type::MAP) return r.fail(Code::kBadRequest, what + " must be a map");
    FieldReader er(item, what);
    Entry& e = out.emplace_back();
    er.u64("slot", e.slot, Need::kRequired);
    er.u64("ballot", e.ballot, Need::kRequired);
    er.bytes("value", e.value, max_bytes, Need::kRequired);
    if (Status s = er.finish(); !s.is_ok()) return r.fail(s.code(), s.message());
  }
}

void read_slots(FieldReader& r, std::string_view name, std::vector<Slot>& out) {
  const msgpack::object* list = read_list(r, name);
  if (list == nullptr) return;
  out.reserve(list->via.array.size);
  for (uint32_t i = 0; i < list->via.array.size; ++i) {
    const msgpack::object& item = list->via.array.ptr[i];
    if (item.type != msgpack::type::POSITIVE_INTEGER) {
      return r.fail(Code::kBadRequest, "item " + std::to_string(i) + " of field '" + std::string(name) +
                                           "' must be a non-negative integer");
    }
    out.push_back(item.via.u64);
  }
}

Result<PeerBody> read_body(const std::string& type, FieldReader& r, size_t max_bytes) {
  if (type == kPrepare) {
    Prepare b;
    r.u64("ballot", b.ballot, Need::kRequired);
    r.u64("from_slot", b.from_slot, Need::kRequired);
    r.u64("seq", b.seq, Need::kRequired);
    return PeerBody{b};
  }
  if (type == kPromise) {
    Promise b;
    r.u64("ballot", b.ballot, Need::kRequired);
    r.boolean("ok", b.ok, Need::kRequired);
    r.u64("promised", b.promised, Need::kRequired);
    r.u64("seq", b.seq, Need::kRequired);
    r.u64("snapshot_slot", b.snapshot_slot, Need::kRequired);
    read_entries(r, "accepted", max_bytes, b.accepted);
    return PeerBody{std::move(b)};
  }
  if (type == kAccept) {
    Accept b;
    r.u64("ballot", b.ballot, Need::kRequired);
    r.u64("seq", b.seq, Need::kRequired);
    r.u64("chosen_through", b.chosen_through, Need::kRequired);
    read_entries(r, "entries", max_bytes, b.entries);
    return PeerBody{std::move(b)};
  }
  if (type == kAccepted) {
    Accepted b;
    r.u64("ballot", b.ballot, Need::kRequired);
    r.boolean("ok", b.ok, Need::kRequired);
    r.u64("promised", b.promised, Need::kRequired);
    r.u64("seq", b.seq, Need::kRequired);
    read_slots(r, "slots", b.slots);
    return PeerBody{std::move(b)};
  }
  if (type == kCatchUpRequest) {
    CatchUpRequest b;
    r.u64("from_slot", b.from_slot, Need::kRequired);
    return PeerBody{b};
  }
  if (type == kCatchUp) {
    CatchUp b;
    r.u64("snapshot_slot", b.snapshot_slot, Need::kRequired);
    r.bytes("snapshot", b.snapshot, max_bytes, Need::kRequired);
    read_entries(r, "chosen", max_bytes, b.chosen);
    return PeerBody{std::move(b)};
  }
  if (type == kStepDown) {
    StepDown b;
    r.u64("ballot", b.ballot, Need::kRequired);
    read_node(r, "successor", b.successor);
    return PeerBody{b};
  }
  return Status(Code::kUnknownType, "unknown peer message type '" + type + "'");
}

}  // namespace

std::string_view peer_type_name(const PeerBody& body) {
  constexpr std::string_view kNames[] = {kPrepare, kPromise, kAccept, kAccepted, kCatchUpRequest, kCatchUp, kStepDown};
  static_assert(std::size(kNames) == std::variant_size_v<PeerBody>);
  return kNames[body.index()];
}

std::string encode_peer(const PeerMessage& message) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  std::visit(BodyEncoder{pk, message}, message.body);
  return {buf.data(), buf.size()};
}

bool names_peer_type(std::string_view bytes, size_t max_bytes) {
  auto opened = wire::open_envelope(bytes, max_bytes, nullptr, kMaxListEntries);
  if (!opened.is_ok()) return false;
  const std::string& t = opened.value().type;
  return t == kPrepare || t == kPromise || t == kAccept || t == kAccepted || t == kCatchUpRequest || t == kCatchUp ||
         t == kStepDown;
}

Result<PeerMessage> decode_peer(std::string_view bytes, size_t max_bytes) {
  // A promise lists every entry the acceptor accepted since the asked slot.
  auto opened = wire::open_envelope(bytes, max_bytes, nullptr, kMaxListEntries);
  if (!opened.is_ok()) return opened.status();
  wire::Envelope& env = opened.value();
  FieldReader& r = *env.fields;
  const std::string& type = env.type;
  r.set_what("peer " + type + " message");
  auto body = read_body(type, r, max_bytes);
  if (!body.is_ok()) return body.status();
  PeerMessage m;
  read_node(r, "from", m.from);
  read_node(r, "to", m.to);
  r.u64("group", m.group, Need::kRequired);
  r.u64("incarnation", m.incarnation, Need::kRequired);
  r.u64("serial", m.serial, Need::kRequired);
  if (Status s = r.finish(); !s.is_ok()) return s;
  m.body = std::move(body).value();
  return m;
}

}  // namespace palisade::lockgroup
