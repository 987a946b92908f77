// What a daemon does on SIGHUP (docs/security.md): it reads its cluster file
// again and, when the file checks out, gives its ZAP handler the new
// allow-list; otherwise it logs why and keeps what it had. Connections already
// made stay, so do the sessions over them.
#pragma once

#include <optional>
#include <string>

#include "config/cluster_keys.h"
#include "transport/zap_handler.h"

namespace palisade {

// The daemon at `endpoint`, started with key file `key_path`; `zap` null for a
// daemon on plaintext links, which has nothing to reload. The keys reloaded,
// for what else the daemon keeps of them; nullopt when nothing changed.
std::optional<DaemonKeys> reload_identities(const std::string& cluster_file, const std::string& endpoint,
                                            const std::string& key_path, transport::ZapHandler* zap);

}  // namespace palisade
