// The run around the anti-entropy core (antientropy/anti_entropy_run.h):
// requests sent again, replicas that drop out at the deadline, and the
// replies that end a run, with what it then asks to install.
#include <catch2/catch.hpp>

#include <string>
#include <variant>
#include <vector>

#include "antientropy/anti_entropy_run.h"

namespace palisade {
namespace {

using client::AntiEntropyRun;
using client::AntiEntropySend;

// Two replicas compared and a target; a request unanswered 300 ms drops its replica.
AntiEntropyRun make_run() {
  return AntiEntropyRun({.core = {.replicas = 2, .targets = 1, .cluster_size = 2, .write_quorum = 2, .config = 4},
                         .endpoints = {"tcp://a", "tcp://b", "tcp://new"},
                         .timeout_ms = 300,
                         .config_certificate = "certificate-4"});
}

// Sends what the run wants sent at `now_ms`; returns it.
std::vector<AntiEntropySend> send_all(AntiEntropyRun& run, uint64_t now_ms) {
  std::vector<AntiEntropySend> sent = run.take_sends();
  for (const AntiEntropySend& s : sent) run.sent(s, 10, now_ms);
  return sent;
}

std::string reply_frame(uint64_t id, Status status, std::string config = "") {
  wire::ReplicaReply reply = wire::error_reply(id, std::move(status));
  reply.config = std::move(config);
  return wire::encode_reply(reply);
}

TEST_CASE("anti-entropy run: an unanswered request goes again twice, then its replica drops out", "[antientropy]") {
  AntiEntropyRun run = make_run();
  const std::vector<AntiEntropySend> first = send_all(run, 0);
  REQUIRE(first.size() == 3);  // the tree's root, asked of every replica
  CHECK(run.next_deadline_ms() == 100);
  CHECK(run.expire(99).empty());
  std::vector<AntiEntropySend> again = run.expire(100);
  REQUIRE(again.size() == 3);
  CHECK(again[0].request.id == first[0].request.id);  // the same request: a replica takes a duplicate as one
  for (size_t i = 0; i < again.size(); ++i) run.resent(10);
  CHECK(run.report().messages == 6);
  CHECK(run.expire(200).size() == 3);
  CHECK(!run.done());
  CHECK(run.expire(300).empty());
  CHECK(run.done());
  auto finished = run.finish();
  REQUIRE(!finished.is_ok());
  CHECK(finished.code() == Code::kUnavailable);
  CHECK(run.report().unreachable == std::vector<std::string>{"tcp://a", "tcp://b", "tcp://new"});
}

TEST_CASE("anti-entropy run: a replica keeping a newer set ends the run, and every replica compared gets it",
          "[antientropy]") {
  AntiEntropyRun run = make_run();
  const std::vector<AntiEntropySend> sent = send_all(run, 0);
  run.on_frame(1, reply_frame(sent[1].request.id, Status(Code::kStaleConfig, "keeps version 6"), "certificate-6"));
  CHECK(run.done());
  CHECK(run.newer_config() == "certificate-6");
  auto finished = run.finish();
  CHECK(finished.code() == Code::kStaleConfig);
  std::vector<AntiEntropySend> installs = run.installs();
  REQUIRE(installs.size() == 2);  // not the target
  for (int r = 0; r < 2; ++r) {
    CHECK(installs[r].replica == r);
    auto* install = std::get_if<wire::InstallConfigRequest>(&installs[r].request.body);
    REQUIRE(install != nullptr);
    CHECK(install->certificate == "certificate-6");
    CHECK(installs[r].request.id >= AntiEntropyRun::kFirstInstallId);
  }
  // Nothing after the end changes it, and nothing goes again.
  run.on_frame(0, reply_frame(sent[0].request.id, Status(Code::kUnknownConfig, "keeps version 3")));
  CHECK(run.finish().code() == Code::kStaleConfig);
}

TEST_CASE("anti-entropy run: a replica keeping an older set is given the run's certificate", "[antientropy]") {
  AntiEntropyRun run = make_run();
  const std::vector<AntiEntropySend> sent = send_all(run, 0);
  run.on_frame(0, reply_frame(sent[0].request.id, Status(Code::kUnknownConfig, "keeps version 3")));
  CHECK(run.finish().code() == Code::kUnknownConfig);
  CHECK(run.newer_config().empty());
  REQUIRE(run.installs().size() == 2);
  CHECK(std::get<wire::InstallConfigRequest>(run.installs()[1].request.body).certificate == "certificate-4");
}

TEST_CASE("anti-entropy run: a target keeping another set, or another cluster's replica, ends it with nothing to "
          "install",
          "[antientropy]") {
  AntiEntropyRun target = make_run();
  std::vector<AntiEntropySend> sent = send_all(target, 0);
  target.on_frame(2, reply_frame(sent[2].request.id, Status(Code::kStaleConfig, "keeps version 5"), "c5"));
  auto finished = target.finish();
  CHECK(finished.code() == Code::kStaleConfig);
  CHECK(finished.status().message().find("the target tcp://new") != std::string::npos);
  CHECK(target.installs().empty());

  AntiEntropyRun foreign = make_run();
  sent = send_all(foreign, 0);
  foreign.on_frame(0, reply_frame(sent[0].request.id, Status(Code::kWrongCluster, "cluster 77")));
  CHECK(foreign.finish().code() == Code::kWrongCluster);
  CHECK(foreign.installs().empty());
}

TEST_CASE("anti-entropy run: an answered request goes no more, and a reply from another replica is not its answer",
          "[antientropy]") {
  AntiEntropyRun run = make_run();
  const std::vector<AntiEntropySend> sent = send_all(run, 0);
  // Replica b answers a's request id: not an answer.
  run.on_frame(1, reply_frame(sent[0].request.id, Status(Code::kStorageError, "disk")));
  run.on_frame(0, reply_frame(sent[0].request.id, Status(Code::kStorageError, "disk")));
  const std::vector<AntiEntropySend> again = run.expire(100);
  REQUIRE(again.size() == 2);
  CHECK(again[0].replica == 1);
  CHECK(again[1].replica == 2);
  CHECK(run.report().bytes_received > 0);
}

}  // namespace
}  // namespace palisade
