#include "metrics/file_sizes.h"

#include <filesystem>

namespace palisade::metrics {

void export_file_sizes(Registry& registry, std::string dir, std::vector<std::string> files) {
  GaugeFamily& sizes =
      registry.gauge("palisade_storage_file_bytes", "Size of the daemon's files in its data directory", {"file"});
  registry.before_render([&sizes, dir = std::move(dir), files = std::move(files)] {
    for (const std::string& f : files) {
      std::error_code ec;
      const auto bytes = std::filesystem::file_size(std::filesystem::path(dir) / f, ec);
      sizes.with({f}).set(ec ? 0 : static_cast<int64_t>(bytes));
    }
  });
}

}  // namespace palisade::metrics
