#include "client/polling.h"

#include <condition_variable>
#include <mutex>

namespace palisade::client {

Status poll_every(std::chrono::milliseconds every, std::stop_token stop, const std::function<Status()>& round,
                  const std::function<void(const Status&)>& on_status) {
  std::mutex mutex;
  std::condition_variable_any asleep;
  Code last = Code::kOk;
  while (!stop.stop_requested()) {
    const Status s = round();
    if (on_status && s.code() != last) on_status(s);
    last = s.code();
    if (!s.is_ok() && s.code() != Code::kUnavailable && s.code() != Code::kTimeout) return s;
    std::unique_lock<std::mutex> lock(mutex);
    asleep.wait_for(lock, stop, every, [] { return false; });
  }
  return Status::ok();
}

}  // namespace palisade::client
