// fenced-counter: adds to a counter in palisade while it holds a lock, every
// write fenced by the grant. Were this process paused past its session's lease
// (a GC pause, SIGSTOP) and the lock granted to another, its late writes would
// be refused (fenced), never stored over the new holder's.
//
//   fenced-counter CLUSTER_FILE [KEY_FILE] [COUNT]
//
// KEY_FILE: a key file of an identity the cluster file lists (a secure
// cluster); "-" or none for a cluster on plaintext links. COUNT: how many
// increments (default 10). Prints the counter's value at the end.
#include <palisade/cluster_file.h>
#include <palisade/lock_client.h>
#include <palisade/quorum_store.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

int fail(const std::string& what, const palisade::Status& status) {
  std::fprintf(stderr, "fenced-counter: %s: %s\n", what.c_str(), status.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: fenced-counter CLUSTER_FILE [KEY_FILE|-] [COUNT]\n");
    return 2;
  }
  const std::string key_file = argc > 2 && std::string(argv[2]) != "-" ? argv[2] : "";
  const int count = argc > 3 ? std::atoi(argv[3]) : 10;
  if (count <= 0) {
    std::fprintf(stderr, "fenced-counter: COUNT must be a positive number\n");
    return 2;
  }

  auto cluster = palisade::ClusterFile::load(argv[1], key_file);
  if (!cluster.is_ok()) return fail("cluster file", cluster.status());
  auto store = palisade::QuorumStore::open(cluster.value().store_options());
  if (!store.is_ok()) return fail("store", store.status());
  palisade::LockClientOptions lock_options = cluster.value().lock_client_options();
  lock_options.store = store.value().get();  // each grant raises its fence floor before it is used
  auto locks = palisade::LockClient::connect(lock_options);
  if (!locks.is_ok()) return fail("lock group", locks.status());

  palisade::AcquireOptions wait;
  wait.wait = std::chrono::seconds(30);
  auto lease = locks.value()->acquire("examples/counter", wait);
  if (!lease.is_ok()) return fail("acquire examples/counter", lease.status());
  std::printf("holding examples/counter with token %llu\n", static_cast<unsigned long long>(lease.value().token()));

  long long value = 0;
  for (int i = 0; i < count; ++i) {
    palisade::ReadResult read = store.value()->get("examples/counter");
    if (!read.status.is_ok()) return fail("get", read.status);
    value = read.found ? std::atoll(read.value.c_str()) : 0;
    palisade::WriteResult write = store.value()->put("examples/counter", std::to_string(value + 1), lease.value());
    if (!write.status.is_ok()) return fail("put", write.status);  // fenced: another holder took over
    ++value;
  }
  if (palisade::Status s = locks.value()->release(lease.value()); !s.is_ok()) return fail("release", s);
  std::printf("examples/counter = %lld\n", value);
  return 0;
}
