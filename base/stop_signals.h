// SIGTERM and SIGINT as a descriptor a daemon's loop polls, so that a stop
// happens between batches, never in the middle of one.
#pragma once

namespace palisade {

// Blocks SIGTERM and SIGINT in the calling thread (call it before starting any
// thread, so that every thread inherits the mask) and returns a signalfd that
// becomes readable when one arrives; -1 with errno set on failure.
int stop_signals_fd();

}  // namespace palisade
