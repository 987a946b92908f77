#include "metrics/checkpoint_seconds.h"

namespace palisade::metrics {

Histogram& checkpoint_seconds(Registry& registry) {
  return registry
      .histogram("palisade_storage_checkpoint_seconds",
                 "Time to checkpoint the store: commit what the journal holds into LMDB, synced", latency_buckets())
      .get();
}

}  // namespace palisade::metrics
