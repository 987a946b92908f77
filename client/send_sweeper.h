// One thread per process that sends what blocking calls held back (commits and
// purges, CoordinatorOptions::lazy_send_ms) once no call has sent them, for
// every QuorumStore. Each store's own I/O thread used to wake for that: under
// a stream of blocking calls it woke every lazy_send_ms only to find that the
// next call had sent them, and with 64 stores those wake-ups cost about a tenth
// of the CPU of a put (palisade-quorum-bench). The sweeper wakes every period
// while any store holds sends, and sleeps while none does. It lives while any
// holder does.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace palisade::client {

class SendSweeper {
 public:
  // Called on the sweeper's thread with the steady clock in ms; sends what is
  // due and returns whether anything is still held back.
  using Sweep = std::function<bool(uint64_t now_ms)>;

  explicit SendSweeper(std::chrono::milliseconds period);
  ~SendSweeper();
  SendSweeper(const SendSweeper&) = delete;
  SendSweeper& operator=(const SendSweeper&) = delete;

  uint64_t add(Sweep sweep);
  // Once it returns, `id`'s sweep is not running and never runs again.
  void remove(uint64_t id);
  // Something is held back: sweep within about two periods. Cheap, lock-free
  // unless the sweeper sleeps, and safe to call from a sweep.
  void wake();

 private:
  void run();

  const std::chrono::milliseconds period_;
  std::mutex sweeps_mu_;  // held while sweeps run
  std::map<uint64_t, Sweep> sweeps_;
  uint64_t next_id_ = 1;
  std::atomic<bool> armed_{false};
  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  bool stopping_ = false;  // guarded by wake_mu_
  std::thread thread_;
};

// The process's sweeper, with the period of CoordinatorOptions' lazy_send_ms.
std::shared_ptr<SendSweeper> shared_sweeper();

}  // namespace palisade::client
