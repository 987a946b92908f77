#include "common/sequencer.h"

#include <sodium.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>

#include <msgpack.hpp>

#include "common/check.h"

namespace palisade {
namespace {

static_assert(SequencerKey::kBytes == crypto_auth_KEYBYTES);

constexpr std::string_view kPrefix = "ps1.";
constexpr int kBase64Variant = sodium_base64_VARIANT_URLSAFE_NO_PADDING;
// Matches the wire limit of lock names (wire::Limits::max_lock_bytes).
constexpr size_t kMaxLockBytes = 256;

// libsodium must be initialised once before use; a function-local static makes
// that thread-safe.
void ensure_sodium() {
  static const bool initialised = sodium_init() >= 0;
  PALISADE_CHECK(initialised);
}

Status bad(std::string message) { return Status(Code::kBadSequencer, std::move(message)); }

std::string base64(const unsigned char* bytes, size_t size) {
  std::string out(sodium_base64_ENCODED_LEN(size, kBase64Variant), '\0');
  sodium_bin2base64(out.data(), out.size(), bytes, size, kBase64Variant);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

// Decodes all of `text`; nullopt when any of it is not base64url without padding.
std::optional<std::string> unbase64(std::string_view text) {
  std::string out(text.size() * 3 / 4 + 1, '\0');
  size_t size = 0;
  const char* end = nullptr;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(), text.size(),
                        /*ignore=*/nullptr, &size, &end, kBase64Variant) != 0 ||
      end != text.data() + text.size()) {
    return std::nullopt;
  }
  out.resize(size);
  return out;
}

std::string mac_of(std::string_view payload, const SequencerKey& key) {
  std::string mac(crypto_auth_BYTES, '\0');
  crypto_auth(reinterpret_cast<unsigned char*>(mac.data()), reinterpret_cast<const unsigned char*>(payload.data()),
              payload.size(), key.bytes().data());
  return mac;
}

std::string_view text_of(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

// The payload and MAC of a sequencer text, decoded, or why it is not one.
struct Parts {
  std::string payload;
  std::string mac;
};

Result<Parts> split(std::string_view text) {
  if (text.size() > kMaxSequencerBytes) {
    return bad("sequencer of " + std::to_string(text.size()) + " bytes (limit " +
               std::to_string(kMaxSequencerBytes) + ")");
  }
  if (!text.starts_with(kPrefix)) return bad("not a sequencer: it does not start with \"ps1.\"");
  text.remove_prefix(kPrefix.size());
  size_t dot = text.find('.');
  if (dot == std::string_view::npos) return bad("not a sequencer: it has no MAC part");
  auto payload = unbase64(text.substr(0, dot));
  auto mac = unbase64(text.substr(dot + 1));
  if (!payload || !mac) return bad("not a sequencer: a part is not base64url without padding");
  if (mac->size() != crypto_auth_BYTES) return bad("not a sequencer: its MAC has the wrong length");
  return Parts{std::move(*payload), std::move(*mac)};
}

Result<Sequencer> decode_payload(std::string_view payload) {
  msgpack::object_handle handle;
  try {
    // [group, lock, mode, token]: one array of four scalars.
    msgpack::unpack_limit limit(/*array=*/4, /*map=*/0, /*str=*/kMaxSequencerBytes, /*bin=*/0, /*ext=*/0,
                                /*depth=*/2);
    size_t offset = 0;
    handle = msgpack::unpack(payload.data(), payload.size(), offset, nullptr, nullptr, limit);
    if (offset != payload.size()) return bad("not a sequencer: trailing bytes after its payload");
  } catch (const std::exception&) {
    return bad("not a sequencer: its payload is not MessagePack [group, lock, mode, token]");
  }
  const msgpack::object& o = handle.get();
  if (o.type != msgpack::type::ARRAY || o.via.array.size != 4) {
    return bad("not a sequencer: its payload is not a list [group, lock, mode, token]");
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
  return s;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

SequencerKey SequencerKey::generate() {
  ensure_sodium();
  SequencerKey key;
  crypto_auth_keygen(key.bytes_.data());
  return key;
}

Result<SequencerKey> SequencerKey::from_hex(std::string_view hex) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!hex.empty() && space(hex.front())) hex.remove_prefix(1);
  while (!hex.empty() && space(hex.back())) hex.remove_suffix(1);
  if (hex.size() != 2 * kBytes) {
    return Status(Code::kBadRequest, "a sequencer key is " + std::to_string(2 * kBytes) + " hex digits, not " +
                                         std::to_string(hex.size()) + " characters");
  }
  SequencerKey key;
  for (size_t i = 0; i < kBytes; ++i) {
    int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Status(Code::kBadRequest, "a sequencer key holds only hex digits");
    key.bytes_[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return key;
}

Result<SequencerKey> SequencerKey::load(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status(Code::kStorageError, "cannot read key file " + path + ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kStorageError, "cannot read key file " + path + ": " + std::strerror(errno));
  // A key file is 64 hex digits and a newline; more is not a key file.
  std::string text(4096, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return Status(Code::kStorageError, "cannot read key file " + path + ": " + std::strerror(errno));
  text.resize(static_cast<size_t>(in.gcount()));
  auto key = from_hex(text);
  if (!key.is_ok()) return Status(Code::kBadRequest, "key file " + path + ": " + key.status().message());
  return key;
}

std::string SequencerKey::to_hex() const {
  std::string out(2 * kBytes + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), bytes_.data(), bytes_.size());
  out.resize(2 * kBytes);
  return out;
}

std::string sign_sequencer(const Sequencer& sequencer, const SequencerKey& key) {
  ensure_sodium();
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  auto text = [&](std::string_view t) {
    pk.pack_str(static_cast<uint32_t>(t.size()));
    pk.pack_str_body(t.data(), static_cast<uint32_t>(t.size()));
  };
  pk.pack_array(4);
  text(sequencer.group);
  text(sequencer.lock);
  text(mode_name(sequencer.mode));
  pk.pack_uint64(sequencer.token);
  std::string_view payload(buf.data(), buf.size());
  std::string mac = mac_of(payload, key);
  return std::string(kPrefix) + base64(reinterpret_cast<const unsigned char*>(payload.data()), payload.size()) +
         "." + base64(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
}

Result<Sequencer> parse_sequencer(std::string_view text) {
  ensure_sodium();
  auto parts = split(text);
  if (!parts.is_ok()) return parts.status();
  return decode_payload(parts.value().payload);
}

Result<Sequencer> verify_sequencer(std::string_view text, const SequencerKey& key, std::string_view group) {
  ensure_sodium();
  auto parts = split(text);
  if (!parts.is_ok()) return parts.status();
  const Parts& p = parts.value();
  // Constant time: the MAC is checked before anything in the payload is trusted.
  if (crypto_auth_verify(reinterpret_cast<const unsigned char*>(p.mac.data()),
                         reinterpret_cast<const unsigned char*>(p.payload.data()), p.payload.size(),
                         key.bytes().data()) != 0) {
    return bad("sequencer failed its MAC check: forged, altered, or signed with another cluster key");
  }
  auto sequencer = decode_payload(p.payload);
  if (!sequencer.is_ok()) return sequencer.status();
  if (sequencer.value().group != group) {
    return bad("sequencer names lock group '" + sequencer.value().group + "', this is group '" + std::string(group) +
               "'");
  }
  return sequencer;
}

}  // namespace palisade
