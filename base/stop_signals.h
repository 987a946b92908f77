// The signals a daemon acts on, as descriptors its loop polls, so that a stop
// or a reload happens between batches, never in the middle of one.
#pragma once

namespace palisade {

// Blocks SIGTERM and SIGINT in the calling thread (call it before starting any
// thread, so that every thread inherits the mask) and returns a signalfd that
// becomes readable when one arrives; -1 with errno set on failure.
int stop_signals_fd();
// The same for SIGHUP: the daemon reloads its cluster file's identities.
int reload_signal_fd();
// Reads what a signalfd holds, so that it polls quiet until the next signal.
void drain_signal_fd(int fd);

}  // namespace palisade
