#include "bench/peers/workloads.h"

#include <unistd.h>

#include <memory>
#include <stdexcept>
#include <thread>

#include "bench/server_cpu.h"

namespace palisade::bench::peers {
namespace {

constexpr int kPreloadClients = 16;

// Names this run's keys and locks: a second run against the same servers writes new keys.
const std::string& run_id() {
  static const std::string id = std::to_string(getpid());
  return id;
}

std::string get_key(int i) { return "get-" + run_id() + "-" + std::to_string(i); }

}  // namespace

std::string_view workload_name(Workload w) {
  switch (w) {
    case Workload::kLock: return "lock";
    case Workload::kHandoff: return "handoff";
    case Workload::kPut: return "put";
    case Workload::kGet: return "get";
  }
  return "?";
}

std::optional<Workload> workload_from_name(std::string_view name) {
  for (Workload w : kWorkloads) {
    if (workload_name(w) == name) return w;
  }
  return std::nullopt;
}

void preload(PeerSystem& system, int count) {
  const std::string value(kValueBytes, 'p');
  std::vector<std::string> failures(kPreloadClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kPreloadClients; ++c) {
    threads.emplace_back([&, c] {
      try {
        auto client = system.connect(c);
        for (int i = c; i < count && failures[c].empty(); i += kPreloadClients) {
          if (Status s = client->put(get_key(i), value); !s.is_ok()) failures[c] = "preload put: " + s.to_string();
        }
      } catch (const std::exception& e) {
        failures[c] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& f : failures) {
    if (!f.empty()) throw std::runtime_error(f);
  }
}

Point run_point(PeerSystem& system, Workload workload, int clients, double seconds, int level, int get_keys,
                const std::vector<pid_t>& server_pids) {
  const std::string value(kValueBytes, 'v');
  const std::string prefix = run_id() + "-" + std::to_string(level) + "-";
  std::vector<std::unique_ptr<PeerClient>> connected(clients);
  const std::vector<pid_t> self = {getpid()};
  double cpu_before = 0, cpu_after = 0, client_before = 0, client_after = 0;
  LoadMarks marks;
  marks.start = [&] {
    client_before = cpu_seconds(self);
    if (!server_pids.empty()) cpu_before = cpu_seconds(server_pids);
  };
  marks.stop = [&] {
    client_after = cpu_seconds(self);
    if (!server_pids.empty()) cpu_after = cpu_seconds(server_pids);
  };
  Point p;
  static_cast<LoadResult&>(p) = run_load(
      clients, seconds,
      [&](int c) -> Operation {
        connected[c] = system.connect(c);
        PeerClient& client = *connected[c];
        const std::string mine = prefix + std::to_string(c);
        Operation op;
        switch (workload) {
          case Workload::kLock: op = [&client, lock = "lock-" + mine] { return client.lock_cycle(lock); }; break;
          case Workload::kHandoff: op = [&client, lock = "handoff-" + prefix] { return client.lock_cycle(lock); }; break;
          case Workload::kPut:
            op = [&client, &value, key = "put-" + mine + "-", i = uint64_t{0}]() mutable {
              return client.put(key + std::to_string(i++), value);
            };
            break;
          case Workload::kGet:
            op = [&client, get_keys, i = static_cast<uint64_t>(c) * 7919]() mutable {
              return client.get(get_key(static_cast<int>(i++ % static_cast<uint64_t>(get_keys))));
            };
            break;
        }
        if (Status s = op(); !s.is_ok()) {
          throw std::runtime_error("warm-up " + std::string(workload_name(workload)) + ": " + s.to_string());
        }
        return op;
      },
      marks);
  connected.clear();  // sessions close after the clock stopped
  p.workload = workload;
  p.clients = clients;
  if (!server_pids.empty()) p.server_cpu_s = cpu_after - cpu_before;
  p.client_cpu_s = client_after - client_before;
  return p;
}

}  // namespace palisade::bench::peers
