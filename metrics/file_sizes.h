// The sizes of a daemon's files on disk, as a gauge read at each scrape.
#pragma once

#include <string>
#include <vector>

#include "metrics/registry.h"

namespace palisade::metrics {

// Registers palisade_storage_file_bytes{file=...}: the size of each of
// `files` (names in `dir`), read when scraped; a file that is missing is 0.
void export_file_sizes(Registry& registry, std::string dir, std::vector<std::string> files);

}  // namespace palisade::metrics
