#include "base/stop_signals.h"

#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>

namespace palisade {

int stop_signals_fd() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return signalfd(-1, &set, SFD_CLOEXEC);
}

}  // namespace palisade
