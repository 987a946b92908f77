#include "bench/server_cpu.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace palisade::bench {

double cpu_seconds(const std::vector<pid_t>& pids) {
  static const double ticks_per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
  double total = 0;
  for (pid_t pid : pids) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    std::getline(in, stat);
    // "pid (comm) state ppid ...": comm may hold spaces, so count fields after its ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) throw std::runtime_error("server process " + std::to_string(pid) + " is gone");
    std::istringstream fields(stat.substr(close + 1));
    std::string state, field;
    fields >> state;  // field 3
    if (state == "Z") throw std::runtime_error("server process " + std::to_string(pid) + " exited");
    for (int i = 4; i < 14; ++i) fields >> field;  // ppid (4) .. cmajflt (13)
    unsigned long long utime = 0, stime = 0;
    fields >> utime >> stime;  // 14, 15
    if (!fields) throw std::runtime_error("cannot read the CPU time of process " + std::to_string(pid));
    total += static_cast<double>(utime + stime) / ticks_per_second;
  }
  return total;
}

}  // namespace palisade::bench
