#include "auth/sequencer_key.h"

#include <sodium.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/check.h"

namespace palisade {
namespace {

static_assert(SequencerKey::kBytes == crypto_auth_KEYBYTES);
static_assert(kSequencerMacBytes == crypto_auth_BYTES);

// libsodium must be initialised once before use; a function-local static makes
// that thread-safe.
void ensure_sodium() {
  static const bool initialised = sodium_init() >= 0;
  PALISADE_CHECK(initialised);
}

Status bad(std::string message) { return Status(Code::kBadSequencer, std::move(message)); }

std::string mac_of(std::string_view payload, const SequencerKey& key) {
  std::string mac(crypto_auth_BYTES, '\0');
  crypto_auth(reinterpret_cast<unsigned char*>(mac.data()), reinterpret_cast<const unsigned char*>(payload.data()),
              payload.size(), key.bytes().data());
  return mac;
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
  const std::string payload = sequencer_format::encode_payload(sequencer);
  return sequencer_format::join(payload, mac_of(payload, key));
}

Result<Sequencer> verify_sequencer(std::string_view text, const SequencerKey& key, std::string_view group) {
  ensure_sodium();
  auto parts = sequencer_format::split(text);
  if (!parts.is_ok()) return parts.status();
  const sequencer_format::Parts& p = parts.value();
  // Constant time: the MAC is checked before anything in the payload is trusted.
  if (crypto_auth_verify(reinterpret_cast<const unsigned char*>(p.mac.data()),
                         reinterpret_cast<const unsigned char*>(p.payload.data()), p.payload.size(),
                         key.bytes().data()) != 0) {
    return bad("sequencer failed its MAC check: forged, altered, or signed with another cluster key");
  }
  auto sequencer = sequencer_format::decode_payload(p.payload);
  if (!sequencer.is_ok()) return sequencer.status();
  if (sequencer.value().group != group) {
    return bad("sequencer names lock group '" + sequencer.value().group + "', this is group '" + std::string(group) +
               "'");
  }
  return sequencer;
}

}  // namespace palisade
