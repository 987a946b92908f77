#include "palisade/lock_mode.h"

namespace palisade {

std::string_view mode_name(LockMode mode) { return mode == LockMode::kShared ? "shared" : "exclusive"; }

std::optional<LockMode> mode_from_name(std::string_view name) {
  if (name == "exclusive") return LockMode::kExclusive;
  if (name == "shared") return LockMode::kShared;
  return std::nullopt;
}

}  // namespace palisade
