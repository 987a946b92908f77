// The palisade-replica under test, started as a real process.
#pragma once

#include <string>
#include <vector>

#include "tools/replica_process.h"

namespace palisade::test {

// Path of the palisade-replica binary under test.
std::string replica_binary();

class ReplicaProcess : public tools::ReplicaProcess {
 public:
  explicit ReplicaProcess(std::string data_dir, std::vector<std::string> extra_args = {})
      : tools::ReplicaProcess(replica_binary(), std::move(data_dir), std::move(extra_args)) {}
};

}  // namespace palisade::test
