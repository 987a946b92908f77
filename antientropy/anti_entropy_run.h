// One anti-entropy run around its core, sans I/O: the requests' deadlines,
// the replies that end a run (a replica of another cluster, or keeping another
// replica set), the certificate to hand out then, the traffic counts, and the
// verdict at the end. run_anti_entropy drives it over ZeroMQ sockets; the
// simulator (tests/sim) over its simulated network, so that both run the same
// rules.
//
// Thread safety: none; one thread owns it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "antientropy/anti_entropy_core.h"

namespace palisade::client {

struct AntiEntropyRunSetup {
  AntiEntropyConfig core;
  // The replicas compared, then the targets: the core's indexes.
  std::vector<std::string> endpoints;
  // A request unanswered this long: its replica drops out of the run. It is
  // sent again a third and two thirds of the way there: a ZeroMQ connection
  // that breaks loses what it held (and the simulated network loses messages).
  uint64_t timeout_ms = 5000;
  std::string config_certificate{};  // the run's replica set's (core.config), for those that lack it
};

class AntiEntropyRun {
 public:
  explicit AntiEntropyRun(AntiEntropyRunSetup setup);

  // Install requests' ids: far from the core's, which count up from 1.
  static constexpr uint64_t kFirstInstallId = uint64_t{1} << 62;

  // What to send now. The driver encodes each request (and may seal it), then
  // says whether it left: sent() with its size, or unsent().
  std::vector<AntiEntropySend> take_sends() { return core_.take_sends(); }
  void sent(const AntiEntropySend& send, size_t bytes, uint64_t now_ms);
  void unsent(const AntiEntropySend& send) { core_.on_unreachable(send.replica, send.request.id); }
  // A request sent again (from expire()) left as `bytes` bytes.
  void resent(size_t bytes);
  // A frame `replica` sent back, `now_ms`.
  void on_frame(int replica, std::string_view frame);
  // Requests past their deadline: their replicas drop out of the run. Returns
  // the requests to send again now (the driver encodes each and calls resent()).
  std::vector<AntiEntropySend> expire(uint64_t now_ms);
  // When expire() must run next; nullopt when nothing is in flight.
  std::optional<uint64_t> next_deadline_ms() const;
  // Nothing is left to do, or a reply ended the run.
  bool done() const { return !ended_.is_ok() || core_.done(); }

  // After a run that a replica keeping another replica set ended: install
  // requests that give every replica compared (not the targets) the
  // certificate that lets the next run through (the newer set's, or the
  // run's own). Empty otherwise.
  std::vector<AntiEntropySend> installs() const;
  // The newer set's certificate a replica handed back (stale_config); empty
  // when none did.
  const std::string& newer_config() const { return newer_config_; }

  // The report so far (the driver may add to it).
  AntiEntropyReport& report() { return core_.report(); }
  // At the end: the report, or why the run failed. WrongCluster: a replica is
  // of another cluster. StaleConfig: a replica keeps a newer set
  // (newer_config()). UnknownConfig: one keeps an older set (installs() gives
  // it the run's). A target that keeps another set than target_config: that
  // code, saying so. Unavailable: fewer than two replicas compared answered.
  Result<AntiEntropyReport> finish();

 private:
  struct InFlight {
    AntiEntropySend send;  // kept to send again
    uint64_t resend_ms;
    uint64_t deadline_ms;
    bool tree;  // a tree or leaf request: its traffic is the tree's
  };
  void end(Status why, std::string install);
  uint64_t resend_after() const { return std::max<uint64_t>(1, setup_.timeout_ms / 3); }

  AntiEntropyRunSetup setup_;
  AntiEntropyCore core_;
  std::map<uint64_t, InFlight> in_flight_;  // by request id
  Status ended_ = Status::ok();
  std::string install_;  // the certificate installs() gives
  std::string newer_config_;
};

// Whether a repairer seals a request (auth/repair_seal.h): copies and commits,
// which change what replicas hold.
bool changes_versions(const wire::ReplicaRequestBody& body);

}  // namespace palisade::client
