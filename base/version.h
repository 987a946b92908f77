// palisade's version (CMakeLists.txt's project VERSION) and the commit it was
// built from, for --version.
#pragma once

#include <string>
#include <string_view>

namespace palisade {

const char* version();
// The commit: its first 12 hex digits, then ", dirty" when tracked files had
// changes; "unknown" outside a git checkout; or what -DPALISADE_GIT_COMMIT
// said (a build from a source tarball). Generated at build time
// (cmake/git_commit.cmake).
const char* git_commit();
// What `program --version` prints: "palisade-replica 0.1.0 (commit 1a2b3c4d5e6f, dirty)".
std::string version_line(std::string_view program);

}  // namespace palisade
