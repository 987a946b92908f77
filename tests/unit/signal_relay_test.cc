// Which stop signals `palisade lock` passes on to COMMAND (cli/signal_relay.h).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include "cli/signal_relay.h"

namespace palisade::cli {
namespace {

siginfo_t signal_info(int sig, int code) {
  siginfo_t info{};
  info.si_signo = sig;
  info.si_code = code;
  return info;
}

sigset_t none() {
  sigset_t set;
  sigemptyset(&set);
  return set;
}

// COMMAND in our process group: this process stands in for it.
const pid_t kInOurGroup = getpid();

TEST_CASE("signal relay: a kill() is passed on, a terminal's signal to our group is not", "[cli]") {
  sigset_t missed = none();
  for (int sig : {SIGINT, SIGTERM}) {
    INFO(sig);
    CHECK(pass_on(signal_info(sig, SI_USER), kInOurGroup, missed));
    CHECK_FALSE(pass_on(signal_info(sig, SI_KERNEL), kInOurGroup, missed));
  }
  CHECK_FALSE(pass_on(signal_info(SIGUSR1, SI_USER), kInOurGroup, missed));  // not a stop signal
}

TEST_CASE("signal relay: a terminal's signal pending when COMMAND was forked is passed on once", "[cli]") {
  sigset_t missed = none();
  sigaddset(&missed, SIGINT);
  CHECK(pass_on(signal_info(SIGINT, SI_KERNEL), kInOurGroup, missed));
  CHECK(sigismember(&missed, SIGINT) == 0);
  // A later Ctrl-C reached COMMAND itself.
  CHECK_FALSE(pass_on(signal_info(SIGINT, SI_KERNEL), kInOurGroup, missed));
}

TEST_CASE("signal relay: a terminal's signal is passed on once COMMAND left our group", "[cli]") {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    setpgid(0, 0);
    pause();
    _exit(0);
  }
  // Our own setpgid too, so the test does not depend on the child running first.
  REQUIRE(setpgid(child, child) == 0);
  sigset_t missed = none();
  CHECK(pass_on(signal_info(SIGINT, SI_KERNEL), child, missed));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace palisade::cli
