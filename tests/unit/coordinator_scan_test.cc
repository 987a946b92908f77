// Prefix reads (Coordinator::start_scan, docs/consistency.md "Prefix reads")
// on tests/unit/coordinator_cluster.h's fake cluster: a scan must return what
// a get of each key returns, by the same rules, and page through the prefix.
#include "tests/unit/coordinator_cluster.h"

namespace palisade {
namespace {

// What gets of `keys` return, as a scan would list them (found keys only).
std::vector<std::pair<std::string, std::string>> by_gets(Cluster& c, const std::vector<std::string>& keys) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& key : keys) {
    const ReadResult r = c.read_result(c.get(key));
    REQUIRE(r.status.is_ok());
    if (r.found) out.emplace_back(key, r.value);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> pairs(const ScanResult& r) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const KeyValue& e : r.entries) out.emplace_back(e.key, e.value);
  return out;
}

TEST_CASE("a scan returns the prefix's keys in byte order, as gets of them do, without deleted keys",
          "[coordinator][scan]") {
  Cluster c;
  c.seed_all(committed(write_req("a/2", "two", ts(0, -30))));
  c.seed_all(committed(write_req("a/1", "one", ts(0, -20))));
  c.seed_all(committed(delete_req("a/3", ts(0, -10))));
  c.seed_all(committed(write_req("a", "not under a/", ts(0, -10))));
  c.seed_all(committed(write_req("b/1", "other prefix", ts(0, -10))));
  const size_t before = c.log().size();
  const ScanResult r = c.scan_result(c.scan("a/"));
  REQUIRE(r.status.is_ok());
  CHECK(pairs(r) == std::vector<std::pair<std::string, std::string>>{{"a/1", "one"}, {"a/2", "two"}});
  CHECK(r.entries[0].ts == ts(0, -20));
  CHECK(r.next.empty());
  REQUIRE(r.deleted.size() == 1);  // a/3's tombstone, for a copy of the prefix to drop
  CHECK(r.deleted[0].key == "a/3");
  CHECK(r.deleted[0].ts == ts(0, -10));
  // Replicas that agree need one listing from R of them, and nothing else.
  CHECK(c.sent_to<wire::ScanRequest>(before).size() == 2);
  CHECK(c.sent<wire::ReadRequest>(before).empty());
  CHECK(pairs(r) == by_gets(c, {"a/1", "a/2", "a/3"}));
  // The empty prefix is every key.
  CHECK(c.scan_result(c.scan("")).entries.size() == 4);
}

TEST_CASE("a scan pages through the prefix: limit, next, and after", "[coordinator][scan]") {
  Cluster c;
  for (const char* key : {"p/a", "p/b", "p/c", "p/d", "p/e"}) c.seed_all(committed(write_req(key, key, ts(0, -10))));
  std::vector<std::string> seen;
  std::string after;
  for (int pages = 1;; ++pages) {
    REQUIRE(pages <= 3);
    const ScanResult r = c.scan_result(c.scan("p/", after, 2));
    REQUIRE(r.status.is_ok());
    CHECK(r.entries.size() <= 2);
    for (const KeyValue& e : r.entries) seen.push_back(e.key);
    if (r.next.empty()) break;
    CHECK(r.next == r.entries.back().key);
    after = r.next;
  }
  CHECK(seen == std::vector<std::string>{"p/a", "p/b", "p/c", "p/d", "p/e"});
  CHECK(c.scan_result(c.scan("p/", "p/c")).entries.size() == 2);
  CHECK(c.scan_result(c.scan("p/", "p/e")).entries.empty());
  CHECK(c.scan_result(c.scan("p/", "", 0)).status.code() == Code::kBadRequest);
}

TEST_CASE("a page ends at the first replica's last key when replicas list different keys", "[coordinator][scan]") {
  Cluster c;
  // Acknowledged writes that one replica missed (W = 2): k/2 is not on
  // replica 2, k/4 not on replica 0. With a limit of 2, replica 0 lists k/1
  // and k/2, replica 1 k/1 and k/2, replica 2 k/1 and k/3, and each says
  // more follow: whichever two list, the page can hold keys up to k/2 only.
  for (const char* key : {"k/1", "k/3"}) c.seed_all(committed(write_req(key, key, ts(0, -10))));
  for (int i : {0, 1}) c.seed(i, committed(write_req("k/2", "k/2", ts(0, -10))));
  for (int i : {1, 2}) c.seed(i, committed(write_req("k/4", "k/4", ts(0, -10))));
  const size_t before = c.log().size();
  const ScanResult r = c.scan_result(c.scan("k/", "", 2));
  REQUIRE(r.status.is_ok());
  CHECK(pairs(r) == std::vector<std::pair<std::string, std::string>>{{"k/1", "k/1"}, {"k/2", "k/2"}});
  CHECK(r.next == "k/2");
  // Where a listing replica lacked k/2, the scan repaired it, as a get does.
  for (const auto& [replica, w] : c.sent<wire::WriteRequest>(before)) CHECK((w.key == "k/2" && w.committed));
  const auto listed = c.sent_to<wire::ScanRequest>(before);
  if (std::find(listed.begin(), listed.end(), 2) != listed.end()) CHECK(c.replica(2).stored("k/2"));
  const ScanResult rest = c.scan_result(c.scan("k/", r.next));
  CHECK(pairs(rest) == std::vector<std::pair<std::string, std::string>>{{"k/3", "k/3"}, {"k/4", "k/4"}});
  CHECK(pairs(rest) == by_gets(c, {"k/3", "k/4"}));
}

TEST_CASE("a scan decides a key with a write in flight as a get does, asking more replicas for that key only",
          "[coordinator][scan]") {
  Cluster c;
  c.seed_all(committed(write_req("w/x", "old", ts(0, -100))));
  c.seed_all(committed(write_req("w/y", "y", ts(0, -100))));
  // A put of w/x reaches replica 0 only (the others' copies are held): one
  // pending copy, which may yet reach W.
  c.hold = [](const Send& s) { return is<wire::WriteRequest>(s) && s.replica != 0; };
  const OpId put = c.put("w/x", "new", {});
  c.hold = nullptr;
  REQUIRE(c.replica(0).stored("w/x")->value == "new");
  const size_t before = c.log().size();
  // Replicas 0 and 1 list (the first scan's id starts at a replica of its own:
  // the listing goes to two of them, and the third is asked about w/x alone).
  const ScanResult r = c.scan_result(c.scan("w/"));
  REQUIRE(r.status.is_ok());
  const auto reads = c.sent<wire::ReadRequest>(before);
  REQUIRE_FALSE(reads.empty());
  for (const auto& [replica, read] : reads) CHECK(read.key == "w/x");
  // The held copies never arrived: one copy of "new", which could not have
  // been acknowledged, so the scan returns "old", as a get does now.
  REQUIRE(r.entries.size() == 2);
  CHECK(r.entries[0].value == c.read_result(c.get("w/x")).value);
  CHECK(r.entries[1].value == "y");
  c.release();
  CHECK(c.write_result(put).status.is_ok());
  CHECK(c.scan_result(c.scan("w/")).entries[0].value == "new");
}

TEST_CASE("a scan hedges past a replica it cannot reach, and is unavailable when R cannot list",
          "[coordinator][scan]") {
  Cluster c;
  c.seed_all(committed(write_req("h/1", "one", ts(0, -10))));
  c.unreachable = {0};
  ScanResult r = c.scan_result(c.scan("h/"));
  REQUIRE(r.status.is_ok());
  CHECK(r.entries.size() == 1);
  c.unreachable = {0, 1};
  const OpId op = c.scan("h/");
  CHECK_FALSE(c.done(op));
  c.advance_to(kTimeout + 1);
  r = c.scan_result(op);
  CHECK(r.status.code() == Code::kUnavailable);
  CHECK_THAT(r.status.message(), Catch::Contains("prefix 'h/'"));
  CHECK(r.entries.empty());
}

TEST_CASE("a scan returns a key whose record is corrupt on one replica from the others", "[coordinator][scan]") {
  Cluster c;
  c.seed_all(committed(write_req("c/1", "one", ts(0, -10))));
  c.seed_all(committed(write_req("c/2", "two", ts(0, -10))));
  REQUIRE(c.replica(1).store.corrupt("c/1"));
  // Replicas 1 and 2 list (the scan's id picks them); replica 1's damage
  // counts as not heard from, so c/1's read asks replica 0 at once.
  const size_t before = c.log().size();
  const ScanResult r = c.scan_result(c.scan("c/"));
  CHECK(c.sent_to<wire::ReadRequest>(before) == std::vector<int>{0});
  REQUIRE(r.status.is_ok());
  CHECK(pairs(r) == std::vector<std::pair<std::string, std::string>>{{"c/1", "one"}, {"c/2", "two"}});
}

TEST_CASE("a scan answer outside what was asked is no listing: the scan lists from the others", "[coordinator][scan]") {
  Cluster c;
  c.seed_all(committed(write_req("s/1", "one", ts(0, -20))));
  c.seed_all(committed(write_req("s/2", "two", ts(0, -10))));
  wire::ScannedKey stray = c.replica(0).call({0, wire::ScanRequest{"s/", "", 10}}).scanned.at(0);
  stray.key = "t/1";
  using Break = std::function<void(ReplicaReply&)>;
  uint64_t elapsed = 0;
  for (const auto& spoiling : std::vector<std::pair<std::string, Break>>{
           {"a key outside the prefix", [&](ReplicaReply& r) { r.scanned.push_back(stray); }},
           {"keys out of order", [](ReplicaReply& r) { std::swap(r.scanned[0], r.scanned[1]); }},
           {"a key not after `after`", [](ReplicaReply& r) { r.scanned.insert(r.scanned.begin(), r.scanned[0]); }},
           {"more after nothing",
            [](ReplicaReply& r) {
              r.scanned.clear();
              r.more = true;
            }},
           {"receipts that are not one per version", [](ReplicaReply& r) { r.receipts.resize(1); }}}) {
    INFO(spoiling.first);
    // Replica 0 spoils every listing it gives; its reads stay true.
    c.tamper = [&](int replica, ReplicaReply& r) {
      if (replica == 0 && r.scanned.size() == 2) spoiling.second(r);
    };
    // With replica 2 down, replicas 0 and 1 cannot make R listings.
    c.unreachable = {2};
    const OpId op = c.scan("s/");
    c.advance_to(elapsed += kTimeout + 1);
    CHECK(c.scan_result(op).status.code() == Code::kUnavailable);
    c.unreachable.clear();
    const ScanResult r = c.scan_result(c.scan("s/"));
    REQUIRE(r.status.is_ok());
    CHECK(pairs(r) == std::vector<std::pair<std::string, std::string>>{{"s/1", "one"}, {"s/2", "two"}});
  }
}

}  // namespace
}  // namespace palisade
