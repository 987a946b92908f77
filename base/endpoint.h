// Whether a string is an endpoint ZeroMQ can connect to, checked before any
// socket sees it: zmq throws on a malformed one, and a user should read which
// endpoint is wrong rather than a crash or "cannot connect".
#pragma once

#include <string>
#include <string_view>

namespace palisade {

// Empty when `endpoint` is tcp://HOST:PORT (PORT 1..65535), ipc://PATH or
// inproc://NAME; otherwise what is wrong with it, naming it.
std::string endpoint_problem(std::string_view endpoint);

}  // namespace palisade
