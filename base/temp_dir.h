// A fresh directory, removed with everything in it.
#pragma once

#include <string>

namespace palisade {

// $TMPDIR when set and not empty, else /tmp.
std::string default_temp_base();

class TempDir {
 public:
  // Under default_temp_base().
  TempDir();
  // Under `base` (for a chosen disk); throws std::runtime_error when it cannot.
  explicit TempDir(const std::string& base);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace palisade
