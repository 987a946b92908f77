// A consumer of libpalisade, built as one: compiled with nothing but include/ on
// its include path and linked with palisade_client alone. It fails to build when
// a public header needs anything beyond include/ or pulls in ZeroMQ, MessagePack
// or LMDB; tests/layout_check.py checks its compile and link lines (only
// include/; no LMDB, libsodium or toml++), and ctest runs it (client_consumer).
#include "palisade/cluster_file.h"
#include "palisade/conditional.h"
#include "palisade/election.h"
#include "palisade/lease.h"
#include "palisade/lock_client.h"
#include "palisade/lock_mode.h"
#include "palisade/quorum_store.h"
#include "palisade/sequencer.h"
#include "palisade/status.h"
#include "palisade/timestamp.h"

#include <cstdio>

#if defined(ZMQ_VERSION) || defined(CPPZMQ_VERSION)
#error "a public header pulls in ZeroMQ"
#endif
#if defined(MSGPACK_VERSION) || defined(MSGPACK_DEFAULT_API_VERSION)
#error "a public header pulls in MessagePack"
#endif
#if defined(MDB_VERSION_MAJOR)
#error "a public header pulls in LMDB"
#endif

int main() {
  using namespace palisade;
  // Reading a sequencer needs no key, so no libsodium.
  auto fence = Fence::from_sequencer("not a sequencer");
  if (fence.is_ok() || fence.status().code() != Code::kBadSequencer) {
    std::fprintf(stderr, "from_sequencer accepted a text that is not a sequencer\n");
    return 1;
  }
  if (parse_sequencer("ps2.x.y").status().code() != Code::kBadSequencer) {
    std::fprintf(stderr, "parse_sequencer accepted a text that is not a sequencer\n");
    return 1;
  }
  // Options are checked before any socket opens: R + W <= N is refused.
  QuorumStoreOptions options;
  options.replicas = {"tcp://127.0.0.1:1", "tcp://127.0.0.1:2", "tcp://127.0.0.1:3"};
  options.read_quorum = 1;
  options.write_quorum = 1;
  options.share_connections = false;
  auto store = QuorumStore::open(options);
  if (store.is_ok() || store.status().code() != Code::kBadRequest) {
    std::fprintf(stderr, "QuorumStore::open accepted R + W <= N\n");
    return 1;
  }
  LockClientOptions lock_options;  // no nodes: refused
  auto client = LockClient::connect(lock_options, std::chrono::milliseconds(10));
  if (client.is_ok() || client.status().code() != Code::kBadRequest) {
    std::fprintf(stderr, "LockClient::connect accepted options without nodes\n");
    return 1;
  }
  std::printf("ok: %s\n", std::string(mode_name(LockMode::kShared)).c_str());
  return 0;
}
