#include "transport/zap_handler.h"

#include <vector>

namespace palisade::transport {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr size_t kCurveKeyBytes = 32;

std::string z85_of(const zmq::message_t& key) {
  char out[41] = {};
  if (key.size() != kCurveKeyBytes ||
      zmq_z85_encode(out, static_cast<const uint8_t*>(key.data()), key.size()) == nullptr) {
    return "";
  }
  return out;
}

}  // namespace

ZapHandler::ZapHandler(zmq::context_t& ctx, AllowList allowed)
    : socket_(ctx, zmq::socket_type::rep), allowed_(std::move(allowed)) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.bind(kZapEndpoint);
  thread_ = std::thread([this] { run(); });
}

ZapHandler::~ZapHandler() {
  stopping_ = true;
  thread_.join();
}

void ZapHandler::set_allowed(AllowList allowed) {
  std::lock_guard lock(mu_);
  allowed_ = std::move(allowed);
}

void ZapHandler::run() {
  while (!stopping_) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    try {
      // A short poll, so that the destructor is heard without a second socket.
      if (zmq::poll(&item, 1, std::chrono::milliseconds(50)) > 0) answer(socket_);
    } catch (const zmq::error_t&) {
      // The context is closing, or a request could not be answered: ZeroMQ
      // then refuses that handshake itself.
      if (stopping_) return;
    }
  }
}

// A request: version, request id, domain, address, routing id, mechanism, and
// the mechanism's credentials (CURVE: the client's 32-byte public key).
void ZapHandler::answer(zmq::socket_t& socket) {
  std::vector<zmq::message_t> request;
  do {
    request.emplace_back();
    if (!socket.recv(request.back(), zmq::recv_flags::dontwait)) return;
  } while (request.back().more());
  const bool well_formed = request.size() >= 7 && request[0].to_string_view() == "1.0";
  std::string identity;
  if (well_formed && request[5].to_string_view() == "CURVE" && request[2].to_string_view() == kZapDomain) {
    const std::string key = z85_of(request[6]);
    std::lock_guard lock(mu_);
    if (auto it = allowed_.find(key); it != allowed_.end()) identity = it->second;
  }
  (identity.empty() ? rejected_ : accepted_).fetch_add(1, std::memory_order_relaxed);
  // The reply must echo the version and request id, even to a request it refuses.
  const std::string_view request_id = request.size() >= 2 ? request[1].to_string_view() : std::string_view();
  socket.send(zmq::buffer(std::string_view("1.0")), zmq::send_flags::sndmore);
  socket.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
  socket.send(zmq::buffer(std::string_view(identity.empty() ? "400" : "200")), zmq::send_flags::sndmore);
  socket.send(zmq::buffer(std::string_view(identity.empty() ? "unknown key" : "OK")), zmq::send_flags::sndmore);
  socket.send(zmq::buffer(identity), zmq::send_flags::sndmore);
  socket.send(zmq::message_t(), zmq::send_flags::none);  // no metadata
}

}  // namespace palisade::transport
