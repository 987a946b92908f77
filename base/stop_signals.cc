#include "base/stop_signals.h"

#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <initializer_list>

namespace palisade {
namespace {

int blocked_signals_fd(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

}  // namespace

int stop_signals_fd() { return blocked_signals_fd({SIGTERM, SIGINT}); }

int reload_signal_fd() { return blocked_signals_fd({SIGHUP}); }

void drain_signal_fd(int fd) {
  signalfd_siginfo info{};
  while (::read(fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
  }
}

}  // namespace palisade
