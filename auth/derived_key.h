// Keys for one purpose, derived from the cluster key and the lock group's id:
// a MAC made for one purpose (peer messages, repairers' seals, replica
// receipts) never verifies as another's, nor in another group, and none of
// them is the cluster key itself. The lock group's Ed25519 sequencer key is made
// from one too (auth/sequencer_signer.h).
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string_view>

#include "auth/cluster_key.h"

namespace palisade {

using DerivedKey = std::array<unsigned char, 32>;

// Keyed BLAKE2b-256 (libsodium crypto_generichash) of purpose, a zero byte and
// the group, under the cluster key.
DerivedKey derive_key(const ClusterKey& cluster_key, std::string_view purpose, std::string_view group);

// The MAC of `parts`, one after the other: keyed BLAKE2b with an output of
// `out_bytes` (16 to 64) into `out`.
void keyed_mac(const DerivedKey& key, std::initializer_list<std::string_view> parts, unsigned char* out,
               size_t out_bytes);

}  // namespace palisade
