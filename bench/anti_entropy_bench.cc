// palisade-anti-entropy-bench: two real palisade-replica processes holding the
// same keys but for a fraction that the second holds in a newer version; one
// anti-entropy run compares and repairs them. Prints the time, the bytes on the
// wire next to the size of the differing versions, and the targets
// (bench/README.md).
#include <cstdio>
#include <filesystem>

#include "bench/bench_support.h"
#include "antientropy/anti_entropy.h"
#include "replica/lmdb_store.h"
#include "base/version.h"

namespace palisade::bench {
namespace {

struct Flags {
  std::string replica_bin = cli::sibling_replica_binary();
  std::string tmp_dir = default_temp_base();
  uint64_t keys = 1'000'000;
  double differ_percent = 1;
  size_t value_bytes = 100;
};

std::string key_of(uint64_t i) { return "key-" + std::to_string(i); }

// Whether key i differs: a spread-out `percent` of the keys.
bool differs(uint64_t i, double percent) { return (i * 2654435761u) % 10000 < percent * 100; }

// Writes the keys straight into a data dir through the replica's store (far
// faster than a million client writes); `newer` gives the differing keys a newer
// version. Returns the bytes of the differing versions (key, timestamp, value).
uint64_t load(const std::string& dir, const Flags& flags, bool newer) {
  std::filesystem::create_directories(dir);
  auto store = replica::LmdbStore::open(dir, {});
  if (!store.is_ok()) throw std::runtime_error(store.status().to_string());
  const FencedTimestamp old_ts{0, hlc::make(1'700'000'000'000, 0)}, new_ts{0, hlc::make(1'700'000'000'001, 0)};
  uint64_t differing_bytes = 0;
  for (uint64_t i = 0; i < flags.keys; ++i) {
    const bool differ = differs(i, flags.differ_percent);
    const bool use_new = newer && differ;
    std::string value(flags.value_bytes, static_cast<char>('a' + (i + use_new) % 26));
    const std::string key = key_of(i);
    if (differ) differing_bytes += key.size() + 16 + value.size();
    const replica::Versions versions{
        wire::Version{use_new ? new_ts : old_ts, "", wire::VersionState::kCommitted, false, std::move(value)}};
    Status s = store.value()->apply(replica::Change{.key = key, .put = &versions});
    if (s.is_ok() && i % 100'000 == 99'999) s = store.value()->commit();
    if (!s.is_ok()) throw std::runtime_error(s.to_string());
  }
  if (Status s = store.value()->commit(); !s.is_ok()) throw std::runtime_error(s.to_string());
  return differing_bytes;
}

Result<AntiEntropyReport> repair(const cli::ReplicaProcess& a, const cli::ReplicaProcess& b) {
  AntiEntropyOptions o;
  o.replicas = {a.endpoint(), b.endpoint()};
  o.timeout = std::chrono::seconds(30);
  return run_anti_entropy(o);
}

int run(const Flags& flags) {
  TempDir dir(flags.tmp_dir);
  auto t0 = Clock::now();
  load(dir.sub("a"), flags, false);
  const uint64_t differing_bytes = load(dir.sub("b"), flags, true);
  std::printf("loaded %llu keys of %zu-byte values into two data dirs in %.1f s (through the store API)\n",
              static_cast<unsigned long long>(flags.keys), flags.value_bytes, ms_between(t0, Clock::now()) / 1000);
  t0 = Clock::now();
  cli::ReplicaProcess a(flags.replica_bin, dir.sub("a")), b(flags.replica_bin, dir.sub("b"));
  std::printf("both replicas started (each checks its records and builds its tree) in %.1f s\n",
              ms_between(t0, Clock::now()) / 1000);

  t0 = Clock::now();
  auto first = repair(a, b);
  const double repair_s = ms_between(t0, Clock::now()) / 1000;
  if (!first.is_ok()) throw std::runtime_error(first.status().to_string());
  const AntiEntropyReport& r = first.value();
  t0 = Clock::now();
  auto second = repair(a, b);
  const double check_s = ms_between(t0, Clock::now()) / 1000;
  if (!second.is_ok()) throw std::runtime_error(second.status().to_string());

  const uint64_t other_bytes = r.bytes_moved() - r.tree_bytes;
  std::printf("compare + repair: %.2f s; %llu keys differing, %llu versions sent, %llu entries listed\n", repair_s,
              static_cast<unsigned long long>(r.keys_differing), static_cast<unsigned long long>(r.versions_sent),
              static_cast<unsigned long long>(r.keys_compared));
  std::printf("wire: %llu messages, %.2f MB in all: tree digests and leaf listings %.2f MB, reads and repairs %.2f MB\n",
              static_cast<unsigned long long>(r.messages), r.bytes_moved() / 1e6, r.tree_bytes / 1e6,
              other_bytes / 1e6);
  std::printf("differing versions (key + timestamp + value): %.2f MB; wire / differing = %.2f, "
              "reads and repairs / differing = %.2f\n",
              differing_bytes / 1e6, double(r.bytes_moved()) / differing_bytes, double(other_bytes) / differing_bytes);
  std::printf("second run: %s in %.3f s, %llu messages, %llu bytes\n", second.value().equal ? "equal" : "NOT EQUAL",
              check_s, static_cast<unsigned long long>(second.value().messages),
              static_cast<unsigned long long>(second.value().bytes_moved()));
  print_targets({
      {"bytes on the wire <= 3 x differing versions + tree levels visited", double(r.bytes_moved()),
       3.0 * differing_bytes + r.tree_bytes},
      {"compare + repair seconds < 30", repair_s, 30},
  });
  return second.value().equal && r.versions_sent > 0 ? 0 : 1;
}

}  // namespace
}  // namespace palisade::bench

int main(int argc, char** argv) {
  palisade::bench::Flags flags;
  CLI::App app{"palisade-anti-entropy-bench: compare and repair two replicas that differ in a fraction of their keys"};
  app.set_version_flag("--version", palisade::version_line("palisade-anti-entropy-bench"));
  app.add_option("--replica-bin", flags.replica_bin, "palisade-replica to run")->capture_default_str();
  app.add_option("--tmp-dir", flags.tmp_dir, "Where the data dirs go")->capture_default_str();
  app.add_option("--keys", flags.keys, "Keys on each replica")->capture_default_str();
  app.add_option("--differ-percent", flags.differ_percent, "Percent of keys newer on the second replica")
      ->capture_default_str();
  app.add_option("--value-bytes", flags.value_bytes, "Bytes per value")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return palisade::bench::run_main("palisade-anti-entropy-bench", [&] { return palisade::bench::run(flags); });
}
