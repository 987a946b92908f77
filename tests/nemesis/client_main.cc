// palisade-nemesis-client: one client of a fault campaign (scripts/torture).
// It works on a real cluster through the client library and records every
// call in a history file (tests/nemesis/campaign_history.h) until its time is
// up or it gets SIGTERM or SIGINT.
//
//   writer: takes a lock (each lock guards its own keys: lock "a", keys "a/0",
//           "a/1", ...) and writes unique values to its keys with the grant's
//           fence, a few at a time with short waits between, then lets it go.
//           It writes with the fence it was granted, not with the lease, as a
//           holder paused past its lease does when it wakes (it does not know).
//   reader: reads the keys.
//   final:  reads every key once and stops (after the faults healed: every
//           acknowledged write must be there).
//
//   palisade-nemesis-client --cluster c.toml --client 3 --role writer --history h/3.jsonl --seconds 60
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/random.h"
#include "palisade/cluster_file.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"

namespace {

using namespace palisade;
using nlohmann::json;

std::atomic<bool> stopping{false};
extern "C" void on_signal(int /*signal*/) { stopping = true; }

uint64_t now_us() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

json ts_json(const FencedTimestamp& ts) { return ts == FencedTimestamp{} ? json(nullptr) : json(ts.to_string()); }

// One history file, a whole line a call, flushed at once: a client stopped
// or killed leaves only whole lines behind.
class History {
 public:
  explicit History(const std::string& path) : out_(std::fopen(path.c_str(), "a")) {}
  ~History() {
    if (out_ != nullptr) std::fclose(out_);
  }
  History(const History&) = delete;
  History& operator=(const History&) = delete;
  bool is_open() const { return out_ != nullptr; }
  void record(json line) {
    const std::string text = line.dump() + "\n";
    std::fwrite(text.data(), 1, text.size(), out_);
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
};

struct Workload {
  int client = 0;
  std::vector<std::string> locks;
  int keys_per_lock = 2;
  std::chrono::milliseconds pause_max{50};  // between two calls
  std::string key(const std::string& lock, uint64_t i) const { return lock + "/" + std::to_string(i); }
};

void sleep_some(Random& random, std::chrono::milliseconds max) {
  std::this_thread::sleep_for(std::chrono::milliseconds(random.uniform(0, static_cast<uint64_t>(max.count()))));
}

// Returns false when the session is gone (expired while paused, say).
bool write_some(const Workload& w, QuorumStore& store, LockClient& locks, Random& random, History& history,
                uint64_t& next_value) {
  const std::string& lock = w.locks[random.index(w.locks.size())];
  AcquireOptions wait;
  wait.wait = std::chrono::seconds(2);
  // Long enough that a pause often lands while it holds the grant; recorded
  // so that the campaign's pauser can tell a holder with writes to come.
  const uint64_t writes = random.uniform(2, 10);
  uint64_t start = now_us();
  Result<Lease> lease = locks.acquire(lock, wait);
  history.record({{"op", "acquire"},
                  {"client", w.client},
                  {"session", locks.session()},
                  {"lock", lock},
                  {"start", start},
                  {"end", now_us()},
                  {"result", code_name(lease.status().code())},
                  {"token", lease.is_ok() ? lease.value().token() : 0},
                  {"writes", writes}});
  if (!lease.is_ok()) {
    sleep_some(random, w.pause_max);
    return lease.status().code() != Code::kNoSession;
  }
  const Fence fence{lease.value().name(), lease.value().token(), lease.value().sequencer()};
  for (uint64_t i = 0; i < writes && !stopping; ++i) {
    const std::string key = w.key(lock, random.uniform(0, static_cast<uint64_t>(w.keys_per_lock) - 1));
    const std::string value = "c" + std::to_string(w.client) + "-" + std::to_string(next_value++);
    const bool tombstone = random.chance(0.1);
    start = now_us();
    const WriteResult r = tombstone ? store.del(key, fence) : store.put(key, value, fence);
    json line{{"op", tombstone ? "del" : "put"},
              {"client", w.client},
              {"key", key},
              {"lock", lock},
              {"token", fence.token},
              {"start", start},
              {"end", now_us()},
              {"result", code_name(r.status.code())},
              {"ts", ts_json(r.ts)}};
    if (!tombstone) line["value"] = value;
    if (!r.status.is_ok()) line["message"] = r.status.message();
    history.record(std::move(line));
    if (r.status.code() == Code::kFenced) break;  // superseded: it learns so now
    sleep_some(random, w.pause_max);
  }
  (void)locks.release(lease.value());  // it may be gone already: the session expired
  return true;
}

void read_key(const Workload& w, QuorumStore& store, const std::string& key, History& history) {
  const uint64_t start = now_us();
  const ReadResult r = store.get(key);
  json line{{"op", "get"},
            {"client", w.client},
            {"key", key},
            {"start", start},
            {"end", now_us()},
            {"result", code_name(r.status.code())},
            {"found", r.found},
            {"ts", ts_json(r.ts)}};
  if (r.found) line["value"] = r.value;
  history.record(std::move(line));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One client of a fault campaign: calls a real cluster and records each call (JSON lines)."};
  std::string cluster_path, key_path, history_path, role = "writer";
  Workload w;
  double seconds = 60;
  uint64_t seed = 1;
  std::string locks = "a,b";
  uint64_t pause_ms = 50;
  app.add_option("--cluster", cluster_path, "Cluster file")->required();
  app.add_option("--key-file", key_path, "Key file of an identity the cluster file lists (a secure cluster)");
  app.add_option("--client", w.client, "This client's number in the history")->required();
  app.add_option("--role", role, "writer, reader or final")->check(CLI::IsMember({"writer", "reader", "final"}));
  app.add_option("--history", history_path, "History file to append to")->required();
  app.add_option("--seconds", seconds, "How long to work")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--seed", seed, "Seed of its choices of locks, keys and waits");
  app.add_option("--locks", locks, "Locks, comma-separated; lock L guards keys L/0, L/1, ...");
  app.add_option("--keys-per-lock", w.keys_per_lock, "Keys each lock guards")->check(CLI::Range(1, 1000));
  app.add_option("--pause-ms", pause_ms, "Longest wait between two calls")->check(CLI::Range(0, 10000));
  CLI11_PARSE(app, argc, argv);
  w.pause_max = std::chrono::milliseconds(pause_ms);
  for (size_t at = 0; at <= locks.size();) {
    const size_t comma = std::min(locks.find(',', at), locks.size());
    if (comma > at) w.locks.push_back(locks.substr(at, comma - at));
    at = comma + 1;
  }
  if (w.locks.empty()) {
    std::fprintf(stderr, "palisade-nemesis-client: --locks names no lock\n");
    return 2;
  }

  History history(history_path);
  if (!history.is_open()) {
    std::fprintf(stderr, "palisade-nemesis-client: cannot open %s\n", history_path.c_str());
    return 2;
  }
  auto cluster = ClusterFile::load(cluster_path, key_path);
  if (!cluster.is_ok()) {
    std::fprintf(stderr, "palisade-nemesis-client: %s\n", cluster.status().to_string().c_str());
    return 2;
  }
  auto store = QuorumStore::open(cluster.value().store_options());
  if (!store.is_ok()) {
    std::fprintf(stderr, "palisade-nemesis-client: store: %s\n", store.status().to_string().c_str());
    return 1;
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  Random random(seed);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  if (role == "reader") {
    while (!stopping && std::chrono::steady_clock::now() < until) {
      const std::string& lock = w.locks[random.index(w.locks.size())];
      read_key(w, *store.value(), w.key(lock, random.uniform(0, static_cast<uint64_t>(w.keys_per_lock) - 1)), history);
      sleep_some(random, w.pause_max);
    }
    return 0;
  }
  if (role == "final") {
    for (const std::string& lock : w.locks) {
      for (int i = 0; i < w.keys_per_lock; ++i) read_key(w, *store.value(), w.key(lock, static_cast<uint64_t>(i)), history);
    }
    return 0;
  }
  LockClientOptions options = cluster.value().lock_client_options();
  options.store = store.value().get();  // each grant is fenced before acquire returns it
  uint64_t next_value = 1;
  while (!stopping && std::chrono::steady_clock::now() < until) {
    // A session lost (expired while paused, say) is opened again.
    auto locks_client = LockClient::connect(options);
    if (!locks_client.is_ok()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    while (!stopping && std::chrono::steady_clock::now() < until &&
           write_some(w, *store.value(), *locks_client.value(), random, history, next_value)) {
    }
  }
  return 0;
}
