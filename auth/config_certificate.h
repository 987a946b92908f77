// Config certificates (wire/config_certificate.h; docs/protocol.md "Config
// certificates"): the lock group signs the replica set record it serves with
// its sequencer key, and anyone with the group's public key (the cluster
// file's sequencer_public_key) checks one, so a client or replica can take a
// certificate relayed by anybody.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "auth/sequencer_signer.h"
#include "palisade/sequencer.h"
#include "wire/replica_set.h"

namespace palisade {

// The certificate text of `set` (a record of version >= 1 that passes
// wire::check_replicas: verify refuses others).
std::string sign_config_certificate(const SequencerSigner& signer, const wire::ReplicaSet& set);

// The record a certificate carries, when it is in the format, its signature
// is the group's over its record, and the record decodes; BadRequest naming
// which of these failed otherwise (forged, altered, another group's).
Result<wire::ReplicaSet> verify_config_certificate(const SequencerVerifier& verifier, std::string_view text);

// verify_config_certificate with `verifier`; without one (a replica started
// --insecure, a cluster file without sequencer_public_key) the record only
// read, its signature unchecked.
Result<wire::ReplicaSet> read_config_certificate(const std::optional<SequencerVerifier>& verifier,
                                                 std::string_view text);

}  // namespace palisade
