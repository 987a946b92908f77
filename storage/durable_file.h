// Small files replaced whole: after a crash a path holds its old contents or
// its new ones, never a mix (a temporary file, synced, renamed over it, then
// its directory synced).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "palisade/status.h"

namespace palisade {

// StorageError "WHAT PATH: strerror(errno)".
Status io_error(const std::string& what, const std::string& path);

// Writes all of `bytes` at `offset`; false on an error (errno set).
bool write_all(int fd, std::string_view bytes, uint64_t offset);

// Renames `tmp` (written and synced) to `path` and syncs the directory, so
// that the rename survives a crash. StorageError naming the step that failed.
Status rename_durably(const std::string& tmp, const std::string& path);

// Writes `contents` to PATH.new, synced, then rename_durably to `path`.
Status write_file_durably(const std::string& path, std::string_view contents);

// What `path` holds, nullopt when there is no such file; StorageError when it
// cannot be read or holds more than `max_bytes`.
Result<std::optional<std::string>> read_small_file(const std::string& path, size_t max_bytes);

}  // namespace palisade
