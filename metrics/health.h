// What /healthz and /readyz answer (http_server.h). The daemon's loop marks
// each turn and says whether it can serve; the HTTP thread reads.
//
// Healthy: the process is up and its loop turned within `stall` (the loops
// turn at least once a second, idle or not). Ready: the daemon said it can
// serve now (a lockd knows a master; a replica's store takes writes).
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace palisade::metrics {

class Health {
 public:
  explicit Health(std::chrono::milliseconds stall = std::chrono::seconds(10));

  // The loop turned now.
  void turned();
  // Whether the daemon can serve now, and if not, why (one line for people).
  void set_ready(bool ready, std::string_view why_not = {});

  struct Answer {
    bool ok = false;
    std::string text;  // "ok", or why not
  };
  Answer healthz() const;
  Answer readyz() const;

 private:
  static int64_t now_ms();

  const int64_t stall_ms_;
  std::atomic<int64_t> last_turn_ms_;
  mutable std::mutex mutex_;
  bool ready_ = false;
  std::string why_not_ = "starting";
};

}  // namespace palisade::metrics
