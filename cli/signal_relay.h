// Which of SIGINT, SIGTERM and SIGHUP `palisade lock` passes on to COMMAND.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <stop_token>

namespace palisade::cli {

// The signals passed on to COMMAND, or that cancel the wait before it runs.
sigset_t stop_signals();

// Runs `body` with a stop token that SIGINT, SIGTERM or SIGHUP requests: the
// way a command that watches (elect --observe, watch) is ended. The signals
// must be blocked in every thread (before any starts), so that only this
// takes them.
void until_stop_signal(const std::function<void(std::stop_token)>& body);

// Whether to pass the stop signal `info` describes on to `command` (the
// leader of COMMAND's process group). Not one COMMAND got straight from the
// terminal: Ctrl-C and the terminal's other keys signal the foreground process
// group, which is COMMAND's when `palisade lock` handed it the terminal (or
// ours, should COMMAND have joined it). A kill() is always passed on: it
// reached us alone, COMMAND being in a group of its own. `missed_by_command`
// holds the signals that were pending when COMMAND was forked (a child does
// not inherit pending signals): each is passed on once, however it was sent.
bool pass_on(const siginfo_t& info, pid_t command, sigset_t& missed_by_command);

}  // namespace palisade::cli
