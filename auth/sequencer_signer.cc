#include "auth/sequencer_signer.h"

#include <sodium.h>

#include "auth/derived_key.h"
#include "base/check.h"
#include "wire/sequencer.h"

namespace palisade {

static_assert(crypto_sign_SEEDBYTES == std::tuple_size_v<DerivedKey>);
static_assert(crypto_sign_SECRETKEYBYTES == 64 && crypto_sign_PUBLICKEYBYTES == SequencerVerifier::kPublicKeyBytes);
static_assert(crypto_sign_BYTES == kSequencerSignatureBytes);

SequencerSigner::SequencerSigner(const ClusterKey& cluster_key, std::string_view group) : group_(group) {
  DerivedKey seed = derive_key(cluster_key, "sequencer-ed25519", group);
  PALISADE_CHECK(crypto_sign_seed_keypair(public_.data(), secret_.data(), seed.data()) == 0);
  sodium_memzero(seed.data(), seed.size());
}

SequencerSigner::~SequencerSigner() { sodium_memzero(secret_.data(), secret_.size()); }

std::string SequencerSigner::sign(const Sequencer& sequencer) const {
  const std::string payload = sequencer_format::encode_payload(sequencer);
  return sequencer_format::join(payload, signature_of(payload));
}

std::string SequencerSigner::signature_of(std::string_view message) const {
  std::string signature(crypto_sign_BYTES, '\0');
  crypto_sign_detached(reinterpret_cast<unsigned char*>(signature.data()), nullptr,
                       reinterpret_cast<const unsigned char*>(message.data()), message.size(), secret_.data());
  return signature;
}

std::string SequencerSigner::public_key() const {
  return sequencer_format::public_key_text({reinterpret_cast<const char*>(public_.data()), public_.size()});
}

SequencerVerifier SequencerSigner::verifier() const {
  auto verifier = SequencerVerifier::create(group_, public_key());
  PALISADE_CHECK(verifier.is_ok());
  return std::move(verifier).value();
}

}  // namespace palisade
