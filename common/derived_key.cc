#include "common/derived_key.h"

#include <sodium.h>

#include <string>

#include "common/check.h"

namespace palisade {

static_assert(crypto_generichash_KEYBYTES == std::tuple_size_v<DerivedKey>);
static_assert(SequencerKey::kBytes >= crypto_generichash_KEYBYTES_MIN &&
              SequencerKey::kBytes <= crypto_generichash_KEYBYTES_MAX);

DerivedKey derive_key(const SequencerKey& cluster_key, std::string_view purpose, std::string_view group) {
  PALISADE_CHECK(sodium_init() >= 0);
  std::string input(purpose);
  input.push_back('\0');
  input.append(group);
  DerivedKey key{};
  crypto_generichash(key.data(), key.size(), reinterpret_cast<const unsigned char*>(input.data()), input.size(),
                     cluster_key.bytes().data(), cluster_key.bytes().size());
  return key;
}

}  // namespace palisade
