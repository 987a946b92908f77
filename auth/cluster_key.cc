#include "auth/cluster_key.h"

#include <sodium.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/check.h"

namespace palisade {
namespace {

// libsodium must be initialised once before use; a function-local static makes
// that thread-safe.
void ensure_sodium() {
  static const bool initialised = sodium_init() >= 0;
  PALISADE_CHECK(initialised);
}

}  // namespace

ClusterKey ClusterKey::generate() {
  ensure_sodium();
  ClusterKey key;
  randombytes_buf(key.bytes_.data(), key.bytes_.size());
  return key;
}

Result<ClusterKey> ClusterKey::from_hex(std::string_view hex) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!hex.empty() && space(hex.front())) hex.remove_prefix(1);
  while (!hex.empty() && space(hex.back())) hex.remove_suffix(1);
  if (hex.size() != 2 * kBytes) {
    return Status(Code::kBadRequest, "a cluster key is " + std::to_string(2 * kBytes) + " hex digits, not " +
                                         std::to_string(hex.size()) + " characters");
  }
  // libsodium's decoder, which takes as long whatever the digits: this is a secret.
  ensure_sodium();
  ClusterKey key;
  size_t decoded = 0;
  const char* end = nullptr;
  if (sodium_hex2bin(key.bytes_.data(), key.bytes_.size(), hex.data(), hex.size(), nullptr, &decoded, &end) != 0 ||
      decoded != kBytes || end != hex.data() + hex.size()) {
    return Status(Code::kBadRequest, "a cluster key holds only hex digits");
  }
  return key;
}

Result<ClusterKey> ClusterKey::load(const std::string& path) {
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

std::string ClusterKey::to_hex() const {
  std::string out(2 * kBytes + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), bytes_.data(), bytes_.size());
  out.resize(2 * kBytes);
  return out;
}

}  // namespace palisade
