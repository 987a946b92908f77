#include "base/periodic_thread.h"

namespace palisade {

PeriodicThread::PeriodicThread(std::chrono::milliseconds interval, std::function<void()> tick)
    : interval_(interval), tick_(std::move(tick)), thread_([this] { loop(); }) {}

PeriodicThread::~PeriodicThread() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void PeriodicThread::loop() {
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    tick_();
    lock.lock();
  }
}

}  // namespace palisade
