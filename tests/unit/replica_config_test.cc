// A replica and the replica set it keeps (replica/replica_config.h, docs/design.md
// "The replica set"): certificates installed only when they verify and are
// newer, kept on the store, and each request held to the version it names.
#include <catch2/catch.hpp>

#include <span>
#include <string>
#include <vector>

#include "auth/cluster_key.h"
#include "auth/config_certificate.h"
#include "base/hybrid_clock.h"
#include "replica/handler.h"
#include "replica/memory_store.h"
#include "tests/support/forwarding_store.h"
#include "tests/support/replica_requests.h"

namespace palisade {
namespace {

using test::fence_req;
using test::read_req;
using test::write_req;
using wire::ReplicaPhase;
using wire::ReplicaReply;
using wire::ReplicaRequest;
using wire::ReplicaSet;

ClusterKey key_of(char digit) { return ClusterKey::from_hex(std::string(64, digit)).value(); }

const SequencerSigner kGroup(key_of('1'), "local-1");

ReplicaSet set_of(uint64_t version, ReplicaPhase phase = ReplicaPhase::kServing) {
  return {.version = version,
          .phase = phase,
          .replicas = {{1, "tcp://127.0.0.1:7201"}, {2, "tcp://127.0.0.1:7202"}, {3, "tcp://127.0.0.1:7203"}},
          .write_quorum = 2,
          .read_quorum = 2};
}

std::string certificate(uint64_t version, ReplicaPhase phase = ReplicaPhase::kServing,
                        const SequencerSigner& signer = kGroup) {
  return sign_config_certificate(signer, set_of(version, phase));
}

ReplicaRequest install(std::string text) {
  ReplicaRequest r;
  r.id = 1;
  r.body = wire::InstallConfigRequest{std::move(text)};
  return r;
}

ReplicaRequest naming(ReplicaRequest r, uint64_t config) {
  r.config = config;
  return r;
}

ReplicaRequest copy_req() {
  ReplicaRequest r;
  r.body = wire::CopyManyRequest{};
  return r;
}

constexpr uint64_t kNowMs = 1'700'000'000'000;
const FencedTimestamp kTs{0, hlc::make(kNowMs, 0)};

// A handler that checks sequencers and certificates against kGroup's key, on
// `store` (which outlives it).
struct Replica {
  explicit Replica(replica::ReplicaStore& s) : store(s) {}
  replica::ReplicaStore& store;
  ManualClock physical{kNowMs};
  HybridClock clock{physical};
  replica::ReplicaHandler handler{
      store, clock,
      replica::ReplicaAuth{.replica_key = key_of('1'), .group = "local-1", .write_quorum = 2, .replica_id = 7}};

  ReplicaReply call(ReplicaRequest r) {
    auto replies = handler.handle_batch(std::span<const ReplicaRequest>(&r, 1));
    REQUIRE(replies.size() == 1);
    return replies[0];
  }
};

TEST_CASE("replica config: none kept, requests that name none are served as before", "[replica][config]") {
  replica::MemoryStore store;
  Replica r(store);
  CHECK(r.call(write_req("k", "v", kTs)).status.is_ok());
  CHECK(r.call(read_req("k")).versions.size() == 1);
  // A sender with a certificate the replica lacks is told to send it.
  {
    ReplicaReply reply = r.call(naming(write_req("k", "w", kTs), 2));
    CHECK(reply.status.code() == Code::kUnknownConfig);
    CHECK_THAT(reply.status.message(), Catch::Contains("has none") && Catch::Contains("install_config"));
  }
}

TEST_CASE("replica config: a newer certificate is kept, an older one changes nothing", "[replica][config]") {
  replica::MemoryStore store;
  Replica r(store);
  ReplicaReply installed = r.call(install(certificate(2)));
  REQUIRE(installed.status.is_ok());
  CHECK(installed.config == certificate(2));
  CHECK(store.config_certificate().value() == certificate(2));

  ReplicaReply older = r.call(install(certificate(1)));
  CHECK(older.status.is_ok());
  CHECK(older.config == certificate(2));  // the one kept, which the sender may take
  CHECK(store.config_certificate().value() == certificate(2));

  CHECK(r.call(install(certificate(3))).config == certificate(3));
  CHECK(store.config_certificate().value() == certificate(3));
}

TEST_CASE("replica config: version 0, a cluster file's list, is never kept", "[replica][config]") {
  replica::MemoryStore store;
  Replica r(store);
  ReplicaReply file_list = r.call(install(certificate(0)));
  CHECK(file_list.status.is_ok());
  CHECK(file_list.config.empty());
  CHECK(store.config_certificate().value().empty());
  CHECK(r.call(write_req("k", "v", kTs)).status.is_ok());  // served as with none kept
}

TEST_CASE("replica config: forged, altered and foreign certificates are refused and change nothing",
          "[replica][config]") {
  replica::MemoryStore store;
  Replica r(store);
  REQUIRE(r.call(install(certificate(2))).status.is_ok());
  const SequencerSigner other(key_of('2'), "local-1");
  ReplicaReply foreign = r.call(install(certificate(5, ReplicaPhase::kServing, other)));
  CHECK(foreign.status.code() == Code::kBadRequest);
  CHECK_THAT(foreign.status.message(), Catch::Contains("signature"));
  std::string altered = certificate(5);
  altered[10] = altered[10] == 'A' ? 'B' : 'A';
  CHECK(r.call(install(altered)).status.code() == Code::kBadRequest);
  CHECK(r.call(install("pcc1.not a certificate")).status.code() == Code::kBadRequest);
  CHECK(store.config_certificate().value() == certificate(2));
  CHECK(r.call(naming(read_req("k"), 2)).status.is_ok());
}

TEST_CASE("replica config: a request naming an older version is refused with the certificate", "[replica][config]") {
  replica::MemoryStore store;
  Replica r(store);
  REQUIRE(r.call(install(certificate(4))).status.is_ok());
  for (uint64_t named : {0, 3}) {
    for (const ReplicaRequest& req : {write_req("k", "v", kTs), read_req("k"), fence_req("L", 0), copy_req()}) {
      ReplicaReply reply = r.call(naming(req, named));
      INFO("a " << wire::request_type(req.body) << " naming version " << named);
      CHECK(reply.status.code() == Code::kStaleConfig);
      CHECK(reply.config == certificate(4));
      CHECK_THAT(reply.status.message(), Catch::Contains("version 4"));
    }
  }
  CHECK(r.call(naming(read_req("k"), 4)).versions.empty());  // the refused write stored nothing
  CHECK(r.call(naming(write_req("k", "v", kTs), 4)).status.is_ok());
  CHECK(r.call(naming(write_req("k", "v", kTs), 5)).status.code() == Code::kUnknownConfig);
  // Ping, stats and install_config are served whatever they name.
  CHECK(r.call(test::ping_req()).status.is_ok());
  ReplicaRequest stats;
  stats.body = wire::StatsRequest{};
  CHECK(r.call(stats).status.is_ok());
}

TEST_CASE(
    "replica config: a paused set refuses writes and fences (fenced reads too), and serves reads and a fill's copies",
    "[replica][config]") {
  replica::MemoryStore store;
  Replica r(store);
  REQUIRE(r.call(install(certificate(1))).status.is_ok());
  REQUIRE(r.call(naming(write_req("k", "v", kTs), 1)).status.is_ok());
  REQUIRE(r.call(install(certificate(2, ReplicaPhase::kPaused))).status.is_ok());
  for (const ReplicaRequest& req : {write_req("k", "w", kTs), fence_req("L", 0), test::fenced_read_req("k", "L", 1)}) {
    ReplicaReply reply = r.call(naming(req, 2));
    INFO(wire::request_type(req.body));
    CHECK(reply.status.code() == Code::kUnavailable);
    CHECK_THAT(reply.status.message(), Catch::Contains("paused"));
  }
  ReplicaReply read = r.call(naming(read_req("k"), 2));
  REQUIRE(read.status.is_ok());
  REQUIRE(read.versions.size() == 1);
  CHECK(read.versions[0].value == "v");
  // A paused fill gives the replicas that stay the versions of those that
  // leave (a removal): its copies pass the pause.
  ReplicaRequest copy = naming(copy_req(), 2);
  const FencedTimestamp later{0, hlc::make(kNowMs + 1, 0)};
  copy.body = wire::CopyManyRequest{{{.key = "k", .version = {later, "", wire::VersionState::kPending, false, "c"}}}};
  ReplicaReply copied = r.call(copy);
  REQUIRE(copied.status.is_ok());
  CHECK(copied.refused == 0);
  read = r.call(naming(read_req("k"), 2));
  REQUIRE(read.versions.size() == 1);  // committed: the older one goes
  CHECK(read.versions[0].value == "c");
  ReplicaRequest stats;
  stats.body = wire::StatsRequest{};
  ReplicaReply paused = r.call(stats);  // what `palisade status` shows
  REQUIRE(paused.stats);
  CHECK(paused.stats->config_version == 2);
  CHECK(paused.stats->config_paused);
  // The next version serves again.
  REQUIRE(r.call(install(certificate(3))).status.is_ok());
  CHECK(r.call(naming(write_req("k", "w", {0, hlc::make(kNowMs + 2, 0)}), 3)).status.is_ok());
}

// Version `version` serving replicas whose receipts carry `receipt_ids` (0: not known).
std::string certificate_of_receipts(uint64_t version, std::vector<uint64_t> receipt_ids) {
  ReplicaSet set = set_of(version);
  for (size_t i = 0; i < set.replicas.size(); ++i) set.replicas[i].receipt_id = receipt_ids.at(i);
  return sign_config_certificate(kGroup, set);
}

TEST_CASE("replica config: a set that does not list the replica's receipt id removes it", "[replica][config]") {
  replica::MemoryStore store;
  Replica r(store);  // receipt id 7
  ReplicaRequest stats;
  stats.body = wire::StatsRequest{};
  CHECK(r.call(stats).stats->receipt_id == 7);  // what a replacement records
  REQUIRE(r.call(install(certificate_of_receipts(1, {5, 7, 9}))).status.is_ok());
  CHECK(r.call(naming(write_req("k", "v", kTs), 1)).status.is_ok());
  // A record that does not know every receipt id cannot say the replica is not one of them.
  REQUIRE(r.call(install(certificate_of_receipts(2, {5, 0, 9}))).status.is_ok());
  CHECK(r.call(naming(read_req("k"), 2)).status.is_ok());
  const std::string removed = certificate_of_receipts(3, {5, 8, 9});
  REQUIRE(r.call(install(removed)).status.is_ok());
  for (uint64_t named : {1, 3}) {
    for (const ReplicaRequest& req : {write_req("k", "w", kTs), read_req("k"), fence_req("L", 0), copy_req()}) {
      ReplicaReply reply = r.call(naming(req, named));
      INFO("a " << wire::request_type(req.body) << " naming version " << named);
      CHECK(reply.status.code() == Code::kStaleConfig);
      CHECK(reply.config == removed);  // the sender learns the set without it
    }
  }
  CHECK_THAT(r.call(naming(read_req("k"), 3)).status.message(), Catch::Contains("removed"));
  CHECK(r.call(test::ping_req()).status.is_ok());
  CHECK(r.call(stats).stats->config_version == 3);
  // It keeps its data: listed again (a set that names it), it serves what it held.
  REQUIRE(r.call(install(certificate_of_receipts(4, {5, 7, 9}))).status.is_ok());
  CHECK(r.call(naming(read_req("k"), 4)).versions.size() == 1);
}

TEST_CASE("replica config: a restarted replica keeps its certificate", "[replica][config]") {
  replica::MemoryStore store;
  {
    Replica r(store);
    REQUIRE(r.call(install(certificate(2))).status.is_ok());
  }
  Replica again(store);
  ReplicaReply reply = again.call(write_req("k", "v", kTs));
  CHECK(reply.status.code() == Code::kStaleConfig);
  CHECK(reply.config == certificate(2));
}

TEST_CASE("replica config: its observer hears of the kept set at once and of each newer one", "[replica][config]") {
  replica::MemoryStore store;
  std::vector<uint64_t> heard;
  auto observer = [&heard](const ReplicaSet& set, const std::string& text) {
    CHECK(text == certificate(set.version, set.phase));
    heard.push_back(set.version);
  };
  {
    Replica r(store);
    r.handler.observe_config(observer);
    CHECK(heard.empty());  // none kept: nothing to tell
    REQUIRE(r.call(install(certificate(2))).status.is_ok());
    REQUIRE(r.call(install(certificate(1))).status.is_ok());  // older: no change
    REQUIRE(r.call(install(certificate(2))).status.is_ok());  // equal: no change
    CHECK(r.call(install(certificate(4, ReplicaPhase::kServing, SequencerSigner(key_of('2'), "local-1"))))
              .status.code() == Code::kBadRequest);
    CHECK(heard == std::vector<uint64_t>{2});
  }
  Replica again(store);
  again.handler.observe_config(observer);  // the kept one, at once
  REQUIRE(again.call(install(certificate(3, ReplicaPhase::kPaused))).status.is_ok());
  CHECK(heard == std::vector<uint64_t>{2, 2, 3});
}

// A disk whose kept certificate was damaged, or cannot be read, or saved.
struct DamagedConfigStore : test::ForwardingStore {
  Result<std::string> config_certificate() override {
    if (unreadable) return Status(Code::kStorageError, "read failed");
    return inner.config_certificate();
  }
  Status save_config_certificate(std::string_view text) override {
    if (full) return Status(Code::kStorageError, "disk full");
    return inner.save_config_certificate(text);
  }
  bool unreadable = false;
  bool full = false;
};

TEST_CASE("replica config: a damaged kept certificate refuses requests until a valid one comes", "[replica][config]") {
  DamagedConfigStore store;
  std::string damaged = certificate(2);
  damaged[damaged.size() - 3] = damaged[damaged.size() - 3] == 'A' ? 'B' : 'A';
  REQUIRE(store.inner.save_config_certificate(damaged).is_ok());
  Replica r(store);
  ReplicaReply refused = r.call(naming(read_req("k"), 2));
  CHECK(refused.status.code() == Code::kStorageError);
  CHECK_THAT(refused.status.message(), Catch::Contains("damaged") && Catch::Contains("install_config"));
  CHECK(r.call(test::ping_req()).status.is_ok());
  // A cluster file's list does not mend it: it says nothing of the set kept.
  REQUIRE(r.call(install(certificate(0))).status.is_ok());
  CHECK(r.call(naming(read_req("k"), 0)).status.code() == Code::kStorageError);
  // Any valid certificate does, even an older version than the damaged one's.
  REQUIRE(r.call(install(certificate(1))).status.is_ok());
  CHECK(r.call(naming(read_req("k"), 1)).status.is_ok());

  store.unreadable = true;
  Replica unreadable(store);
  CHECK(unreadable.call(naming(read_req("k"), 1)).status.code() == Code::kStorageError);
}

TEST_CASE("replica config: a certificate that cannot be saved is not taken", "[replica][config]") {
  DamagedConfigStore store;
  Replica r(store);
  REQUIRE(r.call(install(certificate(1))).status.is_ok());
  store.full = true;
  ReplicaReply reply = r.call(install(certificate(2, ReplicaPhase::kPaused)));
  CHECK(reply.status.code() == Code::kStorageError);
  CHECK(reply.config == certificate(1));
  CHECK(r.call(naming(write_req("k", "v", kTs), 1)).status.is_ok());  // still version 1, serving
}

}  // namespace
}  // namespace palisade
