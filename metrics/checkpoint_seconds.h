// palisade_storage_checkpoint_seconds, which both daemons export: how long
// each checkpoint of their store took (storage/journaled_lmdb.h).
#pragma once

#include "metrics/registry.h"

namespace palisade::metrics {

// Registers the histogram in `registry` and returns its one series.
Histogram& checkpoint_seconds(Registry& registry);

}  // namespace palisade::metrics
