#include "replica/config_refresh.h"

#include <zmq.hpp>

#include "transport/lockd_call.h"

namespace palisade::replica {

ConfigRefresh::ConfigRefresh(ConfigRefreshOptions options, std::function<void(std::string)> offer)
    : options_(std::move(options)), offer_(std::move(offer)), thread_([this] { run(); }) {}

ConfigRefresh::~ConfigRefresh() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ConfigRefresh::run() {
  zmq::context_t ctx(1);
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, options_.interval, [this] { return stopping_; })) {
    if (!paused_) continue;
    lock.unlock();
    // Every node: one that lags serves an older record, which the replica ignores.
    for (const auto& reply :
         transport::call_lockd_endpoints(ctx, options_.lockd, wire::GetReplicasRequest{}, std::chrono::seconds(1),
                                         options_.cluster_id, options_.credentials)) {
      if (reply && reply->status.is_ok() && !reply->config.empty()) offer_(reply->config);
    }
    lock.lock();
  }
}

}  // namespace palisade::replica
