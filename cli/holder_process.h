// A `palisade demo-holder` process (cli/holder_command.cc) and the lines it
// prints, for the demo and the tests that pause, resume and kill lock holders.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/process.h"

namespace palisade::cli {

class HolderProcess {
 public:
  // Runs `palisade_binary --cluster CLUSTER_FILE [--key KEY_FILE] demo-holder
  // ARGS...` with its output in `log_path` (no --key when `key_file` is empty).
  HolderProcess(const std::string& palisade_binary, const std::string& cluster_file, const std::string& key_file,
                const std::vector<std::string>& args, const std::string& log_path);

  // The rest of the first output line that is `prefix` or starts with `prefix `.
  std::optional<std::string> line(const std::string& prefix) const;
  // Waits for that line; nullopt when it does not come within `timeout` or the
  // holder exits without printing it.
  std::optional<std::string> wait_for(const std::string& prefix, std::chrono::milliseconds timeout) const;
  uint64_t token() const;
  std::string sequencer() const;
  Process& process() { return *process_; }

 private:
  std::unique_ptr<Process> process_;
};

// The palisade executable that is running (for a holder it starts).
std::string self_binary();

}  // namespace palisade::cli
