// What a client shows a secure cluster, and how it knows it talks to the
// cluster's own daemons: CurveZMQ keys (docs/security.md). A cluster is secure
// when its cluster file lists identities; then every link is encrypted, and a
// daemon drops, in the handshake, any key its cluster file does not list.
#pragma once

#include <map>
#include <string>

namespace palisade {

struct Credentials {
  std::string identity;  // the name the cluster file gives these keys
  std::string public_key;  // this client's, Z85 (40 characters)
  std::string secret_key;  // Z85; proves the identity: keep it as a key file of mode 0600
  // Each daemon's public key (Z85) by its endpoint, as the options name the
  // endpoint. A daemon missing here cannot be reached (BadRequest at open).
  std::map<std::string, std::string> server_keys{};
};

}  // namespace palisade
