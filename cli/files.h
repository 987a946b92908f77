// Writing the files of a local cluster (cluster file, key, list of daemons).
#pragma once

#include <sys/types.h>

#include <string>

#include "palisade/status.h"

namespace palisade::cli {

// Writes `text` to `path` with `mode`, set outright (O_CREAT's mode applies
// only to a new file, and under the umask). StorageError naming the file.
Status write_file(const std::string& path, const std::string& text, mode_t mode);
// The same through PATH.tmp renamed over PATH: a reader (a daemon reloading
// its cluster file on SIGHUP) sees the old file or the new one, never part.
Status replace_file(const std::string& path, const std::string& text, mode_t mode);

}  // namespace palisade::cli
