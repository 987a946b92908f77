#include "wire/sequencer.h"

#include <exception>
#include <optional>

#include <msgpack.hpp>

#include "base/identity.h"

namespace palisade {
namespace {

constexpr std::string_view kPrefix = "ps2.";
// Matches the wire limit of lock names (wire::Limits::max_lock_bytes).
constexpr size_t kMaxLockBytes = 256;
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

Status bad(std::string message) { return Status(Code::kBadSequencer, std::move(message)); }

int base64url_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

std::string_view text_of(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

}  // namespace

namespace sequencer_format {

std::string base64url(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  uint32_t acc = 0;
  unsigned bits = 0;
  for (char c : bytes) {
    acc = (acc << 8) | static_cast<unsigned char>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
    acc &= (1u << bits) - 1;
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  return out;
}

std::optional<std::string> unbase64url(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  unsigned bits = 0;
  for (char c : text) {
    const int v = base64url_value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
    acc &= (1u << bits) - 1;
  }
  // Six bits left: a length of 4k + 1, which no byte string encodes to. Fewer
  // must be zero, or two texts would decode to the same bytes.
  if (bits > 4 || acc != 0) return std::nullopt;
  return out;
}

std::string encode_payload(const Sequencer& sequencer) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  auto text = [&](std::string_view t) {
    pk.pack_str(static_cast<uint32_t>(t.size()));
    pk.pack_str_body(t.data(), static_cast<uint32_t>(t.size()));
  };
  pk.pack_array(sequencer.identity.empty() ? 4 : 5);
  text(sequencer.group);
  text(sequencer.lock);
  text(mode_name(sequencer.mode));
  pk.pack_uint64(sequencer.token);
  if (!sequencer.identity.empty()) text(sequencer.identity);
  return std::string(buf.data(), buf.size());
}

std::string join(std::string_view payload, std::string_view signature) {
  return std::string(kPrefix) + base64url(payload) + "." + base64url(signature);
}

Result<Parts> split(std::string_view text) {
  if (text.size() > kMaxSequencerBytes) {
    return bad("sequencer of " + std::to_string(text.size()) + " bytes (limit " +
               std::to_string(kMaxSequencerBytes) + ")");
  }
  if (!text.starts_with(kPrefix)) return bad("not a sequencer: it does not start with \"ps2.\"");
  text.remove_prefix(kPrefix.size());
  size_t dot = text.find('.');
  if (dot == std::string_view::npos) return bad("not a sequencer: it has no signature part");
  auto payload = unbase64url(text.substr(0, dot));
  auto signature = unbase64url(text.substr(dot + 1));
  if (!payload || !signature) return bad("not a sequencer: a part is not base64url without padding");
  if (signature->size() != kSequencerSignatureBytes) return bad("not a sequencer: its signature has the wrong length");
  return Parts{std::move(*payload), std::move(*signature)};
}

Result<Sequencer> decode_payload(std::string_view payload) {
  msgpack::object_handle handle;
  try {
    // [group, lock, mode, token (, identity)]: one array of four or five scalars.
    msgpack::unpack_limit limit(/*array=*/5, /*map=*/0, /*str=*/kMaxSequencerBytes, /*bin=*/0, /*ext=*/0,
                                /*depth=*/2);
    size_t offset = 0;
    handle = msgpack::unpack(payload.data(), payload.size(), offset, nullptr, nullptr, limit);
    if (offset != payload.size()) return bad("not a sequencer: trailing bytes after its payload");
  } catch (const std::exception&) {
    return bad("not a sequencer: its payload is not MessagePack [group, lock, mode, token]");
  }
  const msgpack::object& o = handle.get();
  if (o.type != msgpack::type::ARRAY || (o.via.array.size != 4 && o.via.array.size != 5)) {
    return bad("not a sequencer: its payload is not a list [group, lock, mode, token] or [group, lock, mode, token, "
               "identity]");
  }
  const msgpack::object* f = o.via.array.ptr;
  if (f[0].type != msgpack::type::STR || f[1].type != msgpack::type::STR || f[2].type != msgpack::type::STR ||
      f[3].type != msgpack::type::POSITIVE_INTEGER) {
    return bad("not a sequencer: its payload fields have the wrong types");
  }
  Sequencer s;
  s.group = std::string(text_of(f[0]));
  s.lock = std::string(text_of(f[1]));
  auto mode = mode_from_name(text_of(f[2]));
  s.token = f[3].via.u64;
  if (!mode) return bad("not a sequencer: unknown lock mode");
  s.mode = *mode;
  if (s.group.empty() || s.lock.empty() || s.token == 0) {
    return bad("not a sequencer: empty group or lock name, or token 0");
  }
  if (s.lock.size() > kMaxLockBytes) return bad("not a sequencer: lock name over 256 bytes");
  if (o.via.array.size == 5) {
    // Present only when there is one, so that every grant has one payload.
    if (f[4].type != msgpack::type::STR || !is_identity_name(text_of(f[4]))) {
      return bad("not a sequencer: its fifth field is not an identity name");
    }
    s.identity = std::string(text_of(f[4]));
  }
  return s;
}

constexpr std::string_view kPublicKeyPrefix = "psk1.";

std::string public_key_text(std::string_view bytes) { return std::string(kPublicKeyPrefix) + base64url(bytes); }

std::optional<std::string> public_key_bytes(std::string_view text) {
  if (!text.starts_with(kPublicKeyPrefix)) return std::nullopt;
  return unbase64url(text.substr(kPublicKeyPrefix.size()));
}

}  // namespace sequencer_format

Result<Sequencer> parse_sequencer(std::string_view text) {
  auto parts = sequencer_format::split(text);
  if (!parts.is_ok()) return parts.status();
  return sequencer_format::decode_payload(parts.value().payload);
}

}  // namespace palisade
