#include "cli/signal_relay.h"

#include <unistd.h>

#include <atomic>
#include <initializer_list>
#include <thread>

namespace palisade::cli {

sigset_t stop_signals() {
  sigset_t stops;
  sigemptyset(&stops);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
  return stops;
}

void until_stop_signal(const std::function<void(std::stop_token)>& body) {
  std::stop_source stop;
  std::atomic<bool> running{true};
  std::thread stopper([&] {
    const sigset_t stops = stop_signals();
    const timespec tick{0, 100'000'000};
    while (running && sigtimedwait(&stops, nullptr, &tick) <= 0) {
    }
    stop.request_stop();
  });
  body(stop.get_token());
  running = false;
  stopper.join();
}

bool pass_on(const siginfo_t& info, pid_t command, sigset_t& missed_by_command) {
  const sigset_t stops = stop_signals();
  if (sigismember(&stops, info.si_signo) != 1) return false;
  if (sigismember(&missed_by_command, info.si_signo) == 1) {
    sigdelset(&missed_by_command, info.si_signo);
    return true;
  }
  if (info.si_code != SI_KERNEL || getpgid(command) != getpgrp()) return true;
  // A terminal's hangup signals its session's leader alone.
  return info.si_signo == SIGHUP && getsid(0) == getpid();
}

}  // namespace palisade::cli
