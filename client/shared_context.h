// One ZeroMQ context for all of a process's stores and lock clients, as
// ZeroMQ advises: its I/O thread serves every socket, so many clients in one
// process share one I/O thread (fewer threads and wake-ups) instead of each
// bringing its own. It lives while any holder does.
#pragma once

#include <memory>

#include <zmq.hpp>

namespace palisade::client {

std::shared_ptr<zmq::context_t> shared_context();

}  // namespace palisade::client
