#include "base/version.h"

namespace palisade {

// PALISADE_VERSION is defined for this file alone, so a new version rebuilds one file.
const char* version() { return PALISADE_VERSION; }

std::string version_line(std::string_view program) {
  return std::string(program) + " " + version() + " (commit " + git_commit() + ")";
}

}  // namespace palisade
