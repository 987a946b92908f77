#include "replica/config_refresh.h"

#include <zmq.hpp>

#include "transport/lockd_call.h"

namespace palisade::replica {

ConfigRefresh::ConfigRefresh(ConfigRefreshOptions options, std::function<void(std::string)> offer)
    : options_(std::move(options)),
      offer_(std::move(offer)),
      ctx_(std::make_unique<zmq::context_t>(1)),
      timer_(options_.interval, [this] { ask(); }) {}

ConfigRefresh::~ConfigRefresh() = default;

void ConfigRefresh::ask() {
  if (!paused_) return;
  // Every node: one that lags serves an older record, which the replica ignores.
  for (const auto& reply :
       transport::call_lockd_endpoints(*ctx_, options_.lockd, wire::GetReplicasRequest{}, std::chrono::seconds(1),
                                       options_.cluster_id, options_.credentials)) {
    if (reply && reply->status.is_ok() && !reply->config.empty()) offer_(reply->config);
  }
}

}  // namespace palisade::replica
