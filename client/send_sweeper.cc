#include "client/send_sweeper.h"

#include "client/coordinator.h"

namespace palisade::client {
namespace {

uint64_t steady_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

SendSweeper::SendSweeper(std::chrono::milliseconds period) : period_(period), thread_([this] { run(); }) {}

SendSweeper::~SendSweeper() {
  {
    std::lock_guard lock(wake_mu_);
    stopping_ = true;
  }
  wake_cv_.notify_one();
  thread_.join();
}

uint64_t SendSweeper::add(Sweep sweep) {
  std::lock_guard lock(sweeps_mu_);
  sweeps_.emplace(next_id_, std::move(sweep));
  return next_id_++;
}

void SendSweeper::remove(uint64_t id) {
  std::lock_guard lock(sweeps_mu_);
  sweeps_.erase(id);
}

void SendSweeper::wake() {
  if (armed_.exchange(true)) return;  // it sweeps already
  std::lock_guard lock(wake_mu_);
  wake_cv_.notify_one();
}

void SendSweeper::run() {
  std::unique_lock lock(wake_mu_);
  while (!stopping_) {
    if (!armed_) {
      wake_cv_.wait(lock, [&] { return armed_ || stopping_; });
      continue;
    }
    if (wake_cv_.wait_for(lock, period_, [&] { return stopping_; })) break;
    lock.unlock();
    armed_ = false;  // a wake() from here on arms the next round
    bool held = false;
    {
      std::lock_guard sweeping(sweeps_mu_);
      const uint64_t now = steady_ms();
      for (auto& [id, sweep] : sweeps_) held = sweep(now) || held;
    }
    if (held) armed_ = true;
    lock.lock();
  }
}

std::shared_ptr<SendSweeper> shared_sweeper() {
  static std::mutex mu;
  static std::weak_ptr<SendSweeper> current;
  std::lock_guard lock(mu);
  std::shared_ptr<SendSweeper> sweeper = current.lock();
  if (!sweeper) {
    sweeper = std::make_shared<SendSweeper>(std::chrono::milliseconds(CoordinatorOptions{}.lazy_send_ms));
    current = sweeper;
  }
  return sweeper;
}

}  // namespace palisade::client
