#include "auth/derived_key.h"

#include <sodium.h>

#include <string>

#include "base/check.h"

namespace palisade {

static_assert(crypto_generichash_KEYBYTES == std::tuple_size_v<DerivedKey>);
static_assert(ClusterKey::kBytes >= crypto_generichash_KEYBYTES_MIN &&
              ClusterKey::kBytes <= crypto_generichash_KEYBYTES_MAX);

DerivedKey derive_key(const ClusterKey& cluster_key, std::string_view purpose, std::string_view group) {
  PALISADE_CHECK(sodium_init() >= 0);
  std::string input(purpose);
  input.push_back('\0');
  input.append(group);
  DerivedKey key{};
  crypto_generichash(key.data(), key.size(), reinterpret_cast<const unsigned char*>(input.data()), input.size(),
                     cluster_key.bytes().data(), cluster_key.bytes().size());
  return key;
}

void keyed_mac(const DerivedKey& key, std::initializer_list<std::string_view> parts, unsigned char* out,
               size_t out_bytes) {
  PALISADE_CHECK(out_bytes >= crypto_generichash_BYTES_MIN && out_bytes <= crypto_generichash_BYTES_MAX);
  crypto_generichash_state state;
  crypto_generichash_init(&state, key.data(), key.size(), out_bytes);
  for (std::string_view part : parts) {
    crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(part.data()), part.size());
  }
  crypto_generichash_final(&state, out, out_bytes);
}

}  // namespace palisade
