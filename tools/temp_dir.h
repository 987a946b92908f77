// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
#pragma once

#include <string>

namespace palisade::tools {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace palisade::tools
