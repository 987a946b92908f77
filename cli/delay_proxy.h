// A TCP proxy on loopback that can hold traffic back: the demo's "delayed
// request". Clients connect to endpoint(); each connection is forwarded to the
// target. While held, the proxy reads nothing, so what clients send waits in
// the kernel's buffers (ZeroMQ over TCP cannot tell a held link from a slow
// one); release() lets it all through, in order.
//
// Thread safety: hold() and release() from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace palisade::cli {

class DelayProxy {
 public:
  // Forwards to `target` ("tcp://127.0.0.1:PORT"); listens on a free loopback port.
  explicit DelayProxy(const std::string& target);
  ~DelayProxy();
  DelayProxy(const DelayProxy&) = delete;
  DelayProxy& operator=(const DelayProxy&) = delete;

  // "tcp://127.0.0.1:PORT": where clients connect.
  const std::string& endpoint() const { return endpoint_; }
  // Both return once the proxy acts on it: nothing sent after hold() returns
  // gets through until release().
  void hold() { set_held(true); }
  void release() { set_held(false); }

 private:
  void run();
  void set_held(bool held);

  int listen_fd_ = -1;
  int target_port_ = 0;
  std::string endpoint_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool held_ = false;     // what hold() and release() asked for
  bool applied_ = false;  // what the proxy thread acts on now
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace palisade::cli
