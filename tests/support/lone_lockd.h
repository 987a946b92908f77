// A lockd driver's options for one node that is a group of its own: what
// the unit tests of the driver's turn and of its metrics start it with.
#pragma once

#include <string>

#include "auth/cluster_key.h"
#include "lockgroup/lockd_driver.h"

namespace palisade::lockgroup {

inline LockdDriverOptions lone_lockd_options() {
  LockdDriverOptions o;
  o.service.paxos = PaxosOptions{.self = 1,
                                 .members = {1},
                                 .group = 7,
                                 .master_lease_ms = 4000,
                                 .heartbeat_ms = 500,
                                 .election_timeout_ms = 1000,
                                 .max_drift_ppm = 1000,
                                 .seed = 42};
  o.service.endpoints[1] = "tcp://n1";
  o.service.group = "test";
  o.service.key = ClusterKey::from_hex(std::string(64, '5')).value();
  return o;
}

}  // namespace palisade::lockgroup
