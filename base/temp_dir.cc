#include "base/temp_dir.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace palisade {

std::string default_temp_base() {
  const char* base = std::getenv("TMPDIR");
  return base != nullptr && *base != '\0' ? base : "/tmp";
}

TempDir::TempDir() : TempDir(default_temp_base()) {}

TempDir::TempDir(const std::string& base) {
  std::string pattern = base + "/palisade-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a directory in " + base);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace palisade
