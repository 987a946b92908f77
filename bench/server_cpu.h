// CPU time of server processes, read from /proc/PID/stat (utime + stime, every
// thread of the process): what a workload cost the servers, a figure that a
// noisy, shared machine distorts much less than throughput.
#pragma once

#include <sys/types.h>

#include <vector>

namespace palisade::bench {

// Seconds of CPU (user + system) used so far by all of `pids`, summed; throws
// std::runtime_error when one of them is gone (a server died).
double cpu_seconds(const std::vector<pid_t>& pids);

}  // namespace palisade::bench
