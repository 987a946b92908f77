#include "client/shared_context.h"

#include <mutex>

namespace palisade::client {

std::shared_ptr<zmq::context_t> shared_context() {
  static std::mutex mu;
  static std::weak_ptr<zmq::context_t> current;
  std::lock_guard lock(mu);
  std::shared_ptr<zmq::context_t> ctx = current.lock();
  if (!ctx) {
    ctx = std::make_shared<zmq::context_t>(1);
    current = ctx;
  }
  return ctx;
}

}  // namespace palisade::client
