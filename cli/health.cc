#include "cli/health.h"

#include <algorithm>

namespace palisade::cli {

Health health_of(const HealthCounts& c) {
  const int majority = static_cast<int>(c.replicas) / 2 + 1;
  const int r = c.read_quorum != 0 ? c.read_quorum : majority;
  const int w = c.write_quorum != 0 ? c.write_quorum : majority;
  if (!c.master || static_cast<int>(c.replicas_answering) < std::max(r, w)) return Health::kUnavailable;
  if (c.lockd_answering < c.lockd || c.replicas_answering < c.replicas) return Health::kDegraded;
  return Health::kHealthy;
}

const char* health_name(Health h) {
  switch (h) {
    case Health::kHealthy: return "healthy";
    case Health::kDegraded: return "degraded";
    case Health::kUnavailable: return "unavailable";
  }
  return "unavailable";
}

}  // namespace palisade::cli
