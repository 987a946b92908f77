// The systems palisade-peer-bench can measure, one factory each (one .cc file
// per system). Each throws std::runtime_error when it cannot reach its system.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/peers/peer_client.h"

namespace palisade::bench::peers {

// palisade is started here, in-process (cli::LocalCluster): 3 palisade-lockd
// and 3 palisade-replica on free loopback ports, data under `dir`. `curve`:
// CurveZMQ on every link, the clients connecting as the cluster's admin, as
// users run it; else plaintext links (the daemons run --insecure).
struct PalisadeOptions {
  std::string dir;
  std::string lockd_binary;
  std::string replica_binary;
  bool curve = true;
};
std::unique_ptr<PeerSystem> make_palisade(const PalisadeOptions& options);

// The peers run elsewhere (scripts/bench-peers starts them); endpoints are host:port.
std::unique_ptr<PeerSystem> make_redis(const std::vector<std::string>& endpoints);
// Client ports of the etcd members; the v3 JSON gateway is served there.
std::unique_ptr<PeerSystem> make_etcd(const std::vector<std::string>& endpoints);
// Client ports of the ensemble's servers.
std::unique_ptr<PeerSystem> make_zookeeper(const std::vector<std::string>& endpoints);

}  // namespace palisade::bench::peers
