// The palisade-replica under test, started as a real process.
#pragma once

#include <string>
#include <vector>

#include "cli/replica_process.h"

namespace palisade::test {

// Path of the palisade-replica binary under test.
std::string replica_binary();

class ReplicaProcess : public cli::ReplicaProcess {
 public:
  explicit ReplicaProcess(std::string data_dir, std::vector<std::string> extra_args = {})
      : cli::ReplicaProcess(replica_binary(), std::move(data_dir), std::move(extra_args)) {}
};

}  // namespace palisade::test
