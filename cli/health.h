// One definition of a cluster's health, for `palisade status` and `palisade
// cluster status` alike:
//   healthy      a master answers and every lockd node and replica answers;
//   degraded     a master answers and at least max(R, W) replicas do, but some
//                node does not: everything works, with less to spare;
//   unavailable  no master answers, or too few replicas for a read or a write.
#pragma once

#include <cstddef>

namespace palisade::cli {

enum class Health { kHealthy, kDegraded, kUnavailable };

struct HealthCounts {
  bool master = false;
  size_t lockd_answering = 0;
  size_t lockd = 0;
  size_t replicas_answering = 0;
  size_t replicas = 0;
  int read_quorum = 0;   // 0: a majority
  int write_quorum = 0;  // 0: a majority
};

Health health_of(const HealthCounts& c);
// "healthy", "degraded", "unavailable".
const char* health_name(Health h);

}  // namespace palisade::cli
