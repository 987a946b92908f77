#include "cli/holder_process.h"

#include <filesystem>
#include <sstream>
#include <thread>

namespace palisade::cli {

HolderProcess::HolderProcess(const std::string& palisade_binary, const std::string& cluster_file,
                             const std::string& key_file, const std::vector<std::string>& args,
                             const std::string& log_path) {
  std::vector<std::string> argv = {palisade_binary, "--cluster", cluster_file};
  if (!key_file.empty()) argv.insert(argv.end(), {"--key", key_file});
  argv.push_back("demo-holder");
  argv.insert(argv.end(), args.begin(), args.end());
  process_ = std::make_unique<Process>(argv, log_path);
}

std::optional<std::string> HolderProcess::line(const std::string& prefix) const {
  std::istringstream in(process_->log());
  std::string l;
  while (std::getline(in, l)) {
    if (l == prefix) return "";
    if (l.rfind(prefix + " ", 0) == 0) return l.substr(prefix.size() + 1);
  }
  return std::nullopt;
}

std::optional<std::string> HolderProcess::wait_for(const std::string& prefix,
                                                   std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto l = line(prefix)) return l;
    if (std::chrono::steady_clock::now() >= deadline || !process_->running()) return line(prefix);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

uint64_t HolderProcess::token() const { return std::stoull(line("token").value_or("0")); }
std::string HolderProcess::sequencer() const { return line("sequencer").value_or(""); }

std::string self_binary() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

}  // namespace palisade::cli
