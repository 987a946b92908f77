#include "base/cluster_id.h"

#include <sys/random.h>

#include "base/check.h"

namespace palisade {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> cluster_id_from_hex(std::string_view hex) {
  if (hex.size() != 2 * kClusterIdBytes) return std::nullopt;
  std::string id(kClusterIdBytes, '\0');
  for (size_t i = 0; i < kClusterIdBytes; ++i) {
    const int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    id[i] = static_cast<char>(hi * 16 + lo);
  }
  return id;
}

std::string cluster_id_hex(std::string_view id) {
  if (id.empty()) return "none";
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : id) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::string new_cluster_id() {
  std::string id(kClusterIdBytes, '\0');
  // getrandom(2) without flags blocks only until the kernel's pool is seeded;
  // a request of up to 256 bytes is then never cut short.
  PALISADE_CHECK(::getrandom(id.data(), id.size(), 0) == static_cast<ssize_t>(id.size()));
  return id;
}

Status check_cluster_id(std::string_view own, std::string_view expected) {
  if (expected.empty() || expected == own) return Status::ok();
  return Status(Code::kWrongCluster, "this daemon belongs to cluster " + cluster_id_hex(own) +
                                         ", the request is for cluster " + cluster_id_hex(expected));
}

}  // namespace palisade
