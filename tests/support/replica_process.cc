#include "tests/support/replica_process.h"

namespace palisade::test {

std::string replica_binary() { return PALISADE_REPLICA_BIN; }

}  // namespace palisade::test
