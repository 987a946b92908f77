// The workloads of palisade-peer-bench, the same for every system: lock cycles
// on distinct locks, the handoff of one contended lock, durable 100-byte puts
// of new keys, and gets of existing keys, each a closed loop of blocking calls
// from `clients` threads with one client each, for a fixed time.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_support.h"
#include "bench/peers/peer_client.h"

namespace palisade::bench::peers {

constexpr size_t kValueBytes = 100;

enum class Workload { kLock, kHandoff, kPut, kGet };
constexpr Workload kWorkloads[] = {Workload::kLock, Workload::kHandoff, Workload::kPut, Workload::kGet};
std::string_view workload_name(Workload w);  // "lock", "handoff", "put", "get"
std::optional<Workload> workload_from_name(std::string_view name);

// One measured point: a workload at one client count.
struct Point : LoadResult {
  Workload workload = Workload::kLock;
  int clients = 0;
  // CPU seconds of every server process during the timed part; nullopt without server pids.
  std::optional<double> server_cpu_s;
  // CPU seconds of this process (the clients) during the timed part.
  double client_cpu_s = 0;
};

// Writes keys 0..count-1 that the get workload reads, from a few clients at once.
void preload(PeerSystem& system, int count);

// Runs `workload` from `clients` clients for `seconds` (each client connects
// and does one untimed operation first). `level` makes this point's keys and
// locks its own. The CPU time of `server_pids` is read right before and after
// the timed part, and this process's.
Point run_point(PeerSystem& system, Workload workload, int clients, double seconds, int level, int get_keys,
                const std::vector<pid_t>& server_pids);

}  // namespace palisade::bench::peers
