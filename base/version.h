// palisade's version (CMakeLists.txt's project VERSION), for --version.
#pragma once

namespace palisade {

const char* version();

}  // namespace palisade
