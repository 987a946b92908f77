// Small helpers shared by the LmdbStore sources. Internal to replica/.
#pragma once

#include <lmdb.h>

#include <string>
#include <string_view>

#include "palisade/status.h"

namespace palisade::replica {

inline Status lmdb_error(const std::string& what, int rc) {
  return Status(Code::kStorageError, what + ": " + mdb_strerror(rc));
}
inline MDB_val val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
inline std::string_view view(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

}  // namespace palisade::replica
