// Lock modes, shared by the lock group, sequencers and LockClient.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace palisade {

// Exclusive: one holder. Shared: many holders, no exclusive one. Replicas accept
// fenced writes only under exclusive locks.
enum class LockMode : uint8_t { kExclusive = 0, kShared = 1 };

// "exclusive" / "shared"
std::string_view mode_name(LockMode mode);
std::optional<LockMode> mode_from_name(std::string_view name);

}  // namespace palisade
