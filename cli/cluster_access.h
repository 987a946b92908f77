// A cluster as a client of the command line reaches it: its cluster file, and
// the credentials it connects with when the file lists identities.
#pragma once

#include <optional>

#include "config/cluster_config.h"
#include "palisade/credentials.h"

namespace palisade::cli {

struct ClusterAccess {
  ClusterConfig config;
  std::optional<Credentials> credentials;  // nullopt: plaintext links
};

}  // namespace palisade::cli
